package inbox

import (
	"errors"
	"testing"
)

func TestCancelWithdrawsAPendingMessageOnly(t *testing.T) {
	_, b := newBox(t, "eng")
	m := deliver(t, b, msg("never mind"))
	o := Outcome{Status: StatusCancelled, Error: "cancelled by the user"}
	got, err := b.Cancel(m.ID, o)
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome == nil || got.Outcome.Status != StatusCancelled {
		t.Fatalf("recorded %+v", got.Outcome)
	}
	if _, where, err := b.Get(m.ID); err != nil || where != StateDone {
		t.Fatalf("after cancel: %s, %v", where, err)
	}
	if _, err := b.Cancel(m.ID, o); !errors.Is(err, ErrAlreadyDone) {
		t.Fatalf("second cancel: %v", err)
	}
	busy := deliver(t, b, msg("running"))
	if _, err := b.Claim(busy.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Cancel(busy.ID, o); !errors.Is(err, ErrNotPending) || errors.Is(err, ErrAlreadyDone) {
		t.Fatalf("cancel of a message in flight: %v", err)
	}
	if _, err := b.Cancel("20260101T000000.000000000Z-00000000", o); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancel of an unknown id: %v", err)
	}
	if _, err := b.Cancel(deliver(t, b, msg("x")).ID, Outcome{Status: StatusFailed}); err == nil {
		t.Fatal("cancel with another status succeeded")
	}
}
