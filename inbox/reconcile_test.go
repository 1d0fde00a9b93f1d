package inbox

import (
	"errors"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestKeep(t *testing.T) {
	q, a, b := &Box{Name: "@eng"}, &Box{Name: "eng-1"}, &Box{Name: "eng-2"}
	c := func(box *Box, state string, attempt int) Copy {
		return Copy{Box: box, State: state, Msg: Message{Attempt: attempt}}
	}
	tests := []struct {
		name   string
		copies []Copy
		want   []bool
	}{
		{"queue and agent: the agent's", []Copy{c(q, StateNew, 0), c(a, StateNew, 0)}, []bool{false, true}},
		{"agent before queue", []Copy{c(a, StateNew, 0), c(q, StateNew, 0)}, []bool{true, false}},
		{"two agents: the first", []Copy{c(a, StateNew, 0), c(b, StateNew, 0), c(q, StateNew, 0)}, []bool{true, false, false}},
		{"in flight wins over pending", []Copy{c(q, StateNew, 0), c(a, StateNew, 0), c(b, StateCur, 1)}, []bool{false, false, true}},
		{"same box, new and cur", []Copy{c(a, StateNew, 1), c(a, StateCur, 2)}, []bool{false, true}},
		{"two in flight: the later attempt", []Copy{c(a, StateCur, 1), c(b, StateCur, 3)}, []bool{false, true}},
		{"two in flight, a tie: the first", []Copy{c(a, StateCur, 2), c(b, StateCur, 2)}, []bool{true, false}},
		{"done anywhere: no live copy", []Copy{c(q, StateNew, 0), c(a, StateDone, 1), c(b, StateCur, 1)}, []bool{false, true, false}},
		{"done twice: both stay", []Copy{c(a, StateDone, 1), c(b, StateDone, 1), c(b, StateNew, 1)}, []bool{true, true, false}},
		{"only queue copies", []Copy{c(q, StateNew, 0), c(q, StateNew, 0)}, []bool{true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keep(tt.copies); !slices.Equal(got, tt.want) {
				t.Fatalf("keep = %v, want %v", got, tt.want)
			}
		})
	}
}

// roleBoxes is a role queue and two agents' boxes in one store.
func roleBoxes(t *testing.T) (queue, a, b *Box) {
	s, queue := newBox(t, "@eng")
	a, err := s.Box("eng-1")
	if err != nil {
		t.Fatal(err)
	}
	if b, err = s.Box("eng-2"); err != nil {
		t.Fatal(err)
	}
	return queue, a, b
}

// places lists where message id is, as "box/state".
func places(t *testing.T, id string, boxes ...*Box) []string {
	t.Helper()
	copies, err := Find(id, boxes)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range copies {
		out = append(out, c.String())
	}
	return out
}

// TestReconcile sets up every state a crash (or a copy by hand) can leave
// a routed message in, and checks that afterwards the message has one live
// copy, or none once it has an outcome.
func TestReconcile(t *testing.T) {
	tests := []struct {
		name string
		// setup leaves message m of the queue in some places.
		setup func(t *testing.T, m Message, queue, a, b *Box)
		want  []string
	}{
		{"routed copy and queue copy (link, then crash)", func(t *testing.T, m Message, queue, a, b *Box) {
			copyFile(t, queue.file(dirNew, m.ID), a.file(dirNew, m.ID))
		}, []string{"eng-1/new"}},
		{"hard link in both", func(t *testing.T, m Message, queue, a, b *Box) {
			if err := os.Link(queue.file(dirNew, m.ID), a.file(dirNew, m.ID)); err != nil {
				t.Fatal(err)
			}
		}, []string{"eng-1/new"}},
		{"claimed by the agent, queue copy left", func(t *testing.T, m Message, queue, a, b *Box) {
			copyFile(t, queue.file(dirNew, m.ID), a.file(dirNew, m.ID))
			if _, err := a.Claim(m.ID); err != nil {
				t.Fatal(err)
			}
		}, []string{"eng-1/cur"}},
		{"done in one agent, pending in the queue and another agent", func(t *testing.T, m Message, queue, a, b *Box) {
			copyFile(t, queue.file(dirNew, m.ID), a.file(dirNew, m.ID))
			copyFile(t, queue.file(dirNew, m.ID), b.file(dirNew, m.ID))
			if _, err := a.Claim(m.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Complete(m.ID, validOutcome()); err != nil {
				t.Fatal(err)
			}
		}, []string{"eng-1/done"}},
		{"in flight in two agents", func(t *testing.T, m Message, queue, a, b *Box) {
			for _, x := range []*Box{a, b} {
				copyFile(t, queue.file(dirNew, m.ID), x.file(dirNew, m.ID))
				if _, err := x.Claim(m.ID); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := b.Claim(m.ID); err == nil {
				t.Fatal("claimed twice")
			}
		}, []string{"eng-1/cur"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			queue, a, b := roleBoxes(t)
			m := deliver(t, queue, msg("route me"))
			tt.setup(t, m, queue, a, b)
			res, errs := Reconcile([]*Box{a, b, queue})
			noErrs(t, errs)
			if len(res) != 1 || res[0].ID != m.ID {
				t.Fatalf("resolutions %+v", res)
			}
			if got := places(t, m.ID, queue, a, b); !slices.Equal(got, tt.want) {
				t.Fatalf("after Reconcile the message is in %q, want %q", got, tt.want)
			}
			// Idempotent: nothing left to do.
			if res, errs := Reconcile([]*Box{a, b, queue}); len(res) != 0 || len(errs) != 0 {
				t.Fatalf("second Reconcile: %+v, %v", res, errs)
			}
		})
	}
}

// TestReconcileQuarantinesAnotherMessage: a different message under an id
// already used is not deleted but moved to bad/, with the reason.
func TestReconcileQuarantinesAnotherMessage(t *testing.T) {
	queue, a, _ := roleBoxes(t)
	deliver(t, queue, Message{ID: "same", From: "human", To: "eng", Body: "one"})
	deliver(t, a, Message{ID: "same", From: "human", To: "eng", Body: "another"})
	res, errs := Reconcile([]*Box{a, queue})
	noErrs(t, errs)
	if len(res) != 1 || len(res[0].Quarantined) != 1 || res[0].Quarantined[0].String() != "@eng/new" {
		t.Fatalf("resolutions %+v", res)
	}
	if got := places(t, "same", queue, a); !slices.Equal(got, []string{"eng-1/new"}) {
		t.Fatalf("message in %q", got)
	}
	if n := len(dirNames(t, queue.path(dirBad))); n != 1 {
		t.Fatalf("queue's bad/ holds %d files", n)
	}
}

// TestMoveToIsOneRename: the routed file is the queue's file itself (same
// inode, moved by one rename), so no instant has it in both boxes; the
// move refuses to replace a file and respects the destination's limit.
func TestMoveToIsOneRename(t *testing.T) {
	queue, a, _ := roleBoxes(t)
	m := deliver(t, queue, msg("route me"))
	var before, after unix.Stat_t
	if err := unix.Stat(queue.file(dirNew, m.ID), &before); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.MoveTo(m.ID, a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(a.file(dirNew, m.ID), &after); err != nil {
		t.Fatal(err)
	}
	if before.Ino != after.Ino || after.Nlink != 1 {
		t.Fatalf("inode %d → %d, %d links: not a rename", before.Ino, after.Ino, after.Nlink)
	}
	if got := places(t, m.ID, queue, a); !slices.Equal(got, []string{"eng-1/new"}) {
		t.Fatalf("message in %q", got)
	}

	// A destination at its limit takes nothing.
	a.Limit = 1
	m2 := deliver(t, queue, msg("second"))
	if _, err := queue.MoveTo(m2.ID, a); !errors.Is(err, ErrFull) {
		t.Fatalf("MoveTo(full) = %v, want ErrFull", err)
	}
	// A destination whose backlog lock is held: ErrBusy, at once.
	a.Limit = 5
	f, err := os.Open(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.MoveTo(m2.ID, a); !errors.Is(err, ErrBusy) {
		t.Fatalf("MoveTo(locked) = %v, want ErrBusy", err)
	}
	f.Close()
	if _, err := queue.MoveTo(m2.ID, a); err != nil {
		t.Fatal(err)
	}
}

// TestDeliverLimit: a box at its limit refuses a message and writes
// nothing; racing senders never push it past the limit.
func TestDeliverLimit(t *testing.T) {
	_, b := newBox(t, "eng")
	b.Limit = 2
	deliver(t, b, msg("one"))
	m := deliver(t, b, msg("two"))
	if _, err := b.Claim(m.ID); err != nil { // in flight counts too
		t.Fatal(err)
	}
	_, err := b.Deliver(msg("three"))
	var full *FullError
	if !errors.As(err, &full) || full.Box != "eng" || full.Backlog != 2 || full.Limit != 2 {
		t.Fatalf("Deliver(full) = %v, want a *FullError for eng, 2 of 2", err)
	}
	if n := len(dirNames(t, b.path(dirNew))) + len(dirNames(t, b.path(dirTmp))); n != 1 {
		t.Fatalf("new/ and tmp/ hold %d files, want 1", n)
	}

	_, c := newBox(t, "eng")
	c.Limit = 5
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for range 20 {
		wg.Go(func() {
			_, err := c.Deliver(msg("race"))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrFull):
				refused++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if p, _, _ := c.Count(); ok != 5 || refused != 15 || p != 5 {
		t.Fatalf("%d delivered, %d refused, %d pending; want 5, 15, 5", ok, refused, p)
	}
}
