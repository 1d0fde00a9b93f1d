package inbox

import (
	"strings"
	"testing"
	"time"
)

// RetryLater puts a message back with its retry record; the next claim carries
// it; a plain Requeue afterwards (the retry was cut off) keeps the count
// but drops the note and the back-off, which described another delivery.
func TestRetryRecord(t *testing.T) {
	_, b := newBox(t, "eng")
	m := deliver(t, b, msg("x"))
	if _, err := b.Claim(m.ID); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Minute).UTC().Truncate(time.Second)
	huge := strings.Repeat("e", MaxErrorLen+10) + "\xff"
	if err := b.RetryLater(m.ID, TransientRetry{Failures: 1, Note: "retry 2 of 3 after a server error", LastError: huge, NotBefore: at}); err != nil {
		t.Fatal(err)
	}
	got, state, err := b.Get(m.ID)
	if err != nil || state != StateNew || got.Transient == nil {
		t.Fatalf("after RetryLater: %+v in %q, %v", got, state, err)
	}
	if r := got.Transient; r.Failures != 1 || r.Note != "retry 2 of 3 after a server error" || !r.NotBefore.Equal(at) ||
		len(r.LastError) > MaxErrorLen || !strings.HasSuffix(r.LastError, "[truncated]") {
		t.Fatalf("retry record %+v", r)
	}
	c, err := b.Claim(m.ID)
	if err != nil || c.Attempt != 2 || c.Transient == nil || c.Transient.Note == "" {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	if err := b.Requeue(m.ID); err != nil {
		t.Fatal(err)
	}
	got, _, _ = b.Get(m.ID)
	if r := got.Transient; r == nil || r.Failures != 1 || r.Note != "" || !r.NotBefore.IsZero() || r.LastError == "" {
		t.Fatalf("after a plain requeue: %+v", r)
	}
	bad := Message{ID: "x", From: "human", To: "eng", Body: "b", CreatedAt: time.Now(), Transient: &TransientRetry{Failures: 0}}
	if err := bad.Validate(); err == nil {
		t.Fatal("a retry record with no failures is valid")
	}
}
