package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/project"
)

const fourAgents = `  - name: architect
    talks_to: [manager]
  - name: manager
    talks_to: [architect, eng]
  - name: eng
    instances: 2
    talks_to: [manager]
`

func TestFourAgentTeamRoutesMessagesAndReplies(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(inProcess)

	id := p.send("architect", "human", "design it")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	// The reply to a human message lands in the human's inbox.
	e := r.waitEvent(t, "reply", func(e eventlog.Event) bool { return e.Type == eventlog.EvReply && e.Agent == "architect" })
	reply, where, err := p.box("human").Get(e.Message)
	if err != nil || where != "new" || reply.InReplyTo != id || reply.Body != "ECHO:design it" || reply.From != "architect" {
		t.Fatalf("reply %+v in %s (%v)", reply, where, err)
	}
	done, _, _ := p.box("architect").Get(id)
	if done.Outcome == nil || done.Outcome.Status != "completed" || done.Outcome.Reply != "ECHO:design it" || done.Outcome.ThreadID == "" {
		t.Fatalf("recorded outcome %+v", done.Outcome)
	}

	// An agent may message a role it talks to; the status shows the work.
	id = p.send("manager", "architect", "plan it")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	// The manager's reply is a message to the architect, which takes a
	// turn on it: counted once that turn is over.
	e = r.waitEvent(t, "manager's reply", func(e eventlog.Event) bool { return e.Type == eventlog.EvReply && e.Agent == "manager" })
	if st := r.finished(t, e.Message); st != "completed" {
		t.Fatalf("the architect's turn on the reply: %s", st)
	}
	st := r.d.status()
	if len(st.Agents) != 4 || st.Team != "test" {
		t.Fatalf("status %+v", st)
	}
	turns := map[string]int{"architect": 2, "manager": 1}
	for _, a := range st.Agents {
		if n, ok := turns[a.Name]; ok && (a.TurnsCompleted != n || a.ThreadID == "" || a.InputTokens != int64(n)*1000) {
			t.Fatalf("agent status %+v, want %d turns", a, n)
		}
	}
}

func TestTalksToIsEnforcedByTheDaemon(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(nil)
	// A file dropped into the inbox by hand cannot get around talks_to:
	// engineers talk to the manager only.
	id := p.send("architect", "eng-1", "hi boss's boss")
	r.waitEvent(t, "rejection", func(e eventlog.Event) bool { return e.Type == eventlog.EvRejected && e.Message == id })
	if p.deliveries(id) != 0 {
		t.Fatal("a refused message reached codex")
	}
	m, where, _ := p.box("architect").Get(id)
	if where != "done" || m.Outcome.Status != "rejected" || !strings.Contains(m.Outcome.Error, "talks_to") {
		t.Fatalf("outcome %+v in %s", m.Outcome, where)
	}
}

func TestRoleWithTwoInstancesSpreadsLoad(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(inProcess)
	a := p.send("@eng", "manager", "scenario:slow:2 first")
	b := p.send("@eng", "manager", "scenario:slow:2 second")
	ra := r.waitEvent(t, "routing of a", func(e eventlog.Event) bool { return e.Type == eventlog.EvRouted && e.Message == a })
	rb := r.waitEvent(t, "routing of b", func(e eventlog.Event) bool { return e.Type == eventlog.EvRouted && e.Message == b })
	if ra.Agent == rb.Agent {
		t.Fatalf("both messages went to %s", ra.Agent)
	}
	r.finished(t, a)
	r.finished(t, b)
}

func TestSendWhileTheDaemonIsDown(t *testing.T) {
	p := newProject(t, fourAgents)
	id := p.send("manager", "human", "queued while down")
	r := p.start(inProcess)
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
}

func TestShimKilledMidTurnIsRespawnedAndTheMessageRedelivered(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(nil)
	id := p.send("manager", "human", "scenario:slow:3 long job")
	r.waitEvent(t, "delivery", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == id })
	first := r.d.byName["manager"].snapshot().shimPID
	if first <= 0 {
		t.Fatal("no shim pid")
	}
	syscall.Kill(first, syscall.SIGKILL)
	r.waitEvent(t, "shim exit", func(e eventlog.Event) bool { return e.Type == eventlog.EvShimExited && e.Agent == "manager" })
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	e := r.waitEvent(t, "second delivery", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvDelivered && e.Message == id && payloadOf[eventlog.Delivered](e).Attempt == 2
	})
	_ = e
	if r.count(eventlog.EvTurnFinished, id) != 1 {
		t.Fatalf("%d outcomes recorded, want 1", r.count(eventlog.EvTurnFinished, id))
	}
	if second := r.d.byName["manager"].snapshot().shimPID; second == first || second == 0 {
		t.Fatalf("shim pid %d after respawn (was %d)", second, first)
	}
}

func TestDaemonSIGKILLedMidTurnResumesThreadsAndRedeliversOnce(t *testing.T) {
	p := newProject(t, fourAgents)
	child := p.startChildDaemon()
	done := p.send("architect", "human", "finished before the crash")
	waitOutcome(t, p, "architect", done)
	var before project.AgentState
	if err := project.LoadJSON(p.layout, project.AgentStateName("architect"), &before); err != nil || before.ThreadID == "" {
		t.Fatalf("state before: %+v %v", before, err)
	}
	cut := p.send("architect", "human", "scenario:slowfirst:60 cut off")
	waitFakeRun(t, p, cut)

	child.Process.Signal(syscall.SIGKILL)
	child.Wait()

	// The restarted daemon resumes the same thread and redelivers exactly
	// the message whose outcome was not recorded — once.
	r := p.start(nil)
	if st := r.finished(t, cut); st != "completed" {
		t.Fatalf("status %s", st)
	}
	m, _, _ := p.box("architect").Get(cut)
	if m.Attempt != 2 || m.Outcome.ThreadID != before.ThreadID {
		t.Fatalf("redelivered message: attempt %d thread %s, want 2 and %s", m.Attempt, m.Outcome.ThreadID, before.ThreadID)
	}
	if n := p.deliveries(cut); n != 2 {
		t.Fatalf("cut-off message ran %d times, want 2 (once cut, once redelivered)", n)
	}
	if n := p.deliveries(done); n != 1 {
		t.Fatalf("completed message ran %d times, want 1", n)
	}
	log, _ := os.ReadFile(p.fakeLog)
	if !strings.Contains(string(log), before.ThreadID+" --- batty message "+cut+" from human (redelivered, attempt 2") {
		t.Fatalf("redelivery did not resume thread %s with a redelivery header:\n%s", before.ThreadID, log)
	}
}

// waitOutcome waits for a message's outcome file, watching nothing but the
// file system (the daemon is another process).
func waitOutcome(t *testing.T, p *testProject, box, id string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if _, where, err := p.box(box).Get(id); err == nil && where == "done" {
			return
		}
		time.Sleep(20 * time.Millisecond) // another process writes it
	}
	t.Fatalf("no outcome for %s", id)
}

// waitFakeRun waits until the fake codex has started message id.
func waitFakeRun(t *testing.T, p *testProject, id string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if p.deliveries(id) > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond) // another process writes it
	}
	t.Fatalf("message %s never reached codex", id)
}

// A shim SIGKILLed mid-turn cannot clean up: the model command its codex
// detached (own session) is reparented to the daemon, a subreaper, which
// kills it. Without that it would run on, orphaned, for good.
func TestShimSIGKILLedLeavesNoDetachedCommand(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	child := p.startChildDaemon()
	t.Cleanup(func() {
		control.Call(p.layout, control.Request{Op: control.OpStop, Timeout: time.Second}, waitLimit)
		child.Wait()
		assertNoProcesses(t, p.mark)
	})
	pidFile := filepath.Join(t.TempDir(), "detached.pid")
	p.send("solo", "human", "scenario:detach:"+pidFile)
	detached := codextest.WaitPidFile(t, pidFile, waitLimit)
	st, err := control.Call(p.layout, control.Request{Op: control.OpStatus}, waitLimit)
	if err != nil || len(st.Status.Agents) != 1 || st.Status.Agents[0].ShimPID <= 0 {
		t.Fatalf("status %+v, %v", st.Status, err)
	}
	if err := syscall.Kill(st.Status.Agents[0].ShimPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !codextest.WaitExit(detached, codextest.ExitGrace) {
		t.Fatalf("the detached command %d (%s) outlived its SIGKILLed shim", detached, codextest.Cmdline(detached))
	}
}

// Without file events (inotify's limits reached) the daemon looks at the
// inboxes every second and says which limit to raise; with them it
// keeps the safety-net rescan.
func TestInboxWatchWithoutFileEvents(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		every time.Duration
		want  string
	}{
		{"events", nil, 30 * time.Second, ""},
		{"no instance left", fmt.Errorf("couldn't initialize inotify: %w", syscall.EMFILE), time.Second, "fs.inotify.max_user_instances"},
		{"no watch left", fmt.Errorf("watch inbox /x: %w", syscall.ENOSPC), time.Second, "fs.inotify.max_user_watches"},
	}
	for _, tt := range tests {
		every, warning := inboxWatch(tt.err, 30*time.Second)
		if every != tt.every || !strings.Contains(warning, tt.want) || (tt.want == "") != (warning == "") {
			t.Errorf("%s: inboxWatch = %s, %q; want %s and a warning naming %q", tt.name, every, warning, tt.every, tt.want)
		}
	}
	if every, _ := inboxWatch(syscall.EMFILE, 200*time.Millisecond); every != 200*time.Millisecond {
		t.Errorf("a rescan shorter than a second became %s", every)
	}
}
