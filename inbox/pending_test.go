package inbox

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// walk returns the ids Next gives one after the other, and every error
// reported on the way.
func walk(b *Box) ([]string, []error) {
	var ids []string
	var all []error
	for after := ""; ; {
		m, ok, errs := b.Next(after)
		all = append(all, errs...)
		if !ok {
			return ids, all
		}
		ids = append(ids, m.ID)
		after = m.ID
	}
}

// pendingIDsOf returns the ids Pending lists, failing on any error.
func pendingIDsOf(t *testing.T, b *Box) []string {
	t.Helper()
	msgs, errs := b.Pending()
	noErrs(t, errs)
	ids := []string{}
	for _, m := range msgs {
		ids = append(ids, m.ID)
	}
	return ids
}

// TestNextOrderAndBadFiles: Next gives the messages of new/ oldest id
// first, as Pending lists them, reading only what it passes. A file not
// valid yet at the head is reported as not ready and passed over, never
// blocking the ones behind; after its grace it goes to bad/, as does a
// file with a name that is not a message file name; a message that is
// gone is skipped. Both with and without an index (Track).
func TestNextOrderAndBadFiles(t *testing.T) {
	for _, tracked := range []bool{false, true} {
		t.Run(fmt.Sprintf("tracked=%v", tracked), func(t *testing.T) {
			s, b := newBox(t, "eng")
			s.Grace = time.Hour
			now := time.Now()
			s.Now = func() time.Time { return now }
			if tracked {
				b.Track()
			}
			if _, ok, errs := b.Next(""); ok || len(errs) != 0 {
				t.Fatalf("empty box: ok %v, errors %v", ok, errs)
			}
			var ids []string
			for i := range 5 {
				ids = append(ids, deliver(t, b, msg(fmt.Sprint("m", i))).ID)
			}
			// A half-written file whose id sorts first, and a bad name.
			head := "0000000000000000000000000A"
			for name, data := range map[string]string{head + ".json": `{"id":`, "notes.txt": "hello"} {
				path := filepath.Join(b.Dir, "new", name)
				if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
				b.Changed(name) // what the daemon's watcher does
			}
			now = time.Now() // see TestGrace: the ctime may be ahead

			got, errs := walk(b)
			if !slices.Equal(got, ids) {
				t.Fatalf("walk = %v, want %v", got, ids)
			}
			var nr *NotReadyError
			if len(errs) != 2 || !errors.As(errs[0], &nr) || !errors.As(errs[1], &nr) {
				t.Fatalf("errors %v, want two not ready (the bad name and the head)", errs)
			}
			if m, ok, _ := b.Next(ids[1]); !ok || m.ID != ids[2] {
				t.Fatalf("Next(%s) = %s, %v; want %s", ids[1], m.ID, ok, ids[2])
			}

			// The second message is claimed by another process; the first is
			// gone too, unreported.
			other, err := s.Box("eng")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.Claim(ids[1]); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(b.Dir, "new", ids[0]+".json")); err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Hour + time.Second)
			m, ok, errs := b.Next("")
			var bad *BadFileError
			if !ok || m.ID != ids[2] {
				t.Fatalf("Next = %s, %v; want %s", m.ID, ok, ids[2])
			}
			if len(errs) != 2 || !errors.As(errs[0], &bad) || !errors.As(errs[1], &bad) {
				t.Fatalf("errors %v, want the two bad files moved to bad/", errs)
			}
			if got := dirNames(t, filepath.Join(b.Dir, "bad")); len(got) != 2 {
				t.Fatalf("bad/ = %v", got)
			}
			if p, f, err := b.Count(); err != nil || p != 3 || f != 1 {
				t.Fatalf("Count = %d, %d, %v; want 3, 1", p, f, err)
			}
		})
	}
}

// TestTrackedIndexFollowsTheDirectory: a tracking box sees its own changes
// at once, another process's once told of them (Changed, as the daemon's
// watcher does) or after Resync; after any mix of changes, told of, its
// walk and its Count are the directory's. Fails if a change made by the
// box itself (a requeue, a claim, a move) were left to the watcher.
func TestTrackedIndexFollowsTheDirectory(t *testing.T) {
	s, b := newBox(t, "eng")
	b.Track()
	other, err := s.Box("eng")
	if err != nil {
		t.Fatal(err)
	}
	queue, err := s.Box("@eng")
	if err != nil {
		t.Fatal(err)
	}
	queue.Track()

	// Another process's send is seen once reported (or after a Resync).
	m := deliver(t, other, msg("from batty send"))
	if _, ok, _ := b.Next(""); !ok {
		// The first use lists new/: it is there.
		t.Fatal("the first use did not list new/")
	}
	m2 := deliver(t, other, msg("unreported"))
	if got, _ := walk(b); !slices.Equal(got, []string{m.ID}) {
		t.Fatalf("walk = %v before the report", got)
	}
	b.Resync()
	if got, _ := walk(b); !slices.Equal(got, []string{m.ID, m2.ID}) {
		t.Fatalf("walk = %v after Resync", got)
	}

	// Random changes by this box, by another process (reported), and by
	// hand (reported); the walk always equals Pending's listing.
	r := rand.New(rand.NewPCG(1, 2))
	for step := range 300 {
		live := pendingIDsOf(t, b)
		switch op := r.IntN(6); {
		case op == 0:
			deliver(t, b, msg(fmt.Sprint("own ", step)))
		case op == 1:
			m := deliver(t, other, msg(fmt.Sprint("other ", step)))
			b.Changed(m.ID + ".json")
		case op == 2 && len(live) > 0:
			id := live[r.IntN(len(live))]
			if _, err := b.Claim(id); err != nil {
				t.Fatal(err)
			}
			if r.IntN(2) == 0 {
				if err := b.Requeue(id); err != nil {
					t.Fatal(err)
				}
			} else if _, err := b.Complete(id, Outcome{Status: StatusCompleted}); err != nil {
				t.Fatal(err)
			}
		case op == 3 && len(live) > 0:
			id := live[r.IntN(len(live))]
			if _, err := other.Claim(id); err != nil {
				t.Fatal(err)
			}
			b.Changed(id + ".json")
			if err := other.Requeue(id); err != nil {
				t.Fatal(err)
			}
			b.Changed(id + ".json")
		case op == 4:
			// Through the role queue: the move lands in b's new/.
			qm := deliver(t, queue, Message{From: "human", To: "eng", Body: fmt.Sprint("queued ", step)})
			if _, err := queue.MoveTo(qm.ID, b); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := queue.Next(""); ok {
				t.Fatal("the queue's index still holds the moved message")
			}
		case op == 5 && len(live) > 0:
			id := live[r.IntN(len(live))]
			if err := os.Remove(filepath.Join(b.Dir, "new", id+".json")); err != nil {
				t.Fatal(err)
			}
			if r.IntN(2) == 0 {
				b.Changed(id + ".json") // else Next finds it gone
			}
		}
		want := pendingIDsOf(t, b)
		got, errs := walk(b)
		noErrs(t, errs)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: walk = %v, want %v", step, got, want)
		}
		p, _, err := b.Count()
		if err != nil || p != len(want) {
			t.Fatalf("step %d: Count = %d, %v; want %d pending", step, p, err, len(want))
		}
	}
}
