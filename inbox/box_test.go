package inbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/atomicfile"
)

func newBox(t testing.TB, name string) (*Store, *Box) {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "inboxes"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Box(name)
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

func msg(body string) Message { return Message{From: "human", To: "eng", Body: body} }

func deliver(t testing.TB, b *Box, m Message) Message {
	t.Helper()
	m, err := b.Deliver(m)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func ids(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.ID)
	}
	return out
}

func noErrs(t testing.TB, errs []error) {
	t.Helper()
	for _, err := range errs {
		t.Error(err)
	}
}

func TestOpenAndBoxes(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "a", "inboxes")
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"eng-1", "human", "@eng"} {
		b, err := s.Box(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Box(name); err != nil { // idempotent
			t.Fatal(err)
		}
		for _, d := range []string{"", "tmp", "new", "cur", "done"} {
			fi, err := os.Stat(filepath.Join(b.Dir, d))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o700 {
				t.Errorf("%s/%s: perm %o", name, d, fi.Mode().Perm())
			}
		}
	}
	if err := os.Mkdir(filepath.Join(root, "Not-A-Box"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.Boxes()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"@eng", "eng-1", "human"}; !slices.Equal(got, want) {
		t.Fatalf("Boxes() = %q, want %q", got, want)
	}
}

func TestBoxRejectsEscapingNames(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", ".", "..", "../x", "a/b", "/tmp", "Eng", "@", "@../x", "@a/b", "a\x00", strings.Repeat("a", 41)} {
		if b, err := s.Box(name); err == nil {
			t.Errorf("Box(%q) = %+v, want an error", name, b)
		}
	}
	if names := dirNames(t, root); len(names) != 0 {
		t.Errorf("root holds %q", names)
	}
	if names := dirNames(t, parent); !slices.Equal(names, []string{"root"}) {
		t.Errorf("parent holds %q", names)
	}
	// A box directory that is a symbolic link is refused.
	if err := os.Symlink(parent, filepath.Join(root, "evil")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Box("evil"); !errors.Is(err, atomicfile.ErrSymlink) {
		t.Errorf("Box(symlink) = %v", err)
	}
}

func TestLifecycle(t *testing.T) {
	_, b := newBox(t, "eng")
	before := time.Now()
	m := deliver(t, b, Message{From: "human", To: "eng", Body: "do it", InReplyTo: "x1"})
	if !ValidID(m.ID) || m.CreatedAt.Before(before.Add(-time.Second)) || m.CreatedAt.Location() != time.UTC {
		t.Fatalf("delivered %+v", m)
	}
	if !strings.HasPrefix(m.ID, m.CreatedAt.Format(idLayout)) {
		t.Errorf("id %s does not encode created_at %v", m.ID, m.CreatedAt)
	}
	check := func(state string, pending, inflight int) {
		t.Helper()
		p, f, err := b.Count()
		if err != nil || p != pending || f != inflight {
			t.Fatalf("Count() = %d, %d, %v; want %d, %d", p, f, err, pending, inflight)
		}
		_, got, err := b.Get(m.ID)
		if err != nil || got != state {
			t.Fatalf("Get: state %q, %v; want %q", got, err, state)
		}
		if names := dirNames(t, b.path(dirTmp)); len(names) != 0 {
			t.Fatalf("tmp/ holds %q", names)
		}
		fi, err := os.Stat(b.file(state, m.ID))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s file: %v, %v", state, fi, err)
		}
	}
	check(StateNew, 1, 0)
	pending, errs := b.Pending()
	noErrs(t, errs)
	if len(pending) != 1 || !equalMessages(pending[0], m) {
		t.Fatalf("Pending() = %+v, want [%+v]", pending, m)
	}

	claimed, err := b.Claim(m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if claimed.Attempt != 1 || claimed.Body != m.Body {
		t.Fatalf("claimed %+v", claimed)
	}
	check(StateCur, 0, 1)
	inflight, errs := b.InFlight()
	noErrs(t, errs)
	if len(inflight) != 1 || !equalMessages(inflight[0], claimed) {
		t.Fatalf("InFlight() = %+v", inflight)
	}

	o := Outcome{Status: StatusCompleted, Reply: "done", Agent: "eng", ThreadID: "th", InputTokens: 10, OutputTokens: 2}
	done, err := b.Complete(m.ID, o)
	if err != nil {
		t.Fatal(err)
	}
	if done.Outcome == nil || done.Outcome.Reply != "done" || done.Outcome.FinishedAt.IsZero() || done.Attempt != 1 {
		t.Fatalf("completed %+v", done)
	}
	check(StateDone, 0, 0)
	got, state, err := b.Get(m.ID)
	if err != nil || state != StateDone || !equalMessages(got, done) {
		t.Fatalf("Get() = %+v, %q, %v; want %+v", got, state, err, done)
	}
	list, err := b.Done(0)
	if err != nil || len(list) != 1 || !equalMessages(list[0], done) {
		t.Fatalf("Done(0) = %+v, %v", list, err)
	}
}

func TestDeliver(t *testing.T) {
	_, b := newBox(t, "eng")
	m := deliver(t, b, Message{ID: "mine", From: "eng-2", To: "@eng", Body: "x", CreatedAt: t0.In(time.FixedZone("", -7200))})
	if m.ID != "mine" || m.CreatedAt != t0 {
		t.Fatalf("delivered %+v", m)
	}
	tests := []struct {
		name string
		m    Message
		is   error
	}{
		{"id in new", Message{ID: "mine", From: "human", To: "eng", Body: "y"}, ErrExists},
		{"outcome set", Message{From: "human", To: "eng", Body: "y", Outcome: &Outcome{}}, nil},
		{"empty body", Message{From: "human", To: "eng"}, nil},
		{"bad sender", Message{From: "../x", To: "eng", Body: "y"}, nil},
		{"bad id", Message{ID: "../x", From: "human", To: "eng", Body: "y"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Deliver(tt.m)
			if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("Deliver: %v, want an error (%v)", err, tt.is)
			}
			if !strings.Contains(err.Error(), b.Dir) {
				t.Errorf("error %q does not name the box", err)
			}
		})
	}
	// An id in cur/ or done/ is taken too.
	if _, err := b.Claim("mine"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Deliver(Message{ID: "mine", From: "human", To: "eng", Body: "y"}); !errors.Is(err, ErrExists) {
		t.Fatalf("Deliver(id in cur) = %v", err)
	}
	if _, err := b.Complete("mine", Outcome{Status: StatusFailed}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Deliver(Message{ID: "mine", From: "human", To: "eng", Body: "y"}); !errors.Is(err, ErrExists) {
		t.Fatalf("Deliver(id in done) = %v", err)
	}
	if names := dirNames(t, b.path(dirTmp)); len(names) != 0 {
		t.Fatalf("tmp/ holds %q", names)
	}
	if names := dirNames(t, b.path(dirNew)); len(names) != 0 {
		t.Fatalf("new/ holds %q", names)
	}
}

func TestPendingSorted(t *testing.T) {
	_, b := newBox(t, "eng")
	var want []string
	for _, body := range []string{"c", "a", "b", "d", "e"} {
		want = append(want, deliver(t, b, msg(body)).ID)
	}
	// Caller-chosen ids sort by id too.
	for _, id := range []string{"zz", "a.b", "a"} {
		want = append(want, deliver(t, b, Message{ID: id, From: "human", To: "eng", Body: "x"}).ID)
	}
	slices.Sort(want)
	got, errs := b.Pending()
	noErrs(t, errs)
	if !slices.Equal(ids(got), want) {
		t.Fatalf("Pending() ids %q, want %q", ids(got), want)
	}
}

func TestClaim(t *testing.T) {
	_, b := newBox(t, "eng")
	pending := deliver(t, b, msg("p")).ID
	inflight := deliver(t, b, msg("f")).ID
	finished := deliver(t, b, msg("d")).ID
	for _, id := range []string{inflight, finished} {
		if _, err := b.Claim(id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Complete(finished, validOutcome()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		id   string
		is   []error
	}{
		{"in flight", inflight, []error{ErrNotPending}},
		{"done", finished, []error{ErrNotPending, ErrAlreadyDone}},
		{"missing", "nope", []error{ErrNotFound}},
		{"escaping id", "../cur/" + inflight, []error{ErrNotFound}},
		{"empty id", "", []error{ErrNotFound}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Claim(tt.id)
			for _, target := range tt.is {
				if !errors.Is(err, target) {
					t.Errorf("Claim: %v, want %v", err, target)
				}
			}
			if err != nil && !strings.Contains(err.Error(), "claim ") {
				t.Errorf("error %q lacks context", err)
			}
		})
	}
	if _, state, _ := b.Get(pending); state != StateNew {
		t.Fatalf("untouched message is in %s", state)
	}
}

// TestClaimAfterCrash: a Claim that crashed after writing cur/ leaves the
// message in new/ and cur/; claiming again does not deliver it twice.
func TestClaimAfterCrash(t *testing.T) {
	_, b := newBox(t, "eng")
	m := deliver(t, b, msg("x"))
	copyFile(t, b.file(dirNew, m.ID), b.file(dirCur, m.ID))
	if _, err := b.Claim(m.ID); !errors.Is(err, ErrNotPending) {
		t.Fatalf("Claim = %v, want ErrNotPending", err)
	}
	if p, f, _ := b.Count(); p != 0 || f != 1 {
		t.Fatalf("Count = %d, %d; want 0, 1", p, f)
	}
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestComplete(t *testing.T) {
	_, b := newBox(t, "eng")
	m := deliver(t, b, msg("x"))
	if _, err := b.Complete(m.ID, validOutcome()); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("Complete(pending) = %v, want ErrNotInFlight", err)
	}
	if _, err := b.Claim(m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Complete(m.ID, Outcome{Status: "fine"}); err == nil || !strings.Contains(err.Error(), "status") {
		t.Fatalf("Complete(bad status) = %v", err)
	}
	if _, state, _ := b.Get(m.ID); state != StateCur {
		t.Fatalf("after a rejected outcome the message is in %s", state)
	}
	first := validOutcome()
	first.Reply = strings.Repeat("r", MaxReplyLen+10)
	first.Error = strings.Repeat("e", MaxErrorLen+10)
	done, err := b.Complete(m.ID, first)
	if err != nil {
		t.Fatal(err)
	}
	// A long reply is kept whole beside the record; a long error is cut.
	if len(done.Outcome.Reply) > MaxReplyLen || len(done.Outcome.Error) > MaxErrorLen ||
		!strings.HasSuffix(done.Outcome.Error, "[truncated]") || done.Outcome.ReplySize != MaxReplyLen+10 {
		t.Fatalf("reply %d bytes (of %d), error %d bytes", len(done.Outcome.Reply), done.Outcome.ReplySize, len(done.Outcome.Error))
	}
	if whole, err := b.FullReply(done); err != nil || whole != first.Reply {
		t.Fatalf("whole reply: %d bytes, %v", len(whole), err)
	}
	// Completing again records nothing new and returns the recorded outcome.
	again, err := b.Complete(m.ID, Outcome{Status: StatusFailed, Error: "second"})
	if !errors.Is(err, ErrAlreadyDone) || again.Outcome == nil || again.Outcome.Status != StatusCompleted {
		t.Fatalf("Complete again = %+v, %v", again.Outcome, err)
	}
	if _, err := b.Complete("nope", validOutcome()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Complete(missing) = %v", err)
	}
}

// TestCompleteAfterCrash: a Complete that crashed after writing done/ leaves
// the message in cur/ and done/; completing again keeps the first outcome and
// removes the cur/ copy.
func TestCompleteAfterCrash(t *testing.T) {
	_, b := newBox(t, "eng")
	m := deliver(t, b, msg("x"))
	if _, err := b.Claim(m.ID); err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(t.TempDir(), "saved")
	copyFile(t, b.file(dirCur, m.ID), saved)
	first, err := b.Complete(m.ID, validOutcome())
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, saved, b.file(dirCur, m.ID)) // the crash: cur/ still there
	got, err := b.Complete(m.ID, Outcome{Status: StatusInterrupted})
	if !errors.Is(err, ErrAlreadyDone) || !equalMessages(got, first) {
		t.Fatalf("Complete = %+v, %v; want the first outcome and ErrAlreadyDone", got, err)
	}
	if names := dirNames(t, b.path(dirCur)); len(names) != 0 {
		t.Fatalf("cur/ holds %q", names)
	}
}

func TestRequeue(t *testing.T) {
	_, b := newBox(t, "eng")
	m := deliver(t, b, msg("x"))
	if _, err := b.Claim(m.ID); err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent
		if err := b.Requeue(m.ID); err != nil {
			t.Fatal(err)
		}
	}
	got, state, err := b.Get(m.ID)
	if err != nil || state != StateNew || got.Attempt != 1 {
		t.Fatalf("after Requeue: %+v in %q, %v", got, state, err)
	}
	again, err := b.Claim(m.ID)
	if err != nil || again.Attempt != 2 {
		t.Fatalf("second Claim = %+v, %v", again, err)
	}
	if _, err := b.Complete(m.ID, validOutcome()); err != nil {
		t.Fatal(err)
	}
	if err := b.Requeue(m.ID); !errors.Is(err, ErrAlreadyDone) {
		t.Fatalf("Requeue(done) = %v", err)
	}
	if err := b.Requeue("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Requeue(missing) = %v", err)
	}
	if err := b.Requeue("../x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Requeue(invalid) = %v", err)
	}
	if p, f, _ := b.Count(); p != 0 || f != 0 {
		t.Fatalf("Count = %d, %d", p, f)
	}
}

// A delivery that never started gives its attempt back: the message is
// pending as before its Claim, not counted as tried.
func TestUnclaim(t *testing.T) {
	_, b := newBox(t, "eng")
	m := deliver(t, b, msg("x"))
	if c, err := b.Claim(m.ID); err != nil || c.Attempt != 1 {
		t.Fatalf("Claim = %+v, %v", c, err)
	}
	for range 2 { // idempotent
		if err := b.Unclaim(m.ID); err != nil {
			t.Fatal(err)
		}
	}
	got, state, err := b.Get(m.ID)
	if err != nil || state != StateNew || got.Attempt != 0 {
		t.Fatalf("after Unclaim: %+v in %q, %v", got, state, err)
	}
	if c, err := b.Claim(m.ID); err != nil || c.Attempt != 1 {
		t.Fatalf("Claim after Unclaim = %+v, %v; want attempt 1 again", c, err)
	}
	if _, err := b.Complete(m.ID, validOutcome()); err != nil {
		t.Fatal(err)
	}
	if err := b.Unclaim(m.ID); !errors.Is(err, ErrAlreadyDone) || !strings.Contains(err.Error(), "unclaim") {
		t.Fatalf("Unclaim(done) = %v", err)
	}
}

// RequeueFor records why the delivery ended; the next Claim keeps it for
// the prompt header, and a plain Requeue (cut off) clears it.
func TestRequeueForRecordsWhy(t *testing.T) {
	_, b := newBox(t, "eng")
	m := deliver(t, b, msg("x"))
	if _, err := b.Claim(m.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.RequeueFor(m.ID, "quota"); err != nil {
		t.Fatal(err)
	}
	again, err := b.Claim(m.ID)
	if err != nil || again.Attempt != 2 || again.Retry != "quota" {
		t.Fatalf("Claim after RequeueFor = %+v, %v", again, err)
	}
	if err := b.Requeue(m.ID); err != nil {
		t.Fatal(err)
	}
	if got, _, err := b.Get(m.ID); err != nil || got.Retry != "" {
		t.Fatalf("after Requeue: %+v, %v", got, err)
	}
	if _, err := b.Claim(m.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.RequeueFor(m.ID, "Not/Valid"); err == nil {
		t.Fatal("RequeueFor took an invalid reason")
	}
	bad := Message{ID: "x1", From: "human", To: "eng", Body: "b", CreatedAt: m.CreatedAt, Retry: strings.Repeat("a", MaxRetryLen+1)}
	if err := bad.Validate(); err == nil {
		t.Fatal("Validate took an overlong retry")
	}
}

func TestMoveTo(t *testing.T) {
	s, queue := newBox(t, "@eng")
	dst, err := s.Box("eng-1")
	if err != nil {
		t.Fatal(err)
	}
	m := deliver(t, queue, Message{From: "human", To: "eng", Body: "for any eng"})
	moved, err := queue.MoveTo(m.ID, dst)
	if err != nil || !equalMessages(moved, m) {
		t.Fatalf("MoveTo = %+v, %v", moved, err)
	}
	if got, state, err := dst.Get(m.ID); err != nil || state != StateNew || !equalMessages(got, m) {
		t.Fatalf("in dst: %+v, %q, %v", got, state, err)
	}
	if _, err := queue.MoveTo(m.ID, dst); !errors.Is(err, ErrNotFound) {
		t.Fatalf("MoveTo again = %v, want ErrNotFound", err)
	}
	if _, err := queue.MoveTo(m.ID, queue); err == nil {
		t.Fatal("MoveTo(same box) succeeded")
	}

	// A crash after the copy: the message is in both boxes; MoveTo finishes.
	m2 := deliver(t, queue, msg("second"))
	copyFile(t, queue.file(dirNew, m2.ID), dst.file(dirNew, m2.ID))
	if _, err := dst.Claim(m2.ID); err != nil { // dst may have moved on
		t.Fatal(err)
	}
	if got, err := queue.MoveTo(m2.ID, dst); err != nil || got.Attempt != 1 {
		t.Fatalf("MoveTo after crash = %+v, %v", got, err)
	}
	if p, _, _ := queue.Count(); p != 0 {
		t.Fatalf("queue still holds %d", p)
	}

	// A different message with the same id in dst: nothing moves.
	m3 := deliver(t, queue, Message{ID: "same", From: "human", To: "eng", Body: "mine"})
	deliver(t, dst, Message{ID: "same", From: "human", To: "eng", Body: "other"})
	if _, err := queue.MoveTo(m3.ID, dst); !errors.Is(err, ErrExists) {
		t.Fatalf("MoveTo(conflict) = %v, want ErrExists", err)
	}
	if _, state, _ := queue.Get(m3.ID); state != StateNew {
		t.Fatal("conflicting message left the queue")
	}

	// Only pending messages move.
	if _, err := queue.Claim(m3.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.MoveTo(m3.ID, dst); !errors.Is(err, ErrNotPending) {
		t.Fatalf("MoveTo(in flight) = %v", err)
	}
}

// TestCountCountsEachMessageOnce: in the instant between writing a
// message's next copy and removing the previous one (a Claim, a Complete,
// or a crash there) the message counts once, so a backlog is never
// overstated.
func TestCountCountsEachMessageOnce(t *testing.T) {
	_, b := newBox(t, "eng")
	m := deliver(t, b, Message{From: "human", To: "eng", Body: "do it"})
	copyTo := func(from, to string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(b.path(from), m.ID+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b.path(to), m.ID+".json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want := func(pending, inflight int) {
		t.Helper()
		if p, f, err := b.Count(); err != nil || p != pending || f != inflight {
			t.Fatalf("Count() = %d, %d, %v; want %d, %d", p, f, err, pending, inflight)
		}
	}
	want(1, 0)
	copyTo(dirNew, dirCur) // claimed, new/ copy not yet removed
	want(0, 1)
	copyTo(dirCur, dirDone) // outcome recorded, cur/ and new/ copies not yet removed
	want(0, 0)
}

// path is the directory sub of the box.
func (b *Box) path(sub string) string { return filepath.Join(b.Dir, sub) }

// file is the record of message id in the directory sub of the box.
func (b *Box) file(sub, id string) string { return filepath.Join(b.Dir, sub, id+".json") }

func TestRecent(t *testing.T) {
	_, b := newBox(t, "eng")
	var ids []string
	for i := range 4 {
		m, err := b.Deliver(Message{From: "human", To: "eng", Body: fmt.Sprint("m", i), CreatedAt: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	for _, id := range ids[:2] {
		if _, err := b.Claim(id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Complete(ids[0], Outcome{Status: StatusCompleted, Reply: "ok"}); err != nil {
		t.Fatal(err)
	}
	got, errs := b.Recent(3)
	if len(errs) != 0 || len(got) != 3 {
		t.Fatalf("Recent(3) = %v, %v", got, errs)
	}
	want := []struct{ id, state string }{{ids[3], StateNew}, {ids[2], StateNew}, {ids[1], StateCur}}
	for i, w := range want {
		if got[i].ID != w.id || got[i].State != w.state {
			t.Fatalf("Recent(3)[%d] = %s %s, want %s %s", i, got[i].ID, got[i].State, w.id, w.state)
		}
	}
	if all, _ := b.Recent(10); len(all) != 4 || all[3].State != StateDone || all[3].Outcome == nil {
		t.Fatalf("Recent(10) = %+v", all)
	}
}
