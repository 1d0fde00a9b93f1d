package inbox

import (
	"fmt"
	"testing"
)

// BenchmarkDeliver measures one durable Deliver: a temporary file written
// and fsynced, linked into new/, new/ fsynced.
func BenchmarkDeliver(b *testing.B) {
	_, box := newBox(b, "eng")
	m := msg("a message of ordinary size, a line or two of instructions for an agent")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := box.Deliver(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimComplete measures the daemon's side of one message: Claim
// then Complete, each with its fsyncs.
func BenchmarkClaimComplete(b *testing.B) {
	_, box := newBox(b, "eng")
	var ids []string
	for range b.N {
		m, err := box.Deliver(msg("x"))
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	o := Outcome{Status: StatusCompleted, Reply: "ok"}
	b.ResetTimer()
	for _, id := range ids {
		if _, err := box.Claim(id); err != nil {
			b.Fatal(err)
		}
		if _, err := box.Complete(id, o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTrackedQueue measures what a dispatch asks of a box the daemon
// tracks besides the claim's and the outcome's fsyncs — the oldest message
// (Next) and the backlog count (Count) — with 200 and with 4,000 messages
// queued: the cost must not grow with the backlog.
func BenchmarkTrackedQueue(b *testing.B) {
	for _, queued := range []int{200, 4000} {
		_, box := newBox(b, "eng")
		for range queued {
			deliver(b, box, msg("x"))
		}
		box.Track()
		b.Run(fmt.Sprintf("Next/queued=%d", queued), func(b *testing.B) {
			for b.Loop() {
				if _, ok, errs := box.Next(""); !ok || len(errs) > 0 {
					b.Fatal("no message", errs)
				}
			}
		})
		b.Run(fmt.Sprintf("Count/queued=%d", queued), func(b *testing.B) {
			for b.Loop() {
				if p, _, err := box.Count(); err != nil || p != queued {
					b.Fatal(p, err)
				}
			}
		})
	}
}
