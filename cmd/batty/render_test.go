package main

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
)

// An unknown quota reset time is left out of `batty chat --json`, never
// written as the zero time; a known one is there.
func TestEventJSONLeavesOutUnknownTimes(t *testing.T) {
	if s := eventJSON(protocol.QuotaBlocked{MessageID: "m", Message: "Try again later."}); strings.Contains(s, "retry_at") {
		t.Errorf("no reset time: %s", s)
	}
	at := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	if s := eventJSON(protocol.QuotaBlocked{MessageID: "m", RetryAt: at}); !strings.Contains(s, `"retry_at":"2030-01-02T03:04:00Z"`) {
		t.Errorf("reset time given: %s", s)
	}
}

// batty chat shows a wait for the network, in codex's words, and its end.
func TestHumanEventNetworkWait(t *testing.T) {
	since := time.Now().Add(-5 * time.Second)
	on := humanEvent(protocol.NetworkWait{MessageID: "chat-1", Waiting: true, Since: since, Message: "Reconnecting... waiting for network (x)"})
	if !strings.Contains(on, "chat-1 waiting for network since") || !strings.Contains(on, "Reconnecting... waiting for network (x)") {
		t.Errorf("waiting: %q", on)
	}
	if off := humanEvent(protocol.NetworkWait{MessageID: "chat-1", Since: since}); !strings.Contains(off, "the API answers again") {
		t.Errorf("back: %q", off)
	}
	if s := eventJSON(protocol.NetworkWait{MessageID: "m", Waiting: true, Since: since, Message: "n"}); !strings.Contains(s, `"event":"network_wait"`) || !strings.Contains(s, `"waiting":true`) {
		t.Errorf("json: %s", s)
	}
}
