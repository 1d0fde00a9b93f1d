package alerthook

import (
	"slices"
	"testing"

	"github.com/battyhq/batty/eventlog"
)

// TestAlertEnv: BATTY_ALERT_MESSAGE is one line, as documented, whatever
// the error or reply it quotes holds: no ESC (an OSC 52 would write the
// clipboard of the terminal a hook echoes it to), no CR, LF or NUL, no
// bidirectional control; what was removed shows as an escape. Stdin keeps
// the whole text.
func TestAlertEnv(t *testing.T) {
	e := eventlog.Event{Type: eventlog.EvAgentFailed, Agent: "eng", Detail: "boom\x1b]52;c;Y3VybA==\x07\x1b]0;pwned\x07\r\nfake\x00 \u202eevil\u2066"}
	a, ok := eventlog.AlertFor(e)
	if !ok {
		t.Fatal("no alert")
	}
	env := alertEnv(a)
	want := []string{"BATTY_ALERT_KIND=agent_failed", "BATTY_ALERT_AGENT=eng",
		`BATTY_ALERT_MESSAGE=eng failed: boom fake\x00 \u202eevil\u2066`}
	if !slices.Equal(env, want) {
		t.Fatalf("environment %q, want %q", env, want)
	}
	if a.Message != "eng failed: "+e.Detail {
		t.Fatalf("the alert's message (stdin) is %q, want the whole text", a.Message)
	}
}

func TestAlertQueueDropsTheOldest(t *testing.T) {
	h := New(Config{Limit: 2})
	for _, id := range []string{"a", "b", "c"} {
		h.Event(eventlog.Event{Type: eventlog.EvAgentFailed, Agent: id})
	}
	h.Event(eventlog.Event{Type: eventlog.EvReply, Agent: "d"}) // replies are off
	a, dropped, ok := h.next()
	if !ok || a.Agent != "b" || dropped != 1 {
		t.Fatalf("next = %+v, dropped %d, %v; want b, 1 dropped", a, dropped, ok)
	}
	if a, dropped, ok = h.next(); !ok || a.Agent != "c" || dropped != 0 {
		t.Fatalf("next = %+v, dropped %d, %v; want c", a, dropped, ok)
	}
	if _, _, ok = h.next(); ok {
		t.Fatal("queue not empty")
	}
	h.Close()
	h.Event(eventlog.Event{Type: eventlog.EvAgentFailed, Agent: "e"})
	if _, _, ok = h.next(); ok {
		t.Fatal("an alert queued after close")
	}
}
