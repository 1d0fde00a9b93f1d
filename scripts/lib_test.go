// Package scripts_test checks the shell functions of scripts/lib.sh that
// scripts/test.sh and scripts/demo.sh use, with a PATH of the test's own.
package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// shims is a directory for PATH holding only the tools named: links to the
// real ones, and scripts written by the test.
type shims struct {
	t   *testing.T
	dir string
}

func newShims(t *testing.T, real ...string) *shims {
	t.Helper()
	s := &shims{t: t, dir: t.TempDir()}
	for _, name := range real {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("%s is not installed: %v", name, err)
		}
		if err := os.Symlink(p, filepath.Join(s.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// script writes the shell script name with body.
func (s *shims) script(name, body string) {
	s.t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, name), []byte("#!"+bash(s.t)+"\n"+body+"\n"), 0o700); err != nil {
		s.t.Fatal(err)
	}
}

// uid makes `id -u` print uid.
func (s *shims) uid(uid string) {
	s.script("id", `if [ "$1" = -u ]; then echo `+uid+`; else echo "id $*: not in this test" >&2; exit 1; fi`)
}

// aptGet writes an apt-get that logs its arguments to the returned file and
// exits with code; a failing one says what apt says without root.
func (s *shims) aptGet(code string) string {
	log := filepath.Join(s.t.TempDir(), "apt.log")
	s.script("apt-get", `echo "$*" >>`+log+`
if [ `+code+` != 0 ]; then echo "E: Could not open lock file /var/lib/apt/lists/lock - open (13: Permission denied)" >&2; fi
exit `+code)
	return log
}

func bash(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	return p
}

// run runs the shell code with PATH the shims alone, in scripts/.
func (s *shims) run(code string) (stdout, stderr string, exit int) {
	s.t.Helper()
	cmd := exec.Command(bash(s.t), "-c", code)
	cmd.Env = []string{"PATH=" + s.dir, "HOME=" + s.t.TempDir(), "BATTY_CODEX_CACHE=" + s.t.TempDir()}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return out.String(), errOut.String(), 0
}

func logged(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestNeedTmuxWithoutRootOrSudo: a user who cannot install is told what to
// install, and apt-get is never run (its lock error says nothing useful).
func TestNeedTmuxWithoutRootOrSudo(t *testing.T) {
	s := newShims(t)
	s.uid("1000")
	apt := s.aptGet("100")
	_, errOut, code := s.run(`. ./lib.sh; need_tmux test.sh`)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"test.sh: tmux is not installed", "not root, no sudo", "apt-get install tmux as root"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "lock") {
		t.Errorf("apt's lock error shown:\n%s", errOut)
	}
	if l := logged(t, apt); l != "" {
		t.Errorf("apt-get ran: %q", l)
	}
}

// TestNeedTmuxInstallsWithSudo: with sudo, tmux is installed through it.
func TestNeedTmuxInstallsWithSudo(t *testing.T) {
	s := newShims(t, "env")
	s.uid("1000")
	sudoLog := filepath.Join(t.TempDir(), "sudo.log")
	s.script("sudo", `echo "$*" >>`+sudoLog+`; exec "$@"`)
	apt := s.aptGet("0")
	if _, errOut, code := s.run(`. ./lib.sh; need_tmux test.sh`); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if l := logged(t, apt); !strings.Contains(l, "update") || !strings.Contains(l, "install -y -qq tmux") {
		t.Errorf("apt-get ran %q, want update and install of tmux", l)
	}
	if l := logged(t, sudoLog); strings.Count(l, "apt-get") != 2 {
		t.Errorf("sudo ran %q, want both apt-get runs", l)
	}
}

// TestNeedTmuxRootInstallFails: root whose install fails is told to
// install tmux itself.
func TestNeedTmuxRootInstallFails(t *testing.T) {
	s := newShims(t, "env")
	s.uid("0")
	s.aptGet("100")
	_, errOut, code := s.run(`. ./lib.sh; need_tmux test.sh`)
	if code != 1 || !strings.Contains(errOut, "could not install tmux with apt-get") || !strings.Contains(errOut, "run this again: apt-get install tmux") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

// TestTestScriptNamesWhatToInstall: scripts/test.sh run by a user without
// root, sudo, tmux and npm names both and runs nothing.
func TestTestScriptNamesWhatToInstall(t *testing.T) {
	s := newShims(t, "dirname")
	s.uid("1000")
	apt := s.aptGet("100")
	s.script("go", `echo "go $*"`)
	out, errOut, code := s.run(bash(t) + ` ./test.sh`)
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"npm is not installed", "tmux is not installed", "apt-get install tmux as root", "nothing was run"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(out, "==>") || logged(t, apt) != "" {
		t.Errorf("test.sh went on:\n%s", out)
	}
}

// TestProgressCountsMatchingLines: progress counts the lines matching its
// pattern; with_progress returns the command's status and prints its
// output when it fails.
func TestProgressCountsMatchingLines(t *testing.T) {
	s := newShims(t, "cat", "tee", "mktemp", "rm", "sh")
	out, errOut, code := s.run(`set -euo pipefail; . ./lib.sh
with_progress "fetching" ': 200 OK' printf '# get a\n# get a: 200 OK\n# get b\n# get b: 200 OK\n'
with_progress "building" '' printf 'p1\np2\np3\n'
with_progress "failing" '' sh -c 'echo boom; exit 3' || echo "status $?"`)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"==> fetching: 2\n", "==> building: 3\n", "status 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "failing failed (exit 3):\nboom") {
		t.Errorf("stderr lacks the failed command's output:\n%s", errOut)
	}
}

// TestNeedPkgCommandOfAnotherName: need_pkg looks for the command it is
// given, not the package's name, and installs the package when the
// command is missing.
func TestNeedPkgCommandOfAnotherName(t *testing.T) {
	s := newShims(t, "env")
	s.uid("0")
	apt := s.aptGet("0")
	s.script("sshd", "exit 0")
	if _, errOut, code := s.run(`. ./lib.sh; need_pkg test.sh openssh-server sshd`); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if l := logged(t, apt); l != "" {
		t.Fatalf("apt-get ran with sshd there: %q", l)
	}
	if _, errOut, code := s.run(`. ./lib.sh; need_pkg test.sh openssh-server /nonexistent/sshd`); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if l := logged(t, apt); !strings.Contains(l, "install -y -qq openssh-server") {
		t.Fatalf("apt-get ran %q, want an install of openssh-server", l)
	}
}
