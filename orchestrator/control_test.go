package orchestrator

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/leftovers"
	"github.com/battyhq/batty/offline"
	"github.com/battyhq/batty/project"
)

func call(t *testing.T, p *testProject, req control.Request) control.Response {
	t.Helper()
	resp, err := control.Call(p.layout, req, 30*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", req.Op, err)
	}
	return resp
}

func TestPauseHoldsDispatchAndResumeReleasesIt(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(inProcess)
	if call(t, p, control.Request{Op: control.OpResume}).Changed {
		t.Fatal("resume of a running gate reported a change")
	}
	if !call(t, p, control.Request{Op: control.OpPause, Reason: "lunch"}).Changed {
		t.Fatal("pause reported no change")
	}
	r.waitEvent(t, "pause", func(e eventlog.Event) bool { return e.Type == eventlog.EvPaused })
	if call(t, p, control.Request{Op: control.OpPause, Reason: "lunch"}).Changed {
		t.Fatal("pause of a paused gate reported a change")
	}
	id := p.send("manager", "human", "wait for it")
	st := call(t, p, control.Request{Op: control.OpStatus}).Status
	if !st.Dispatch.Paused || st.Dispatch.Reason != "lunch" {
		t.Fatalf("dispatch %+v", st.Dispatch)
	}
	// The message waits: give the daemon the chance to (wrongly) take it by
	// asking for status again after the inbox event was handled.
	r.d.rescan()
	if _, where, _ := p.box("manager").Get(id); where != "new" {
		t.Fatalf("paused daemon took the message (%s)", where)
	}
	if !call(t, p, control.Request{Op: control.OpResume}).Changed {
		t.Fatal("resume of a paused gate reported no change")
	}
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
}

func TestResetStartsAFreshThread(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(inProcess)
	r.finished(t, p.send("manager", "human", "first"))
	var before project.AgentState
	project.LoadJSON(p.layout, project.AgentStateName("manager"), &before)
	call(t, p, control.Request{Op: control.OpReset, Agent: "manager", Reason: "new topic"})
	var after project.AgentState
	project.LoadJSON(p.layout, project.AgentStateName("manager"), &after)
	if after.ThreadID != "" || len(after.ArchivedThreads) != 1 || after.ArchivedThreads[0].ID != before.ThreadID || after.ArchivedThreads[0].Reason != "new topic" {
		t.Fatalf("state after reset %+v (before %s)", after, before.ThreadID)
	}
	id := p.send("manager", "human", "second")
	r.finished(t, id)
	m, _, _ := p.box("manager").Get(id)
	if m.Outcome.ThreadID == "" || m.Outcome.ThreadID == before.ThreadID {
		t.Fatalf("second turn ran on thread %q (old %q)", m.Outcome.ThreadID, before.ThreadID)
	}
	if _, err := control.Call(p.layout, control.Request{Op: control.OpReset, Agent: "nobody"}, 10*time.Second); err == nil {
		t.Fatal("reset of an unknown agent succeeded")
	}
}

func TestWedgedShimIsKilledAndRespawned(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	r := p.start(func(o *Options) { o.PingInterval = 100 * time.Millisecond; o.PongTimeout = 300 * time.Millisecond })
	e := r.waitEvent(t, "shim start", func(e eventlog.Event) bool { return e.Type == eventlog.EvShimStarted })
	pid := payloadOf[eventlog.ShimStarted](e).PID
	if pid <= 0 {
		t.Fatalf("shim pid %v", pid)
	}
	syscall.Kill(pid, syscall.SIGSTOP) // alive but deaf
	r.waitEvent(t, "wedge alert", func(e eventlog.Event) bool { return e.Type == eventlog.EvWedged })
	r.waitEvent(t, "respawn", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvShimStarted && payloadOf[eventlog.ShimStarted](e).PID != pid
	})
	if st := r.finished(t, p.send("solo", "human", "still alive?")); st != "completed" {
		t.Fatalf("status %s", st)
	}
}

func TestCrashLoopMarksTheAgentFailed(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	r := p.start(func(o *Options) { o.ShimCommand = []string{"/bin/false"} })
	e := r.waitEvent(t, "agent failed alert", func(e eventlog.Event) bool { return e.Type == eventlog.EvAgentFailed && e.Agent == "solo" })
	if !strings.Contains(e.Detail, "5 crashes") {
		t.Fatalf("alert %q", e.Detail)
	}
	st := call(t, p, control.Request{Op: control.OpStatus}).Status
	if a := st.Agents[0]; a.State != agentFailed || !strings.Contains(a.LastError, "crashes") {
		t.Fatalf("agent %+v", a)
	}
}

func TestSecondDaemonIsRefused(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	p.start(nil)
	_, err := New(p.cfg, p.layout, Options{})
	if !errors.Is(err, project.ErrAlreadyRunning) || !strings.Contains(err.Error(), p.layout.Socket()) {
		t.Fatalf("second daemon: %v", err)
	}
	if running, pid := project.Running(p.layout); !running || pid != os.Getpid() {
		t.Fatalf("Running = %v, %d", running, pid)
	}
}

func TestOfflineCommands(t *testing.T) {
	p := newProject(t, fourAgents)
	if _, err := control.Call(p.layout, control.Request{Op: control.OpStatus}, time.Second); !errors.Is(err, control.ErrNotRunning) {
		t.Fatalf("call without daemon: %v", err)
	}
	if changed, err := offline.Pause(p.layout, true, "maintenance"); err != nil || !changed {
		t.Fatalf("offline pause: changed %v, %v", changed, err)
	}
	if changed, err := offline.Pause(p.layout, true, "again"); err != nil || changed {
		t.Fatalf("offline pause of a paused team: changed %v, %v", changed, err)
	}
	p.send("@eng", "human", "for any engineer")
	p.send("manager", "human", "for the manager")
	st, err := offline.Status(p.cfg, p.layout)
	if err != nil || !st.Dispatch.Paused || st.Dispatch.Reason != "maintenance" || len(st.Agents) != 4 || st.Agents[0].State != agentStopped {
		t.Fatalf("offline status %+v %v", st, err)
	}
	if st.Queues["eng"] != 1 || st.Agents[1].Name != "manager" || st.Agents[1].Backlog != 1 {
		t.Fatalf("offline backlog: queues %v, agents %+v", st.Queues, st.Agents)
	}
	if changed, err := offline.Pause(p.layout, false, ""); err != nil || !changed {
		t.Fatalf("offline resume: changed %v, %v", changed, err)
	}
	if changed, err := offline.Pause(p.layout, false, ""); err != nil || changed {
		t.Fatalf("offline resume of a running gate: changed %v, %v", changed, err)
	}
	if err := offline.Reset(p.cfg, p.layout, "nobody", ""); err == nil {
		t.Fatal("offline reset of an unknown agent succeeded")
	}
}

// A command run right after the daemon was killed finds the lock still
// held for a moment, while the kernel tears the daemon down: the offline
// commands (status, resume, the sweep of `batty stop`) wait for it rather
// than call the dead daemon running. A lock held for good is still
// ErrAlreadyRunning.
func TestOfflineCommandsWaitForALockBeingReleased(t *testing.T) {
	l := project.Layout{Dir: t.TempDir()}
	if err := l.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	hold := func() chan struct{} {
		lock, err := project.AcquireLock(l)
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		go func() {
			<-release
			project.ReleaseLock(lock)
		}()
		return release
	}
	releaseSoon := func() {
		release := hold()
		time.AfterFunc(100*time.Millisecond, func() { close(release) })
	}
	releaseSoon()
	if err := project.WithLock(l, func() error { return nil }); err != nil {
		t.Fatalf("WithLock while the lock is being released: %v", err)
	}
	releaseSoon()
	if _, err := leftovers.Sweep(l); err != nil {
		t.Fatalf("leftovers.Sweep while the lock is being released: %v", err)
	}
	release := hold()
	defer close(release)
	if err := project.WithLock(l, func() error { return nil }); !errors.Is(err, project.ErrAlreadyRunning) {
		t.Fatalf("WithLock on a lock held for good: %v, want ErrAlreadyRunning", err)
	}
}
