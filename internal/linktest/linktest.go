// Package linktest holds the helpers of the tests that plant a symbolic
// link in the state directory, which agents can write, pointing at
// "outside" (a directory standing for the rest of the user's files, holding
// one file, victim), and check that nothing reaches outside.
package linktest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/atomicfile"
)

// PlantOutside makes "outside", a directory standing for the rest of the
// user's files, holding one file, victim, for a link to point at.
func PlantOutside(t *testing.T) (out, victim string) {
	t.Helper()
	out = t.TempDir()
	victim = filepath.Join(out, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return out, victim
}

// AssertOutsideUntouched fails the test unless outside still holds only
// victim, unchanged in content and mode.
func AssertOutsideUntouched(t *testing.T, out, victim string) {
	t.Helper()
	des, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	if len(names) != 1 {
		t.Errorf("written outside through a link: %s holds %v", out, names)
	}
	b, err := os.ReadFile(victim)
	if err != nil || string(b) != "precious\n" {
		t.Errorf("victim = %q, %v; want it unchanged", b, err)
	}
	if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("victim's mode changed: %v, %v", fi.Mode(), err)
	}
}

// Link plants a symbolic link at name pointing at target, creating the
// directories on the way.
func Link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// WantRefused fails the test unless err refuses the link at path and says
// how to fix it.
func WantRefused(t *testing.T, err error, path string) {
	t.Helper()
	if !errors.Is(err, atomicfile.ErrSymlink) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("err = %v; want the link %s refused with a fix", err, path)
	}
}
