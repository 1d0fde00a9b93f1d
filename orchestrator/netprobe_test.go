package orchestrator

import (
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
)

func TestTurnAnswered(t *testing.T) {
	since := time.Now()
	before, after := since.Add(-time.Minute), since.Add(time.Second)
	for _, c := range []struct {
		name    string
		e       protocol.TurnFinished
		started time.Time
		want    bool
	}{
		{"completed", protocol.TurnFinished{Status: protocol.TurnCompleted}, before, true},
		{"usage limit", protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailQuota}, before, true},
		{"stopped for the network", protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailNetwork, Items: 3}, after, false},
		{"timed out while waiting", protocol.TurnFinished{Status: protocol.TurnTimedOut, Failure: protocol.FailNetwork}, after, false},
		{"items in a probe", protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailStream, Items: 1}, after, true},
		{"items before the hold", protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailStream, Items: 1}, before, false},
		{"nothing done", protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailStream}, after, false},
		{"interrupted", protocol.TurnFinished{Status: protocol.TurnInterrupted}, after, false},
		{"login refused", protocol.TurnFinished{Status: protocol.TurnFailed, Failure: protocol.FailAuth}, after, false},
	} {
		if got := turnAnswered(c.e, c.started, since); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
