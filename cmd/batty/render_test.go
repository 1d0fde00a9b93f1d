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
