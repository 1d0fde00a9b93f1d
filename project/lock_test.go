package project

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A zombie or a process gone is not alive: the lock it held is on its way
// out, which RunningSettled waits for.
func TestProcessAlive(t *testing.T) {
	if !processAlive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !processAlive(pid) {
		t.Fatal("a sleeping child is not alive")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	// Not reaped yet: a zombie once the kernel has killed it.
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatal("a killed child is still alive")
		}
		time.Sleep(10 * time.Millisecond) // the kernel kills it
	}
	cmd.Wait()
	if processAlive(pid) || processAlive(0) {
		t.Fatal("a reaped child or pid 0 is alive")
	}
}

// With no daemon, nothing runs.
func TestRunningSettledWithoutADaemon(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	if running, _ := RunningSettled(l); running {
		t.Fatal("running with no lock")
	}
}

// A pid that cannot be recorded in the lock file is an error, and the lock
// is not kept. The write fails for real: a child process (this test binary
// again) takes the lock under a file size limit of 0, so that writing the
// pid fails with EFBIG.
func TestAcquireLockRefusesAnUnrecordedPid(t *testing.T) {
	if dir := os.Getenv("BATTY_TEST_LOCK_DIR"); dir != "" {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 0, Max: 0}); err != nil {
			t.Fatal(err)
		}
		l := Layout{Dir: dir}
		f, err := AcquireLock(l)
		if err == nil {
			ReleaseLock(f)
			t.Fatal("lock taken with no pid recorded")
		}
		if !strings.Contains(err.Error(), "record the pid in lock "+l.LockFile()) || !errors.Is(err, syscall.EFBIG) {
			t.Fatalf("error = %v", err)
		}
		// Released: a second try fails the same way, not as already running.
		if _, err := AcquireLock(l); err == nil || errors.Is(err, ErrAlreadyRunning) {
			t.Fatalf("second try: %v", err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAcquireLockRefusesAnUnrecordedPid$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BATTY_TEST_LOCK_DIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// The pid is recorded where `batty stop` reads it.
func TestAcquireLockRecordsThePid(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	if err := os.WriteFile(l.LockFile(), []byte("123456789 stale\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := AcquireLock(l)
	if err != nil {
		t.Fatal(err)
	}
	defer ReleaseLock(f)
	if got := readPID(l); got != os.Getpid() {
		t.Fatalf("recorded pid %d, want %d", got, os.Getpid())
	}
	if b, _ := os.ReadFile(l.LockFile()); string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Fatalf("lock file %q", b)
	}
}
