package project

import (
	"os"
	"os/exec"
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
