package orchestrator

import (
	"context"
	"errors"
	"testing"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
)

// TestConsoleTeamServesTheHumanInProcess: the console's view of the team
// reaches the daemon in its own process, through the daemon's own
// handlers: with the control socket gone it still pauses, reads the
// status, sends as the human, cancels, resumes and resets, as the
// commands do; once the daemon has stopped it is refused at once, never
// left waiting.
func TestConsoleTeamServesTheHumanInProcess(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(inProcess)
	ct := r.d.ConsoleTeam()
	ctx := context.Background()
	if err := control.RemoveSocket(p.layout); err != nil {
		t.Fatal(err)
	}
	if err := ct.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.waitEvent(t, "pause", func(e eventlog.Event) bool { return e.Type == eventlog.EvPaused })
	st, err := ct.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Dispatch.Paused || st.Dispatch.Reason != "paused from the console" {
		t.Fatalf("dispatch %+v", st.Dispatch)
	}
	id, err := ct.Send(ctx, "manager", "wait for it")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := ct.Messages("manager", 10)
	if err != nil || len(ms) != 1 || ms[0].ID != id || ms[0].From != "human" {
		t.Fatalf("manager's messages %+v, %v", ms, err)
	}
	res, err := ct.Cancel(ctx, id, false)
	if err != nil || res.Result != control.CancelDone {
		t.Fatalf("cancel: %+v, %v", res, err)
	}
	if err := ct.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := ct.Status(ctx); st.Dispatch.Paused {
		t.Fatalf("still paused: %+v", st.Dispatch)
	}
	if pending, err := ct.Reset(ctx, "manager", "new topic"); err != nil || pending {
		t.Fatalf("reset: pending %v, %v", pending, err)
	}
	if _, err := ct.Reset(ctx, "nobody", "x"); err == nil {
		t.Fatal("reset of an unknown agent succeeded")
	}
	if _, err := ct.Approve(ctx, "nothing"); err == nil {
		t.Fatal("approve of no landing request succeeded")
	}
	r.stop(t)
	if err := ct.Pause(ctx); !errors.Is(err, errNotRunning) {
		t.Fatalf("pause of a stopped daemon: %v", err)
	}
}
