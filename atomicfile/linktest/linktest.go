// Package linktest is the scaffolding of the tests that plant a symbolic
// link where batty writes and check that nothing is written, moved or
// removed through it: a directory standing for the rest of the user's
// files, holding one file, and the check that it is as it was. It imports
// nothing of batty, so any package's tests may use it (atomicfile's too).
package linktest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Content is what the victim file holds.
const Content = "precious\n"

// Outside returns a new directory (a t.TempDir) standing for a place
// outside the one under test, holding one file, victim: Content, mode 0644.
func Outside(t testing.TB) (dir, victim string) {
	t.Helper()
	dir = t.TempDir()
	victim = filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte(Content), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, victim
}

// AssertUntouched fails the test unless dir, made by Outside, still holds
// only victim, with its content and mode 0644.
func AssertUntouched(t testing.TB, dir, victim string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(des) != 1 || des[0].Name() != filepath.Base(victim) {
		var names []string
		for _, de := range des {
			names = append(names, de.Name())
		}
		t.Errorf("written outside through a link: %s holds %v", dir, names)
	}
	b, err := os.ReadFile(victim)
	if err != nil || string(b) != Content {
		t.Errorf("victim = %q, %v; want it unchanged", b, err)
	}
	if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("victim's mode changed: %v, %v", fi, err)
	}
}

// Symlink creates the symbolic link name to target, creating name's
// directory (0700) when missing.
func Symlink(t testing.TB, target, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// WantRefused fails the test unless err is sentinel (atomicfile.ErrSymlink,
// passed in so that this package imports nothing of batty), names path and
// says how to fix it.
func WantRefused(t testing.TB, err error, path string, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("err = %v; want the link %s refused with a fix", err, path)
	}
}
