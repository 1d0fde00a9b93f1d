package control

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/battyhq/batty/project"
)

// TestMain lets this test binary be a daemon that holds the project's lock
// (BATTY_TEST_ROLE=lockholder).
func TestMain(m *testing.M) {
	if os.Getenv("BATTY_TEST_ROLE") == "lockholder" {
		os.Exit(lockHolderMain(os.Args[1]))
	}
	os.Exit(m.Run())
}

// lockHolderMain plays a daemon that exits slowly: it takes the project's
// lock, says "locked", and when its stdin closes releases the lock and
// lingers before exiting, as a daemon does while its process is torn down.
func lockHolderMain(dir string) int {
	l := project.Layout{Dir: dir}
	lock, err := project.AcquireLock(l)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	project.ReleaseLock(lock)
	time.Sleep(300 * time.Millisecond)
	return 0
}

func TestStopWaitsForTheDaemonProcessToExit(t *testing.T) {
	l := project.Layout{Dir: t.TempDir()}
	self, _ := os.Executable()
	cmd := exec.Command(self, l.Dir)
	cmd.Env = append(os.Environ(), "BATTY_TEST_ROLE=lockholder")
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("lock holder said %q", line)
	}
	if running, pid := project.Running(l); !running || pid != cmd.Process.Pid {
		t.Fatalf("Running = %v, %d; want true, %d", running, pid, cmd.Process.Pid)
	}
	d := pinDaemon(l)
	if d.pid != cmd.Process.Pid || d.pidfd == nil {
		t.Fatalf("pinDaemon = %+v", d)
	}
	defer d.close()
	stdin.Close()
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet (this test is its parent), so it must be a zombie.
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z' {
		t.Fatalf("wait returned while the daemon process still ran: %s", stat)
	}
}
