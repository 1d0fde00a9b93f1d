package orchestrator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
)

const oneAgent = `  - name: solo
`

// TestThreadUsageBaselineSurvivesARestart: the thread's last cumulative
// usage is kept in the agent's state with its thread id and handed to the
// next shim, so the first turn after a daemon restart is charged only what
// it used, not the thread's whole history again.
func TestThreadUsageBaselineSurvivesARestart(t *testing.T) {
	p := newProject(t, oneAgent)
	r := p.start(nil)
	first := p.send("solo", "human", "scenario:usage:5000")
	if st := r.finished(t, first); st != "completed" {
		t.Fatalf("status %s", st)
	}
	r.stop(t)
	var st project.AgentState
	if err := project.LoadJSON(p.layout, project.AgentStateName("solo"), &st); err != nil {
		t.Fatal(err)
	}
	if st.ThreadID == "" || st.ThreadUsage != (protocol.Usage{Input: 5000, Output: 100}) {
		t.Fatalf("state after the first daemon: thread %q usage %+v", st.ThreadID, st.ThreadUsage)
	}

	r = p.start(nil)
	second := p.send("solo", "human", "scenario:usage:2000")
	e := r.waitEvent(t, "turn_finished for "+second, func(e eventlog.Event) bool { return e.Type == eventlog.EvTurnFinished && e.Message == second })
	if d := payloadOf[eventlog.TurnFinished](e); d.InputTokens != 2000 || d.ThreadID != st.ThreadID {
		t.Fatalf("first turn after the restart: %+v, want 2000 input tokens on %s", e.Data, st.ThreadID)
	}
	r.stop(t)
	if err := project.LoadJSON(p.layout, project.AgentStateName("solo"), &st); err != nil {
		t.Fatal(err)
	}
	if st.InputTokens != 7000 || st.OutputTokens != 200 || st.ThreadUsage.Input != 7000 {
		t.Fatalf("state after the restart: input %d output %d thread usage %+v, want 7000, 200, 7000", st.InputTokens, st.OutputTokens, st.ThreadUsage)
	}
}

// TestTurnsCompletedFollowsTheRecordedOutcomes: a daemon killed after an
// outcome reached done/ but before the state file was written leaves the
// counter one short; the next daemon counts the recorded outcomes.
func TestTurnsCompletedFollowsTheRecordedOutcomes(t *testing.T) {
	p := newProject(t, oneAgent)
	// The crash window, on disk: an outcome recorded as completed, a state
	// file that never counted it.
	box := p.box("solo")
	m, err := box.Deliver(inbox.Message{From: "human", To: "solo", Body: "ran before the crash"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := box.Claim(m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := box.Complete(m.ID, inbox.Outcome{Status: inbox.StatusCompleted, Reply: "done"}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p.layout.AgentState("solo")), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := project.SaveJSON(p.layout, project.AgentStateName("solo"), project.AgentState{Name: "solo"}); err != nil {
		t.Fatal(err)
	}

	r := p.start(inProcess)
	id := p.send("solo", "human", "after the restart")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	if n := r.d.byName["solo"].snapshot().st.TurnsCompleted; n != 2 {
		t.Fatalf("turns_completed = %d, want 2 (two outcomes recorded as completed)", n)
	}
}

// TestAuthPauseEventHasNoZeroResumeAt: an auth pause has no end; its
// dispatch_paused event leaves resume_at out instead of writing the zero
// time.
func TestAuthPauseEventHasNoZeroResumeAt(t *testing.T) {
	p := newProject(t, oneAgent)
	r := p.start(nil)
	p.send("solo", "human", "scenario:auth")
	e := r.waitEvent(t, "dispatch_paused", func(e eventlog.Event) bool { return e.Type == eventlog.EvPaused })
	if b, _ := json.Marshal(e.Data); strings.Contains(string(b), "resume_at") || payloadOf[eventlog.Paused](e).Kind != project.PauseAuth {
		t.Fatalf("pause event data = %v, want kind auth and no resume_at", e.Data)
	}
	r.stop(t)
	b, err := os.ReadFile(p.layout.EventsLog())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "0001-01-01") || !strings.Contains(string(b), `"type":"dispatch_paused"`) {
		t.Fatalf("events.jsonl:\n%s", b)
	}
}
