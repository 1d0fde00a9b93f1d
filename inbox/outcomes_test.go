package inbox

import (
	"errors"
	"os"
	"testing"
)

func TestOutcomesVisitsEveryRecordedOutcome(t *testing.T) {
	_, b := newBox(t, "eng")
	want := map[string]string{}
	for _, status := range []string{StatusCompleted, StatusFailed, StatusCompleted} {
		m, err := b.Deliver(Message{From: "human", To: "eng", Body: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Claim(m.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Complete(m.ID, Outcome{Status: status}); err != nil {
			t.Fatal(err)
		}
		want[m.ID] = status
	}
	if _, err := b.Deliver(Message{From: "human", To: "eng", Body: "pending, no outcome"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.file(dirDone, "20260101T000000.000000000Z-00000000"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	err := b.Outcomes(func(id string, o Outcome) { got[id] = o.Status })
	var bad *BadFileError
	if !errors.As(err, &bad) {
		t.Fatalf("error = %v, want the bad file named", err)
	}
	if len(got) != len(want) {
		t.Fatalf("outcomes = %v, want %v", got, want)
	}
	for id, st := range want {
		if got[id] != st {
			t.Errorf("%s: %q, want %q", id, got[id], st)
		}
	}
}
