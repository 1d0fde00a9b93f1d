package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
)

// a may ask b; b may talk only to c: b's answers reach a all the same.
const askerTeam = `  - name: a
    talks_to: [b]
  - name: b
    talks_to: [c]
  - name: c
    talks_to: [b]
`

// doneIDs lists the ids with an outcome in box.
func doneIDs(t *testing.T, b *inbox.Box) []string {
	t.Helper()
	done, err := b.Done(0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range done {
		ids = append(ids, m.ID)
	}
	return ids
}

// quiet waits until a and b have each finished a message from the human
// sent now: replies are delivered before the turn that owes them is
// announced, so anything a loop would have sent is queued ahead of these.
func quiet(t *testing.T, p *testProject, r *running, agents ...string) {
	t.Helper()
	for _, name := range agents {
		p.sendAndWait(r, name, "sentinel for "+name, "completed")
	}
}

// A asks B (as A's `batty send` does); B's final answer arrives in A's
// inbox as a reply to A's message, whatever talks_to says of B → A; A runs
// one turn on it, and A's answer to the reply goes to no one: no turn after
// that, however long one waits.
func TestAnAgentsQuestionIsAnsweredOnceAndNothingLoops(t *testing.T) {
	p := newProject(t, askerTeam)
	r := p.start(nil)

	q := p.send("b", "a", "what is the plan")
	if st := r.finished(t, q); st != "completed" {
		t.Fatalf("question: %s", st)
	}
	rid := inbox.ReplyID(q)
	e := r.waitEvent(t, "reply to a", func(e eventlog.Event) bool { return e.Type == eventlog.EvReply && e.Message == rid })
	if e.Agent != "b" || payloadOf[eventlog.Reply](e).To != "a" || payloadOf[eventlog.Reply](e).InReplyTo != q {
		t.Fatalf("reply event %+v", e)
	}
	if st := r.finished(t, rid); st != "completed" {
		t.Fatalf("a's turn on the reply: %s", st)
	}
	got, where, err := p.box("a").Get(rid)
	if err != nil || where != "done" || got.From != "b" || got.InReplyTo != q || got.Body != "ECHO:what is the plan" {
		t.Fatalf("a's reply %+v in %s (%v)", got, where, err)
	}
	if got.Outcome == nil || got.Outcome.Status != inbox.StatusCompleted {
		t.Fatalf("a's turn on the reply: %+v", got.Outcome)
	}
	quiet(t, p, r, "a", "b")
	// b ran the question and its sentinel; a the reply and its sentinel.
	if ids := doneIDs(t, p.box("b")); len(ids) != 2 {
		t.Fatalf("b ran %d messages, want 2 (no reply bounced back): %v", len(ids), ids)
	}
	if ids := doneIDs(t, p.box("a")); len(ids) != 2 {
		t.Fatalf("a ran %d messages, want 2: %v", len(ids), ids)
	}
	if n := p.deliveries(q) + p.deliveries(rid); n != 2 {
		t.Fatalf("%d worker runs for the question and its reply, want 2", n)
	}
	// The human got the sentinels' answers only.
	human, _ := p.box("human").Pending()
	if len(human) != 2 {
		t.Fatalf("human inbox: %d messages, want the 2 sentinel answers", len(human))
	}
	// talks_to still holds for a message that only claims to answer:
	// c never asked b, so b's "reply" to c is refused.
	forged := p.box("c")
	m, err := forged.Deliver(inbox.Message{From: "a", To: "c", Body: "not a reply", InReplyTo: q})
	if err != nil {
		t.Fatal(err)
	}
	r.waitEvent(t, "the forged reply refused", func(e eventlog.Event) bool { return e.Type == eventlog.EvRejected && e.Message == m.ID })
}

// A message refused by talks_to tells its sender so, as a reply: the
// sender does not wait for an answer that never comes.
func TestARefusedMessageIsToldToItsSender(t *testing.T) {
	p := newProject(t, askerTeam)
	r := p.start(inProcess)

	q := p.send("a", "b", "b may not ask a") // b talks only to c
	r.waitEvent(t, "the message refused", func(e eventlog.Event) bool { return e.Type == eventlog.EvRejected && e.Message == q })
	rid := inbox.ReplyID(q)
	if st := r.finished(t, rid); st != "completed" {
		t.Fatalf("b's turn on the notice: %s", st)
	}
	got, _, err := p.box("b").Get(rid)
	if err != nil || got.From != "a" || got.InReplyTo != q {
		t.Fatalf("notice %+v (%v)", got, err)
	}
	want := fmt.Sprintf("[batty] your message %s to a ended rejected without an answer: b may not message a (talks_to)", q)
	if got.Body[:len(want)] != want {
		t.Fatalf("notice %q, want it to start %q", got.Body, want)
	}
}

// An empty final answer reaches the asker as an explicit NoAnswer, and is
// counted.
func TestAnEmptyAnswerIsDeliveredAsNoAnswer(t *testing.T) {
	p := newProject(t, askerTeam)
	r := p.start(inProcess)
	q := p.sendAndWait(r, "a", "scenario:empty", "completed")
	got, _, err := p.box("human").Get(inbox.ReplyID(q))
	if err != nil || got.Body != NoAnswer || got.InReplyTo != q {
		t.Fatalf("reply %+v (%v)", got, err)
	}
	for _, as := range r.d.Status().Agents {
		if as.Name == "a" && as.NoAnswers != 1 {
			t.Fatalf("no_answers %d, want 1", as.NoAnswers)
		}
	}
}

// mountTmpfs mounts a tmpfs of size bytes on dir until the test ends
// (after the daemon, whose cleanup runs first when it is started later).
func mountTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mount a tmpfs (CI runs as root): %v", err)
		}
		t.Skipf("mount a tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// fill writes a file into dir until the file system is full, and returns
// its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if err == syscall.ENOSPC || os.IsExist(err) || isNoSpace(err) {
				return path
			}
			t.Fatal(err)
		}
	}
}

func isNoSpace(err error) bool {
	pe, ok := err.(*os.PathError)
	return ok && pe.Err == syscall.ENOSPC
}

// With the inboxes' disk full when a turn ends, its outcome and reply wait
// in memory: the message stays in flight on disk, the agent takes nothing
// else, status says why, one record_failed alert is raised however many
// tries fail; once space returns the reply is delivered, the outcome
// recorded (record_recovered) and the next message runs — no restart.
func TestAFullDiskHoldsTheOutcomeUntilSpaceReturns(t *testing.T) {
	p := newProject(t, askerTeam)
	mountTmpfs(t, p.layout.Inboxes(), 1<<20)
	r := p.start(func(o *Options) { o.RecordRetryMin, o.RecordRetryMax = 10*time.Millisecond, 50*time.Millisecond })

	gate := filepath.Join(p.dir, "gate")
	first := p.send("a", "human", "scenario:gate:"+gate)
	second := p.send("a", "human", "after the disk is back")
	r.waitEvent(t, "delivery of the first message", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == first })
	filler := fill(t, p.layout.Inboxes())
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	failed := r.waitEvent(t, "record_failed", func(e eventlog.Event) bool { return e.Type == eventlog.EvRecordFailed })
	if failed.Message != first {
		t.Fatalf("record_failed for %s, want %s", failed.Message, first)
	}
	if al, ok := eventlog.AlertFor(failed); !ok || al.Kind != eventlog.AlertRecordFailed {
		t.Fatalf("record_failed is not an alert: %+v", al)
	}
	// Several tries fail while the disk stays full.
	deadline := time.Now().Add(waitLimit)
	for {
		var rec *control.RecordingStatus
		for _, as := range r.d.Status().Agents {
			if as.Name == "a" {
				rec = as.Recording
			}
		}
		if rec != nil && rec.Tries >= 3 {
			if rec.Message != first {
				t.Fatalf("status recording %+v", rec)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed 3 failed tries: %+v", rec)
		}
		select {
		case <-r.notify:
		case <-time.After(20 * time.Millisecond): // status is not an event: look again
		}
	}
	if _, where, err := p.box("a").Get(first); err != nil || where != "cur" {
		t.Fatalf("the first message is in %s (%v), want cur", where, err)
	}
	if n := p.deliveries(second); n != 0 {
		t.Fatalf("the second message ran while the first waited to be recorded")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	r.waitEvent(t, "record_recovered", func(e eventlog.Event) bool { return e.Type == eventlog.EvRecordRecovered && e.Message == first })
	if st := r.finished(t, first); st != "completed" {
		t.Fatalf("first: %s", st)
	}
	if st := r.finished(t, second); st != "completed" {
		t.Fatalf("second: %s", st)
	}
	if n := r.count(eventlog.EvRecordFailed, ""); n != 1 {
		t.Fatalf("%d record_failed alerts, want 1", n)
	}
	reply, _, err := p.box("human").Get(inbox.ReplyID(first))
	if err != nil || reply.Body != "GATE:"+gate {
		t.Fatalf("reply %+v (%v)", reply, err)
	}
	if n := p.deliveries(first); n != 1 {
		t.Fatalf("the first message ran %d times, want 1", n)
	}
	for _, as := range r.d.Status().Agents {
		if as.Recording != nil {
			t.Fatalf("%s still recording: %+v", as.Name, as.Recording)
		}
	}
}

// The daemon killed after a reply was delivered and before its outcome was
// written leaves the message in cur/ and the reply in the asker's inbox.
// At the next start the message runs again (at least once to the worker),
// its outcome is recorded once, and the asker still has exactly one reply:
// the second run finds the first reply instead of adding one.
func TestACrashBetweenTheReplyAndTheOutcomeLeavesOneReply(t *testing.T) {
	p := newProject(t, askerTeam)
	for _, from := range []string{"human", "a"} {
		box := p.box("b")
		m, err := box.Deliver(inbox.Message{From: from, To: "b", Body: "asked by " + from})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := box.Claim(m.ID); err != nil {
			t.Fatal(err)
		}
		if _, fresh, err := p.box(from).DeliverReply(inbox.Message{From: "b", To: from, Body: "first answer", InReplyTo: m.ID}); err != nil || !fresh {
			t.Fatalf("reply: %v", err)
		}
	}
	r := p.start(nil)
	for _, from := range []string{"human", "a"} {
		e := r.waitEvent(t, "outcome of the message from "+from, func(e eventlog.Event) bool {
			return e.Type == eventlog.EvTurnFinished && e.Agent == "b" && !payloadOf[eventlog.TurnFinished](e).Requeued && p.deliveries(e.Message) > 0 &&
				func() bool { m, _, _ := p.box("b").Get(e.Message); return m.From == from }()
		})
		id := e.Message
		replies := 0
		for _, box := range []string{from} {
			all, _ := p.box(box).Pending()
			cur, _ := p.box(box).InFlight()
			done, _ := p.box(box).Done(0)
			for _, m := range append(append(all, cur...), done...) {
				if m.InReplyTo == id {
					replies++
					if m.Body != "first answer" {
						t.Errorf("reply to %s: %q, want the first answer", from, m.Body)
					}
				}
			}
		}
		if replies != 1 {
			t.Fatalf("%s has %d replies to %s, want 1", from, replies, id)
		}
		if n := r.count(eventlog.EvReply, inbox.ReplyID(id)); n != 0 {
			t.Fatalf("a reply event for a reply delivered before the crash")
		}
	}
	quiet(t, p, r, "a", "b")
	if done := doneIDs(t, p.box("b")); len(done) != 3 {
		t.Fatalf("b has %d outcomes, want 3: %v", len(done), done)
	}
}
