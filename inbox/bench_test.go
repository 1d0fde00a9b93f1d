package inbox

import "testing"

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
