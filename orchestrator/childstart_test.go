package orchestrator

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/project"
)

// A child the daemon starts for itself (a shared app-server) through
// childStarter outlives the thread that asked for it — a goroutine that
// locked its thread and ended, so the thread ended too — and dies with
// the daemon's process: SIGKILLed with it, though it ignores its stdin. The
// daemon is a child process (childstarter) here, killed with SIGKILL.
func TestChildStarterTiesTheChildToTheDaemon(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mark := t.TempDir()
	cmd := exec.Command(self, mark)
	cmd.Env = append(os.Environ(), "BATTY_TEST_ROLE=childstarter")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		lines <- l
	}()
	var pid int
	select {
	case l := <-lines:
		if pid, err = strconv.Atoi(strings.TrimSpace(l)); err != nil {
			t.Fatalf("childstarter said %q", l)
		}
	case <-time.After(waitLimit):
		t.Fatal("childstarter said nothing")
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !codextest.Alive(pid) {
		t.Fatalf("the child %d died with the thread that asked for it", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !codextest.WaitExit(pid, codextest.ExitGrace) {
		t.Fatalf("the child %d (%s) outlived its SIGKILLed daemon", pid, codextest.Cmdline(pid))
	}
}

// childStarterMain starts `sleep 300` (marked with stateDir) through the
// team's childStarter from a goroutine that locks its thread and ends
// locked, waits until that thread is gone, prints the sleep's pid, and
// waits for its stdin to end.
func childStarterMain(stateDir string) int {
	tp, _ := openTeamProcs(project.Layout{Dir: stateDir}, hclog.NewNullLogger(), true)
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	type started struct {
		tid int
		err error
	}
	var s started
	for s.tid == 0 {
		done := make(chan started, 1)
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == os.Getpid() {
				// The main thread, which the runtime never ends: try
				// another.
				runtime.UnlockOSThread()
				done <- started{}
				return
			}
			// Never unlocked: the thread ends with the goroutine.
			done <- started{unix.Gettid(), childStarter{tp: tp}.Start(cmd)}
		}()
		s = <-done
	}
	if s.err != nil {
		fmt.Fprintln(os.Stderr, s.err)
		return 1
	}
	task := fmt.Sprintf("/proc/self/task/%d", s.tid)
	for deadline := time.Now().Add(waitLimit); ; {
		if _, err := os.Stat(task); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "the locked thread did not end")
			return 1
		}
		time.Sleep(10 * time.Millisecond) // the runtime ends the thread on its own
	}
	fmt.Println(cmd.Process.Pid)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}
