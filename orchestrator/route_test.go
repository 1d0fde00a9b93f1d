package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
)

// copies lists where message id is among the boxes of the eng role, as
// "box/state".
func (p *testProject) copies(id string) []string {
	p.t.Helper()
	cs, err := inbox.Find(id, []*inbox.Box{p.box("@eng"), p.box("eng-1"), p.box("eng-2")})
	if err != nil {
		p.t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

// TestCopyLeftByACrashMidRoutingRunsOnce reproduces what a daemon killed
// in the middle of routing left before routing was one rename: the role
// queue's message also in an instance's new/. The restarted daemon keeps one
// copy: the message runs once and has one outcome.
func TestCopyLeftByACrashMidRoutingRunsOnce(t *testing.T) {
	p := newProject(t, fourAgents)
	id := p.send("@eng", "manager", "route me once")
	src := filepath.Join(p.layout.Inboxes(), "@eng", "new", id+".json")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.box("eng-1").Dir, "new", id+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	r := p.start(nil)
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	// Stopping settles everything the daemon started at its start (routing
	// included): a second copy would now be somewhere.
	r.stop(t)
	if got := p.copies(id); !slices.Equal(got, []string{"eng-1/done"}) {
		t.Fatalf("message %s is in %q, want only eng-1/done", id, got)
	}
	if n := p.deliveries(id); n != 1 {
		t.Fatalf("codex ran the message %d times", n)
	}
}

// TestQueueCopyOfAFinishedMessageIsNotRoutedAgain: while the daemon runs, a
// role-queue message whose id an instance already finished is dropped, not
// routed to another instance.
func TestQueueCopyOfAFinishedMessageIsNotRoutedAgain(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(nil)
	id := p.send("eng-1", "manager", "run me once")
	r.finished(t, id)
	done, _, err := p.box("eng-1").Get(id)
	if err != nil {
		t.Fatal(err)
	}
	done.Outcome, done.Attempt = nil, 0
	if _, err := p.box("@eng").Deliver(done); err != nil {
		t.Fatal(err)
	}
	r.waitEvent(t, "the duplicate dropped", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWarning && e.Message == id && strings.Contains(e.Detail, "dropped the queue's copy")
	})
	r.stop(t)
	if got := p.copies(id); !slices.Equal(got, []string{"eng-1/done"}) {
		t.Fatalf("message %s is in %q, want only eng-1/done", id, got)
	}
	if n := p.deliveries(id); n != 1 {
		t.Fatalf("codex ran the message %d times", n)
	}
}

// TestRoutingKeepsInstancesWithinTheBacklogLimit: with backlog_limit 1 and
// two instances, a third queued message waits in the role queue until an
// instance finishes one, and is then routed at once (no rescan): no
// instance ever holds more than one message.
func TestRoutingKeepsInstancesWithinTheBacklogLimit(t *testing.T) {
	p := newProject(t, fourAgents)
	p.cfg.BacklogLimit = 1
	var ids []string
	for _, body := range []string{"first", "second", "third"} {
		ids = append(ids, p.send("@eng", "manager", body))
	}
	boxes := map[string]*inbox.Box{"eng-1": p.box("eng-1"), "eng-2": p.box("eng-2")}
	var mu sync.Mutex
	var over []string
	r := p.start(inProcessWith(func(o *Options) {
		o.Rescan = time.Hour
		seen := o.OnEvent
		o.OnEvent = func(e eventlog.Event) {
			if e.Type == eventlog.EvRouted {
				// Right after the move: the backlog can only have shrunk since.
				n, f, err := boxes[e.Agent].Count()
				if err != nil || n+f > 1 {
					mu.Lock()
					over = append(over, fmt.Sprintf("%s holds %d after %s was routed to it (%v)", e.Agent, n+f, e.Message, err))
					mu.Unlock()
				}
			}
			seen(e)
		}
	}))
	for _, id := range ids {
		if st := r.finished(t, id); st != "completed" {
			t.Fatalf("%s: status %s", id, st)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(over) > 0 {
		t.Fatalf("backlog_limit 1 exceeded: %q", over)
	}
}

// TestFileWrittenInTwoChunksIsDelivered: a message file written into new/
// directly, in two writes, is not moved to bad/ while the daemon looks at
// the half-written file; once complete it is delivered.
func TestFileWrittenInTwoChunksIsDelivered(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(inProcessWith(func(o *Options) { o.InboxGrace = time.Hour }))
	data, err := inbox.Encode(inbox.Message{ID: "chunked", From: "human", To: "manager", Body: "in two parts", CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(p.layout.Inboxes(), "manager", "new", "chunked.json")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data[:len(data)/2]); err != nil {
		t.Fatal(err)
	}
	// A message finished after the half file was there: the agent has
	// listed its inbox with it.
	r.finished(t, p.send("manager", "human", "meanwhile"))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the half-written file left new/: %v", err)
	}
	if _, err := f.Write(data[len(data)/2:]); err != nil {
		t.Fatal(err)
	}
	if st := r.finished(t, "chunked"); st != "completed" {
		t.Fatalf("status %s", st)
	}
}

// TestUnfinishedFileGoesToBadWhenItsGraceEnds: a file that never becomes a
// message is looked at again when its grace ends, without a rescan, and
// moved to bad/ with a warning.
func TestUnfinishedFileGoesToBadWhenItsGraceEnds(t *testing.T) {
	p := newProject(t, fourAgents)
	r := p.start(inProcessWith(func(o *Options) { o.InboxGrace = 100 * time.Millisecond; o.Rescan = time.Hour }))
	for _, box := range []string{"manager", "@eng"} {
		if err := os.WriteFile(filepath.Join(p.layout.Inboxes(), box, "new", "stuck.json"), []byte(`{"id":"stu`), 0o600); err != nil {
			t.Fatal(err)
		}
		r.waitEvent(t, "bad file warning for "+box, func(e eventlog.Event) bool {
			return e.Type == eventlog.EvWarning && strings.Contains(e.Detail, filepath.Join(box, "new", "stuck.json")) && strings.Contains(e.Detail, "moved to")
		})
		if _, err := os.Stat(filepath.Join(p.layout.Inboxes(), box, "bad", "new-stuck.json")); err != nil {
			t.Fatal(err)
		}
	}
}
