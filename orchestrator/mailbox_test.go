package orchestrator

import (
	"errors"
	"slices"
	"testing"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/team"
)

// A mailbox never blocks its writer, keeps the order, and once closed
// refuses what comes after, handing what was left to the one closing it.
func TestMailboxKeepsOrderAndRefusesOnceClosed(t *testing.T) {
	b := newMailbox[int]()
	for i := range 3 {
		if !b.put(i) {
			t.Fatalf("put %d refused by an open box", i)
		}
	}
	select {
	case <-b.ready():
	default:
		t.Fatal("not ready with messages waiting")
	}
	if got := b.take(); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("took %v", got)
	}
	if got := b.take(); got != nil {
		t.Fatalf("took %v from an empty box", got)
	}
	b.put(3)
	if left := b.close(); !slices.Equal(left, []int{3}) {
		t.Fatalf("left %v at close", left)
	}
	if b.put(4) {
		t.Fatal("a closed box took a message")
	}
	if got := b.take(); got != nil {
		t.Fatalf("took %v after close", got)
	}
}

func TestResetResponse(t *testing.T) {
	for _, c := range []struct {
		name string
		ans  agentAnswer
		want control.Response
	}{
		{"done", agentAnswer{}, control.Response{OK: true}},
		{"pending", agentAnswer{pending: true}, control.Response{OK: true, Pending: []string{"eng"}}},
		{"failed", agentAnswer{err: errors.New("disk full")}, control.Response{Error: "disk full"}},
		{"stopped", agentAnswer{err: errAgentStopped}, control.Response{Error: "agent eng is stopped"}},
	} {
		got := resetResponse("eng", c.ans)
		if got.OK != c.want.OK || got.Error != c.want.Error || !slices.Equal(got.Pending, c.want.Pending) {
			t.Errorf("%s: %+v; want %+v", c.name, got, c.want)
		}
	}
}

func TestRetryWords(t *testing.T) {
	agents := []*agent{{def: team.Agent{Name: "a"}}, {def: team.Agent{Name: "b"}}, {def: team.Agent{Name: "c"}}, {def: team.Agent{Name: "d"}}}
	answers := []agentAnswer{{}, {err: errNotFailed}, {pending: true}, {err: errAgentStopped}}
	retried, pending := retryWords(agents, answers)
	if !slices.Equal(retried, []string{"a"}) || !slices.Equal(pending, []string{"c"}) {
		t.Fatalf("retried %v, pending %v", retried, pending)
	}
}

func TestPendingWord(t *testing.T) {
	for _, c := range []struct {
		c    agentCtl
		want string
	}{
		{agentCtl{op: opReset, reason: "why"}, "reset"},
		{agentCtl{op: opCancel, id: "20261128T120000.000000000Z-1f2e3d4c"}, "cancel 20261128T120000.000000000Z-1f2e3d4c"},
		{agentCtl{op: opRetry}, "resume"},
		{agentCtl{op: opStop}, ""},
		{agentCtl{op: opEnd}, ""},
	} {
		if got := pendingWord(c.c); got != c.want {
			t.Errorf("%+v: %q; want %q", c.c, got, c.want)
		}
	}
}

func TestStoppedAnswer(t *testing.T) {
	if a := stoppedAnswer(agentCtl{op: opReset}, "eng"); !errors.Is(a.err, errAgentStopped) {
		t.Errorf("reset: %+v", a)
	}
	a := stoppedAnswer(agentCtl{op: opCancel, id: "x"}, "eng")
	if a.cancel.ID != "x" || a.cancel.Box != "eng" || a.cancel.Result != control.CancelRefused {
		t.Errorf("cancel: %+v", a.cancel)
	}
}
