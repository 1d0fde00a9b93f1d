package orchestrator

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/offline"
	"github.com/battyhq/batty/protocol"
)

// cancelIDs asks the daemon to cancel ids and returns its results.
func cancelIDs(t *testing.T, p *testProject, interrupt bool, ids ...string) []control.CancelResult {
	t.Helper()
	resp := call(t, p, control.Request{Op: control.OpCancel, IDs: ids, Interrupt: interrupt})
	if len(resp.Cancels) != len(ids) {
		t.Fatalf("cancel %v: %d results %+v", ids, len(resp.Cancels), resp.Cancels)
	}
	return resp.Cancels
}

// outcomeOf returns the recorded status of message id in box.
func outcomeOf(t *testing.T, p *testProject, box, id string) string {
	t.Helper()
	m, where, err := p.box(box).Get(id)
	if err != nil || where != inbox.StateDone {
		t.Fatalf("message %s in %s: %s, %v", id, box, where, err)
	}
	return m.Outcome.Status
}

func TestCancelWithdrawsAQueuedMessageAndInterruptsOnlyWhenAsked(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(inProcess)
	busy := p.send("manager", "human", "scenario:slow:60 long job")
	r.waitEvent(t, "delivery of the long job", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == busy })
	queued := p.send("manager", "architect", "never mind this one")

	res := cancelIDs(t, p, false, queued, busy, "20260101T000000.000000000Z-00000000")
	if res[0].Result != control.CancelDone || res[0].Box != "manager" {
		t.Fatalf("queued message: %+v", res[0])
	}
	if res[1].Result != control.CancelRefused || !strings.Contains(res[1].Detail, "--interrupt") {
		t.Fatalf("message in flight without --interrupt: %+v", res[1])
	}
	if res[2].Result != control.CancelNotFound {
		t.Fatalf("unknown message: %+v", res[2])
	}
	if st := outcomeOf(t, p, "manager", queued); st != inbox.StatusCancelled {
		t.Fatalf("queued message recorded %s", st)
	}
	r.waitEvent(t, "cancelled event", func(e eventlog.Event) bool { return e.Type == eventlog.EvCancelled && e.Message == queued })
	// Its sender, an agent, hears that no answer comes.
	r.waitEvent(t, "note to the architect", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvReply && payloadOf[eventlog.Reply](e).InReplyTo == queued && payloadOf[eventlog.Reply](e).To == "architect"
	})
	if _, where, _ := p.box("manager").Get(busy); where != inbox.StateCur {
		t.Fatalf("the refused message is %s, want still in flight", where)
	}

	res = cancelIDs(t, p, true, busy)
	if res[0].Result != control.CancelInterrupting {
		t.Fatalf("message in flight with --interrupt: %+v", res[0])
	}
	if st := r.finished(t, busy); st != string(protocol.TurnInterrupted) {
		t.Fatalf("turn ended %s", st)
	}
	r.waitEvent(t, "cancelled event", func(e eventlog.Event) bool { return e.Type == eventlog.EvCancelled && e.Message == busy })
	if st := outcomeOf(t, p, "manager", busy); st != inbox.StatusCancelled {
		t.Fatalf("interrupted message recorded %s", st)
	}
	// Not redelivered: the agent takes the next message instead.
	p.sendAndWait(r, "manager", "next", "completed")
	if n := r.count(eventlog.EvRequeued, busy); n != 0 {
		t.Fatalf("the cancelled message was requeued %d times", n)
	}
	if n := r.count(eventlog.EvDelivered, busy); n != 1 {
		t.Fatalf("the cancelled message was delivered %d times", n)
	}
	if res := cancelIDs(t, p, true, busy); res[0].Result != control.CancelRefused || !strings.Contains(res[0].Detail, "cancelled") {
		t.Fatalf("second cancel: %+v", res[0])
	}
}

func TestOfflineCancelWithdrawsQueuedMessagesOfAStoppedTeam(t *testing.T) {
	p := newProject(t, fourAgents)
	toManager := p.send("manager", "human", "for the manager")
	toRole := p.send("@eng", "human", "for any engineer")
	res, err := offline.Cancel(p.cfg, p.layout, []string{toManager, toRole, "nope"})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Result != control.CancelDone || res[0].Box != "manager" || res[1].Result != control.CancelDone || res[1].Box != "@eng" || res[2].Result != control.CancelNotFound {
		t.Fatalf("offline cancel: %+v", res)
	}
	if outcomeOf(t, p, "manager", toManager) != inbox.StatusCancelled || outcomeOf(t, p, "@eng", toRole) != inbox.StatusCancelled {
		t.Fatal("not recorded as cancelled")
	}
	if res, _ := offline.Cancel(p.cfg, p.layout, []string{toManager}); res[0].Result != control.CancelRefused {
		t.Fatalf("second offline cancel: %+v", res)
	}
	// The team starts without them.
	r := p.start(nil)
	p.sendAndWait(r, "manager", "after the restart", "completed")
	if p.deliveries(toManager)+p.deliveries(toRole) != 0 {
		t.Fatal("a cancelled message ran")
	}
}

func TestCancelledTurnIsRecordedWhateverItsEnd(t *testing.T) {
	for _, e := range []protocol.TurnFinished{
		{Status: protocol.TurnInterrupted, Error: "interrupted"},
		{Status: protocol.TurnCompleted, ThreadID: "t1", Usage: protocol.Usage{Input: 5, Output: 2}},
		{Status: protocol.TurnFailed, Failure: protocol.FailContextWindow},
	} {
		p := cancelledTurn(planTurn(inbox.Message{ID: "m1", Attempt: 1}, e, turnFacts{maxAttempts: 3}), e)
		if p.end != turnRecord || p.outcome.Status != inbox.StatusCancelled || p.requeue != "" || p.context != 0 || p.lastError != "" || p.retryable != "" {
			t.Fatalf("%+v: plan %+v", e, p)
		}
		if p.outcome.ThreadID != e.ThreadID || p.outcome.InputTokens != e.Usage.Input {
			t.Fatalf("%+v: outcome %+v", e, p.outcome)
		}
	}
}

func TestACancelledMessageOwesANoteToAnAgentOnly(t *testing.T) {
	isAgent := func(n string) bool { return n == "manager" }
	o := inbox.CancelledOutcome("eng")
	if _, ok := answerFor(inbox.Message{ID: "m1", From: "human"}, o, isAgent); ok {
		t.Fatal("the human who cancelled is owed a note")
	}
	reply, ok := answerFor(inbox.Message{ID: "m1", From: "manager"}, o, isAgent)
	if !ok || reply.To != "manager" || reply.From != "eng" || reply.InReplyTo != "m1" || !strings.Contains(reply.Body, "cancelled by the user") {
		t.Fatalf("note %+v %v", reply, ok)
	}
}
