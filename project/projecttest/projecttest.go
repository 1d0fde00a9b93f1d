// Package projecttest keeps the tests' state directories out of the
// user's, and out of every directory an agent may write: a test binary's
// TestMain runs its tests with a directory of their own under the user's
// cache directory (not /tmp, which agents in Codex's workspace-write
// sandbox may write, so batty refuses a state directory or a program
// there), holding their state home and the programs their teams name.
package projecttest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/battyhq/batty/project"
)

// binary is this test binary's directory outside every agent's reach
// (made by Isolated) and the copy of the test binary in it.
var binary struct {
	dir  string // "" until Isolated runs
	once sync.Once
	exe  string
	err  error
}

// Isolated runs run (m.Run, or a wrapper of it) with a new directory of
// its own under os.UserCacheDir() (~/.cache/batty-test-*), where
// ProgramDir, Executable and Program put the programs the tests' teams
// name, and with $BATTY_STATE_HOME pointing at its state/ unless the
// variable is set already; it removes the directory afterwards and
// returns run's code. Processes the tests start inherit the variable.
// Call it from TestMain once, before any test runs.
func Isolated(run func() int) int {
	base, err := os.UserCacheDir()
	if err == nil {
		err = os.MkdirAll(base, 0o700)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "projecttest: no directory outside /tmp for the tests:", err)
		return 1
	}
	dir, err := os.MkdirTemp(base, "batty-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "projecttest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary.dir = dir
	if os.Getenv(project.EnvStateHome) == "" {
		if err := os.Setenv(project.EnvStateHome, filepath.Join(dir, "state")); err != nil {
			fmt.Fprintln(os.Stderr, "projecttest:", err)
			return 1
		}
	}
	return run()
}

// ProgramDir is the directory, outside /tmp and every test's project,
// where tests put the programs a team names (on_alert, codex.bin, a
// host's command): batty refuses one that an agent could replace. It
// lives as long as the test binary. Isolated must have run.
func ProgramDir(t testing.TB) string {
	t.Helper()
	if binary.dir == "" {
		t.Fatal("projecttest: ProgramDir needs projecttest.Isolated in TestMain")
	}
	dir := filepath.Join(binary.dir, "bin")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TempProgramDir is a new directory in ProgramDir for one test's
// programs, removed when the test ends: t.TempDir for the programs a team
// names.
func TempProgramDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp(ProgramDir(t), "t-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Executable is a copy of this test binary in ProgramDir, made once per
// test binary: the fake codex (or whatever the test binary acts as) for a
// team's codex.bin. go test builds the binary under /tmp, where agents may
// write, so batty would refuse the original.
func Executable(t testing.TB) string {
	t.Helper()
	dir := ProgramDir(t)
	binary.once.Do(func() {
		self, err := os.Executable()
		if err != nil {
			binary.err = err
			return
		}
		binary.exe = filepath.Join(dir, filepath.Base(self))
		binary.err = copyFile(self, binary.exe)
	})
	if binary.err != nil {
		t.Fatalf("projecttest: copy the test binary: %v", binary.err)
	}
	return binary.exe
}

// Program writes an executable script (body, starting with its #! line)
// into ProgramDir under a name of its own that starts with name, and
// returns its path; it is removed when the test ends.
func Program(t testing.TB, name, body string) string {
	t.Helper()
	f, err := os.CreateTemp(ProgramDir(t), strings.ReplaceAll(name, "/", "_")+"-*")
	if err != nil {
		t.Fatal(err)
	}
	path := f.Name()
	t.Cleanup(func() { os.Remove(path) })
	_, err = f.WriteString(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(path, 0o700)
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// copyFile copies the executable src to dst (mode 0700), a new file: a
// copy, not a link, so that nothing written to src reaches it.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o700)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
