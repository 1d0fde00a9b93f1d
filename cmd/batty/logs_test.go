package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeLines writes lines "<prefix> 1" ... "<prefix> n", each ending in a
// newline, to path.
func writeLines(t *testing.T, path, prefix string, n int) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s %d\n", prefix, i)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// appendTo appends s to path, creating it if needed.
func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLogsLastLines(t *testing.T) {
	dir, l := writeTeam(t)
	path := l.Transcript("engineer-1")
	writeLines(t, path, "line", 120)

	out, errOut, code := runBattyIn(t, dir, nil, "", "logs", "-n", "3", "engineer-1")
	if code != 0 || out != "line 118\nline 119\nline 120\n" {
		t.Fatalf("exit %d\nstdout: %q\nstderr: %s", code, out, errOut)
	}
	out, _, code = runBattyIn(t, dir, nil, "", "logs", "engineer-1")
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); code != 0 || len(lines) != 50 || lines[0] != "line 71" {
		t.Fatalf("default: exit %d, %d lines starting %q", code, len(lines), lines[0])
	}
	// --team names the team file; a last line without a newline counts.
	appendTo(t, path, "partial")
	out, _, code = runBattyIn(t, t.TempDir(), nil, "", "logs", "--team", filepath.Join(dir, "team.yaml"), "-n", "2", "engineer-1")
	if code != 0 || out != "line 120\npartial" {
		t.Fatalf("--team: exit %d, output %q", code, out)
	}
	out, _, code = runBattyIn(t, dir, nil, "", "logs", "-n", "500", "engineer-1")
	if code != 0 || !strings.HasPrefix(out, "line 1\nline 2\n") {
		t.Fatalf("-n beyond the file: exit %d, output starts %q", code, out[:min(len(out), 40)])
	}
}

// TestLogsCleansWhatItPrints: the transcript's directory may be written by
// the agents it records, so `batty logs` cleans what it prints whatever
// --color says: its colours are kept (or stripped), an OSC 52 (clipboard),
// an OSC 0 (title), a screen clear, a CR and a bidirectional control never
// reach the terminal.
func TestLogsCleansWhatItPrints(t *testing.T) {
	dir, l := writeTeam(t)
	path := l.Transcript("engineer-1")
	writeLines(t, path, "line", 1)
	appendTo(t, path, "\x1b[2m12:00:00\x1b[0m \x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07ok\x1b]0;pwned\x07\x1b[2J over\rwrite \u202eevil\x08\n")
	for _, tc := range []struct{ color, want string }{
		{"always", "line 1\n\x1b[2m12:00:00\x1b[0m ok over\nwrite \\u202eevil\\x08\n"},
		{"never", "line 1\n12:00:00 ok over\nwrite \\u202eevil\\x08\n"},
	} {
		out, errOut, code := runBattyIn(t, dir, nil, "", "logs", "--color", tc.color, "engineer-1")
		if code != 0 || out != tc.want {
			t.Errorf("--color %s: exit %d\nstdout: %q\nwant:   %q\nstderr: %s", tc.color, code, out, tc.want, errOut)
		}
	}
}

func TestLogsErrors(t *testing.T) {
	dir, l := writeTeam(t)
	out, errOut, code := runBattyIn(t, dir, nil, "", "logs", "manager")
	if code != 0 || out != "" || !strings.Contains(errOut, "no transcript for manager yet") || !strings.Contains(errOut, l.Transcript("manager")) {
		t.Fatalf("no transcript: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	_, errOut, code = runBattyIn(t, dir, nil, "", "logs", "engineer")
	if code != 1 || !strings.Contains(errOut, `unknown agent "engineer"`) || !strings.Contains(errOut, "engineer-1, engineer-2") {
		t.Fatalf("unknown agent: exit %d, stderr %s", code, errOut)
	}
	for _, args := range [][]string{{"logs"}, {"logs", "a", "b"}, {"logs", "-n", "-1", "manager"}} {
		if _, errOut, code := runBattyIn(t, dir, nil, "", args...); code != 2 || !strings.Contains(errOut, "Usage: batty logs") {
			t.Errorf("%q: exit %d, want 2; stderr %s", args, code, errOut)
		}
	}
}

// follower is a running `batty logs -f` whose output is read line by line.
type follower struct {
	cmd    *exec.Cmd
	stdout chan string
	stderr chan string
}

// startFollow starts `batty logs -f` in dir with args. The safety-net
// rescan is set to an hour so that only file system events can wake it.
func startFollow(t *testing.T, dir string, args ...string) *follower {
	t.Helper()
	cmd := battyCommand(t, dir, nil, append([]string{"logs", "-f", "--rescan", "1h"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	f := &follower{cmd: cmd, stdout: make(chan string, 1000), stderr: make(chan string, 100)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pump := func(r io.Reader, ch chan<- string) {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}
	go pump(stdout, f.stdout)
	go pump(stderr, f.stderr)
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return f
}

// waitFor reads lines from ch until one equals want; it fails after a
// deadline, or if a line of unexpected arrives first.
func waitFor(t *testing.T, ch <-chan string, want string, unexpected ...string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	var seen []string
	for {
		select {
		case line, ok := <-ch:
			if !ok {
				t.Fatalf("output ended before %q; got %q", want, seen)
			}
			if line == want {
				return
			}
			seen = append(seen, line)
			for _, u := range unexpected {
				if line == u {
					t.Fatalf("got %q while waiting for %q", line, want)
				}
			}
		case <-deadline:
			t.Fatalf("no line %q within the deadline; got %q", want, seen)
		}
	}
}

// waitContains reads lines from ch until one contains want.
func waitContains(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-ch:
			if !ok {
				t.Fatalf("output ended before a line containing %q", want)
			}
			if strings.Contains(line, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no line containing %q within the deadline", want)
		}
	}
}

// stop sends SIGTERM and expects a clean exit with status 0.
func (f *follower) stop(t *testing.T) {
	t.Helper()
	if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range f.stdout {
	}
	for range f.stderr {
	}
	if err := f.cmd.Wait(); err != nil {
		t.Fatalf("logs -f after SIGTERM: %v", err)
	}
}

func TestLogsFollowAppendsAndRotation(t *testing.T) {
	dir, l := writeTeam(t)
	path := l.Transcript("engineer-2")
	writeLines(t, path, "old", 10)

	f := startFollow(t, dir, "-n", "2", "engineer-2")
	waitFor(t, f.stdout, "old 9", "old 8")
	waitFor(t, f.stdout, "old 10")

	appendTo(t, path, "appended 1\nappended 2\n")
	waitFor(t, f.stdout, "appended 1")
	waitFor(t, f.stdout, "appended 2")

	// Rotation as ptylog does it: the old file gets its last line, is renamed
	// to .1, and a new file is created.
	appendTo(t, path, "last before rotation\n")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "rotated 1\n")
	waitFor(t, f.stdout, "last before rotation")
	waitFor(t, f.stdout, "rotated 1")
	appendTo(t, path, "rotated 2\n")
	waitFor(t, f.stdout, "rotated 2")

	// Two rotations before the follower may look: every file is printed,
	// in order.
	appendTo(t, path, "rotated 3\n")
	for _, g := range []string{"a", "b"} {
		if err := os.Rename(path+".1", path+".2"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path, path+".1"); err != nil {
			t.Fatal(err)
		}
		appendTo(t, path, "generation "+g+"\n")
	}
	waitFor(t, f.stdout, "rotated 3")
	waitFor(t, f.stdout, "generation a")
	waitFor(t, f.stdout, "generation b")

	// Removed and recreated later.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "recreated\n")
	waitFor(t, f.stdout, "recreated")
	f.stop(t)
}

func TestLogsFollowWaitsForTheTranscript(t *testing.T) {
	dir, l := writeTeam(t)
	// Not even .batty exists yet.
	f := startFollow(t, dir, "manager")
	waitContains(t, f.stderr, "no transcript for manager yet; waiting")

	if err := os.MkdirAll(l.LogsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	appendTo(t, l.Transcript("engineer-1"), "not mine\n")
	appendTo(t, l.Transcript("manager"), "hello from manager\n")
	waitFor(t, f.stdout, "hello from manager", "not mine")
	appendTo(t, l.Transcript("manager"), "and more\n")
	waitFor(t, f.stdout, "and more")
	f.stop(t)
}

// A transcript that is a symbolic link is refused, not followed: an agent
// cannot make `batty logs` print a file of its choosing.
func TestLogsRefusesASymlinkedTranscript(t *testing.T) {
	dir, l := writeTeam(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("private line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.LogsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, l.Transcript("manager")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBattyIn(t, dir, nil, "", "logs", "manager")
	if code == 0 || strings.Contains(out, "private") || !strings.Contains(errOut, l.Transcript("manager")+" is a symbolic link") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
