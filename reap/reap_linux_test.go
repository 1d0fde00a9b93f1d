package reap

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An orphan handed to the subreaper is killed and reaped; a managed child
// that is still running is left to its owner.
func TestKillLeftoversKillsOrphansOnly(t *testing.T) {
	if err := BecomeSubreaper(); err != nil {
		t.Fatal(err)
	}
	r := New()
	// The shell detaches a sleep into its own session, prints its pid and
	// exits: the sleep is reparented to this process.
	sh := exec.Command("/bin/sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!")
	out, _ := sh.StdoutPipe()
	if err := r.Start(sh); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if err := sh.Wait(); err != nil {
		t.Fatal(err)
	}
	r.Release(sh.Process.Pid)
	orphan, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("shell said %q", line)
	}
	defer func() { // whatever happens, nothing stays
		if p, ok := readProc(orphan); ok && p.ppid == os.Getpid() && orphan > 0 {
			syscall.Kill(orphan, syscall.SIGKILL)
		}
	}()
	if p, ok := readProc(orphan); !ok || p.ppid != os.Getpid() || p.state == 'Z' {
		t.Fatalf("orphan %d: %+v %v, want a live child of this process", orphan, p, ok)
	}

	managed := exec.Command("sleep", "300")
	if err := r.Start(managed); err != nil {
		t.Fatal(err)
	}
	defer func() { managed.Process.Kill(); managed.Wait() }()

	n, err := r.KillLeftovers(5 * time.Second)
	if err != nil || n != 1 {
		t.Fatalf("KillLeftovers = %d, %v; want 1, nil", n, err)
	}
	if _, ok := readProc(orphan); ok {
		t.Fatalf("orphan %d still in /proc (killed but not reaped)", orphan)
	}
	if p, ok := readProc(managed.Process.Pid); !ok || p.state == 'Z' {
		t.Fatal("KillLeftovers killed a managed child")
	}
}

// Run reaps an orphan that exits by itself, also when a managed child's
// exit came just before (its SIGCHLD finds no zombie once the owner
// reaped it, and the orphan's own SIGCHLD follows).
func TestRunReapsAnOrphanThatExits(t *testing.T) {
	if err := BecomeSubreaper(); err != nil {
		t.Fatal(err)
	}
	r := New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// The orphan sleeps a moment in its own session, then exits.
	sh := exec.Command("/bin/sh", "-c", "setsid sleep 0.3 </dev/null >/dev/null 2>&1 & echo $!")
	out, _ := sh.StdoutPipe()
	if err := r.Start(sh); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if err := sh.Wait(); err != nil {
		t.Fatal(err)
	}
	r.Release(sh.Process.Pid)
	orphan, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("shell said %q", line)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, ok := readProc(orphan)
		if !ok || p.ppid != os.Getpid() {
			return // reaped (its pid may be someone else's by now)
		}
		if time.Now().After(deadline) {
			syscall.Kill(orphan, syscall.SIGKILL)
			t.Fatalf("orphan %d still in /proc (state %c): not reaped", orphan, p.state)
		}
		time.Sleep(10 * time.Millisecond) // /proc gives no event for a reap
	}
}
