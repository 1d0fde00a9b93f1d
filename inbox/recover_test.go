package inbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRecover(t *testing.T) {
	_, b := newBox(t, "eng")
	a := deliver(t, b, msg("in flight"))
	bb := deliver(t, b, msg("completed, cur left behind"))
	c := deliver(t, b, msg("claimed, new left behind"))
	d := deliver(t, b, msg("completed, new left behind"))
	e := deliver(t, b, msg("pending"))
	for _, m := range []Message{a, bb, c, d} {
		if _, err := b.Claim(m.ID); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, b.file(dirCur, c.ID), b.file(dirNew, c.ID))
	for _, m := range []Message{bb, d} {
		saved := b.file(dirTmp, "saved")
		copyFile(t, b.file(dirCur, m.ID), saved)
		if _, err := b.Complete(m.ID, validOutcome()); err != nil {
			t.Fatal(err)
		}
		dst := dirCur
		if m.ID == d.ID {
			dst = dirNew
		}
		if err := os.Rename(saved, b.file(dst, m.ID)); err != nil {
			t.Fatal(err)
		}
	}
	// Temporary files: a stale one (removed) and a fresh one (kept).
	stale, fresh := filepath.Join(b.path(dirTmp), ".stale"), filepath.Join(b.path(dirTmp), ".fresh")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * StaleTempAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	// Listings ignore tmp/.
	pending, errs := b.Pending()
	noErrs(t, errs)
	if want := []string{c.ID, d.ID, e.ID}; !slices.Equal(ids(pending), want) {
		t.Fatalf("Pending before Recover: %q, want %q", ids(pending), want)
	}

	for round := range 2 { // idempotent
		redeliver, errs := b.Recover()
		noErrs(t, errs)
		if want := []string{a.ID, c.ID}; !slices.Equal(ids(redeliver), want) {
			t.Fatalf("round %d: Recover returned %q, want %q", round, ids(redeliver), want)
		}
		pending, errs := b.Pending()
		noErrs(t, errs)
		if want := []string{e.ID}; !slices.Equal(ids(pending), want) {
			t.Fatalf("round %d: Pending after Recover: %q, want %q", round, ids(pending), want)
		}
		if got := dirNames(t, b.path(dirTmp)); !slices.Equal(got, []string{".fresh"}) {
			t.Fatalf("round %d: tmp/ holds %q", round, got)
		}
	}
	for _, m := range []Message{bb, d} {
		got, state, err := b.Get(m.ID)
		if err != nil || state != StateDone || got.Outcome == nil {
			t.Fatalf("%s: %q, %v", m.Body, state, err)
		}
	}
}

func TestBadFiles(t *testing.T) {
	s, b := newBox(t, "eng")
	s.Grace = -1 // no grace: see TestGrace
	good := deliver(t, b, msg("good"))
	other := deliver(t, b, msg("other"))
	newDir := b.path(dirNew)
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(newDir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("garbage.json", "{not json")
	write("empty.json", "")
	write("notes.txt", "hello")
	write(".hidden", "x")
	data, err := os.ReadFile(b.file(dirNew, good.ID))
	if err != nil {
		t.Fatal(err)
	}
	write("wrong-id.json", string(data))
	if err := os.Symlink("/etc/passwd", filepath.Join(newDir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(newDir, "fifo.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(newDir, "dir.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	bad := []string{"garbage.json", "empty.json", "notes.txt", ".hidden", "wrong-id.json", "link.json", "fifo.json", "dir.json"}

	msgs, errs := b.Pending()
	if want := []string{good.ID, other.ID}; !slices.Equal(ids(msgs), want) {
		t.Fatalf("Pending() = %q, want %q", ids(msgs), want)
	}
	if len(errs) != len(bad) {
		t.Fatalf("%d errors, want %d: %v", len(errs), len(bad), errs)
	}
	for _, name := range bad {
		found := false
		for _, err := range errs {
			var be *BadFileError
			if errors.As(err, &be) && be.Path == filepath.Join(newDir, name) {
				found = true
				if be.MovedTo == "" || be.MoveErr != nil || !strings.Contains(err.Error(), name) {
					t.Errorf("%s: %v", name, err)
				}
				if _, err := os.Lstat(be.MovedTo); err != nil {
					t.Errorf("%s: not in bad/: %v", name, err)
				}
			}
		}
		if !found {
			t.Errorf("no error for %s", name)
		}
	}
	if got := dirNames(t, newDir); len(got) != 2 {
		t.Fatalf("new/ holds %q", got)
	}
	if _, errs := b.Pending(); len(errs) != 0 {
		t.Fatalf("second Pending: %v", errs)
	}
	// The same name going bad twice keeps both files.
	write("garbage.json", "again")
	if _, errs := b.Pending(); len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	if n := len(dirNames(t, b.path(dirBad))); n != len(bad)+1 {
		t.Fatalf("bad/ holds %d files, want %d", n, len(bad)+1)
	}

	// Claim of a bad file moves it aside and reports it.
	write("broken.json", `{"id":"broken"}`)
	if _, err := b.Claim("broken"); err == nil || !strings.Contains(err.Error(), "broken.json") {
		t.Fatalf("Claim(bad) = %v", err)
	}
	// Done reports bad files in done/ but returns the good ones.
	if _, err := b.Claim(good.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Complete(good.ID, validOutcome()); err != nil {
		t.Fatal(err)
	}
	copyFile(t, b.file(dirNew, other.ID), b.file(dirDone, other.ID)) // no outcome
	done, err := b.Done(0)
	if len(done) != 1 || done[0].ID != good.ID || err == nil || !strings.Contains(err.Error(), "no outcome") {
		t.Fatalf("Done = %q, %v", ids(done), err)
	}
}

func TestDoneOrder(t *testing.T) {
	_, b := newBox(t, "eng")
	var want []string
	finish := []time.Duration{3, 1, 2, 2, 5}
	for i, f := range finish {
		m := deliver(t, b, Message{ID: string(rune('a' + i)), From: "human", To: "eng", Body: "x"})
		if _, err := b.Claim(m.ID); err != nil {
			t.Fatal(err)
		}
		o := validOutcome()
		o.FinishedAt = t0.Add(f * time.Minute)
		if _, err := b.Complete(m.ID, o); err != nil {
			t.Fatal(err)
		}
	}
	want = []string{"e", "a", "d", "c", "b"}
	for _, limit := range []int{0, 1, 3, 5, 10} {
		got, err := b.Done(limit)
		if err != nil {
			t.Fatal(err)
		}
		w := want
		if limit > 0 && limit < len(w) {
			w = w[:limit]
		}
		if !slices.Equal(ids(got), w) {
			t.Errorf("Done(%d) = %q, want %q", limit, ids(got), w)
		}
	}
}

func TestGetNotFound(t *testing.T) {
	_, b := newBox(t, "eng")
	for _, id := range []string{"missing", "../x", ""} {
		if _, _, err := b.Get(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v", id, err)
		}
	}
}
