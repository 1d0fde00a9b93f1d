package shim

import (
	"fmt"
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

// Codex prints a usage limit's reset time in its own zone: a TZ in its
// environment (the team's codex.env) that differs from the shim's (UTC
// here) is the zone the shim reads the time in.
func TestQuotaResetReadInCodexZone(t *testing.T) {
	if _, err := time.LoadLocation("Asia/Tokyo"); err != nil {
		t.Skipf("no zoneinfo: %v", err)
	}
	h := startShim(t, func(c *shimconfig.Config) { c.Env = append(c.Env, "TZ=Asia/Tokyo") })
	reset := time.Now().Add(90 * time.Minute).Truncate(time.Minute)
	h.send("q", fmt.Sprintf("scenario:quota:%d", reset.Unix()))
	ev := h.expect(kAccepted, kState, kStarted, kThread, kQuota)
	if qb := ev[4].(protocol.QuotaBlocked); !qb.RetryAt.Equal(reset.Add(time.Minute)) {
		t.Fatalf("reset read as %v, want %v (codex printed %q)", qb.RetryAt, reset.Add(time.Minute), qb.Message)
	}
	h.finished("q", protocol.TurnFailed)
}
