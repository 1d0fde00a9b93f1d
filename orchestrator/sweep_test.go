package orchestrator

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/leftovers"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/reap"
)

// killTeamTogether runs p's team (one agent, solo) in a daemon process
// started with env, lets the fake codex's model detach a command
// (scenario:NAME:PIDFILE), then SIGKILLs the daemon and its shim so that
// neither can clean up: the daemon is stopped (SIGSTOP) first, the shim
// killed (its subreaper, the daemon, cannot act on that), then the daemon.
// The shim is not the one stopped: the daemon's death would orphan the
// stopped shim's process group, and the kernel wakes such a group with
// SIGHUP and SIGCONT, on which the shim shuts down and kills what its turn
// left (the test then failed now and then under load). It returns the
// detached process, pinned; it outlived both (no subreaper is left above
// it). Cleanup kills it, should the test not get it killed.
func killTeamTogether(t *testing.T, p *testProject, scenario string, env ...string) (int, *reap.Pidfd) {
	t.Helper()
	child := p.startChildDaemon(env...)
	pidFile := filepath.Join(t.TempDir(), "detached.pid")
	p.send("solo", "human", "scenario:"+scenario+":"+pidFile)
	detached := codextest.WaitPidFile(t, pidFile, waitLimit)
	pin, err := reap.OpenPidfd(detached)
	if err != nil {
		t.Fatalf("pin the detached command: %v", err)
	}
	t.Cleanup(func() { pin.Kill(); pin.Close() })

	st, err := control.Call(p.layout, control.Request{Op: control.OpStatus}, waitLimit)
	if err != nil || len(st.Status.Agents) != 1 || st.Status.Agents[0].ShimPID <= 0 {
		t.Fatalf("status %+v, %v", st.Status, err)
	}
	shimPin, err := reap.OpenPidfd(st.Status.Agents[0].ShimPID)
	if err != nil {
		t.Fatalf("pin the shim: %v", err)
	}
	defer shimPin.Close()
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, child.Process.Pid)
	if err := shimPin.Kill(); err != nil {
		t.Fatal(err)
	}
	if !shimPin.WaitExit(time.Now().Add(waitLimit)) {
		t.Fatal("the SIGKILLed shim did not exit")
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	if pin.WaitExit(time.Now()) {
		t.Fatal("the detached command died with the team: nothing is left to sweep")
	}
	return detached, pin
}

// waitStopped waits until process pid is stopped (state T).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if i := bytes.LastIndexByte(b, ')'); err == nil && i > 0 && i+2 < len(b) && b[i+2] == 'T' {
			return
		}
		time.Sleep(5 * time.Millisecond) // the kernel is stopping it
	}
	t.Fatalf("process %d did not stop", pid)
}

// The daemon and its shims SIGKILLed together leave the model's detached
// command to init; the next daemon finds it by the project's mark and kills
// it before its first shim starts (no cgroup here: the mark alone).
func TestTeamKilledTogetherLeavesNothingOnceRestarted(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	detached, pin := killTeamTogether(t, p, "detach", "BATTY_TEST_NOCGROUP=1")
	r := p.start(func(o *Options) { o.NoCgroup = true })
	// Killed and waited for before the daemon was ready.
	if !pin.WaitExit(time.Now()) {
		t.Fatalf("the detached command %d (%s) outlived the daemon's restart", detached, codextest.Cmdline(detached))
	}
	// The cut-off message is redelivered (and detaches anew, which the
	// daemon's stop kills: the cleanup checks).
	r.waitEvent(t, "warning about the leftovers", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWarning && strings.Contains(e.Detail, "an earlier run of the team left running")
	})
}

// batty stop finds no daemon, and kills what the dead team left.
func TestSweepLeftoversKillsWhatADeadTeamLeft(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	t.Cleanup(func() { assertNoProcesses(t, p.mark) })
	detached, pin := killTeamTogether(t, p, "detach", "BATTY_TEST_NOCGROUP=1")
	n, err := leftovers.Sweep(p.layout)
	if err != nil || n < 1 {
		t.Fatalf("leftovers.Sweep = %d, %v; want the detached command killed", n, err)
	}
	if !pin.WaitExit(time.Now()) {
		t.Fatalf("the detached command %d (%s) outlived the sweep", detached, codextest.Cmdline(detached))
	}
	if running, _ := project.Running(p.layout); running {
		t.Fatal("the sweep left the project locked")
	}
}

// A detached command that dropped the project's mark (env -i) is still
// caught where the team has a cgroup: the next daemon kills the cgroup the
// dead one left. Runs only where a cgroup v2 is writable.
func TestTeamCgroupCatchesWhatDroppedTheMark(t *testing.T) {
	probe, err := reap.OpenCgroup(fmt.Sprintf("batty-probe-%d-%d", os.Getpid(), time.Now().UnixNano()), true)
	if errors.Is(err, reap.ErrNoCgroup) {
		t.Skipf("no writable cgroup v2 here, the daemon uses the mark alone: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	probe.Remove()
	p := newProject(t, "  - name: solo\n")
	detached, pin := killTeamTogether(t, p, "detachbare")
	waitUnmarked(t, detached, p.layout.Dir)
	p.start(nil)
	if !pin.WaitExit(time.Now()) {
		t.Fatalf("the unmarked detached command %d (%s) outlived the daemon's restart", detached, codextest.Cmdline(detached))
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(probe.Dir()), leftovers.CgroupName(p.layout))); err != nil {
		t.Fatalf("the restarted daemon has no team cgroup: %v", err)
	}
}

// waitUnmarked waits until process pid no longer carries mark (it cleared
// its environment and exec'd).
func waitUnmarked(t *testing.T, pid int, mark string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if !reap.HasEnv(readEnviron(pid), reap.MarkEnv, mark) {
			return
		}
		time.Sleep(5 * time.Millisecond) // the shell is about to exec
	}
	t.Fatalf("process %d kept the mark", pid)
}

func readEnviron(pid int) []byte {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return b
}

// The sweep at start kills this project's marked leftovers only: another
// project's marked process, one marked with a longer path, and an unmarked
// one live on.
func TestStartSweepSparesOtherProjectsAndUnmarkedProcesses(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	other := filepath.Join(t.TempDir(), project.DirName)
	start := func(env ...string) *exec.Cmd {
		cmd := exec.Command("sleep", "300")
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	mine := start(reap.MarkEnv + "=" + p.layout.Dir)
	spared := map[string]*exec.Cmd{
		"another project's": start(reap.MarkEnv + "=" + other),
		"a longer path's":   start(reap.MarkEnv + "=" + p.layout.Dir + "2"),
		"an unmarked":       start(),
	}
	r := p.start(nil)
	if codextest.Alive(mine.Process.Pid) {
		t.Fatal("the project's leftover survived the daemon's start")
	}
	for what, c := range spared {
		if !codextest.Alive(c.Process.Pid) {
			t.Errorf("the daemon's start killed %s process", what)
		}
	}
	if st := r.finished(t, p.send("solo", "human", "hello")); st != "completed" {
		t.Fatalf("status %s", st)
	}
}

func TestIsStartError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("start shim x: %w", &fs.PathError{Op: "fork/exec", Path: "/x", Err: syscall.ENOSYS}), true},
		{&fs.PathError{Op: "fork/exec", Path: "/x", Err: syscall.EBUSY}, true},
		{fmt.Errorf("shim %q: %w", "a", errors.New("handshake: waiting for hello: EOF")), false},
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, false},
		{nil, false},
	} {
		if got := isStartError(c.err); got != c.want {
			t.Errorf("isStartError(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
