package orchestrator

import (
	"fmt"
	"testing"
	"time"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
)

// drained is how many messages each BenchmarkDrain run times.
const drained = 200

// BenchmarkDrain measures how fast one agent works off a backlog: the
// agent's inbox holds queued messages when the daemon starts, and the rate
// is taken over the first 200 outcomes (from the first delivery to the
// 200th outcome recorded), on the fake worker through a real shim. Each
// iteration drains with 200 queued and with 4,000 queued — every one of
// those 200 messages dispatched with 3,800 or more behind it — so the two
// rates differ only in the backlog a dispatch sees, and, measured side by
// side, share the machine's load. It reports both rates (the mean over the
// iterations) and the second as a percentage of the first. Run with
// -benchtime 2x (or more) and -count for several pairs.
func BenchmarkDrain(b *testing.B) {
	var small, large float64
	for i := range b.N {
		// Every other pair starts with the large backlog: neither size
		// always runs on a machine the other has just warmed or loaded.
		if i%2 == 0 {
			small += drainRate(b, drained)
			large += drainRate(b, 4000)
		} else {
			large += drainRate(b, 4000)
			small += drainRate(b, drained)
		}
	}
	n := float64(b.N)
	b.ReportMetric(small/n, "queued200-msgs/s")
	b.ReportMetric(large/n, "queued4000-msgs/s")
	b.ReportMetric(100*large/small, "ratio-%")
	b.ReportMetric(drained, "drained")
}

// drainRate queues n messages for one agent, starts a daemon and returns
// the rate (messages per second) at which the first drained outcomes were
// recorded.
func drainRate(b *testing.B, n int) float64 {
	b.StopTimer()
	// A backlog_limit that lets the daemon requeue into a box this full.
	p := newProjectWith(b, "timeouts:\n  shutdown: 5s\nbacklog_limit: 10000\n", "  - name: solo\n")
	box := p.box("solo")
	for i := range n {
		if _, err := box.Deliver(inbox.Message{From: "human", To: "solo", Body: fmt.Sprintf("task %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.StartTimer()
	r := p.start(nil)
	first := r.waitEvent(b, "first delivery", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered })
	var last eventlog.Event
	done := 0
	r.waitEventWithin(b, 10*time.Minute, fmt.Sprintf("%d outcomes", drained), func(e eventlog.Event) bool {
		if e.Type == eventlog.EvTurnFinished && !payloadOf[eventlog.TurnFinished](e).Requeued {
			done++
			last = e
		}
		return done == drained
	})
	b.StopTimer()
	r.stop(b)
	return float64(drained) / last.Time.Sub(first.Time).Seconds()
}
