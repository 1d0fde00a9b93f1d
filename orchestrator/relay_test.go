package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/team"
)

// TestRequestBox: a request from an agent's outbox goes where `batty send`
// or `batty merge` would send it, always as from that agent, and only
// where talks_to lets it.
func TestRequestBox(t *testing.T) {
	p := newProject(t, "  - name: eng\n    talks_to: [rev]\n  - name: rev\n    instances: 2\n  - name: ops\n")
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name, from string
		r          outbox.Request
		box, to    string
		err        string
	}{
		{"to the human", "eng", outbox.Request{To: "human", Body: "b"}, "human", "human", ""},
		{"to a role", "eng", outbox.Request{To: "rev", Body: "b"}, "@rev", "rev", ""},
		{"to an instance", "eng", outbox.Request{To: "rev-2", Body: "b"}, "rev-2", "rev-2", ""},
		{"talks_to", "eng", outbox.Request{To: "ops", Body: "b"}, "", "", "may not message ops"},
		{"the landing box is no recipient", "eng", outbox.Request{To: "landing", Body: "ops"}, "", "", "landing"},
		{"unknown", "eng", outbox.Request{To: "zed", Body: "b"}, "", "", "zed"},
		{"land its own", "rev-1", outbox.Request{Land: "rev-1"}, team.LandingBox, team.LandingBox, ""},
		{"land one it talks to", "eng", outbox.Request{Land: "rev-2"}, team.LandingBox, team.LandingBox, ""},
		{"land another's", "ops", outbox.Request{Land: "eng"}, "", "", "may land only"},
	}
	for _, tt := range tests {
		box, m, err := requestBox(p.cfg, tt.from, "id1", at, tt.r)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: requestBox = %q, %+v, %v; want an error with %q", tt.name, box, m, err, tt.err)
			}
			continue
		}
		want := inbox.Message{ID: "id1", From: tt.from, To: tt.to, Body: tt.r.Body, CreatedAt: at}
		if tt.r.Land != "" {
			want.Body = tt.r.Land
		}
		if err != nil || box != tt.box || m != want {
			t.Errorf("%s: requestBox = %q, %+v, %v; want %q, %+v", tt.name, box, m, err, tt.box, want)
		}
	}
}

// A request in an agent's outbox is delivered as from that agent, once:
// the same request relayed again (its shim restarted before the
// acknowledgement) is acknowledged without a second delivery, and a
// request that takes the id of another message is refused with a warning.
func TestRequestsAreDeliveredOnce(t *testing.T) {
	p := newProject(t, "  - name: eng\n    talks_to: [lead]\n  - name: lead\n")
	r := p.start(nil)
	id := requestAnswered(t, p, r, "eng", outbox.Request{To: "lead", Body: "hello"})
	m, _, err := p.box("lead").Get(id)
	if err != nil || m.From != "eng" || m.Body != "hello" {
		t.Fatalf("delivered %+v, %v", m, err)
	}
	again := func(body string) string {
		t.Helper()
		return requestAgain(t, p, "eng", id, outbox.Request{To: "lead", Body: body})
	}
	// The same request again: acknowledged (its file removed), not run
	// twice.
	waitGone(t, again("hello"))
	// Another body under the taken id: refused.
	file := again("another")
	r.waitEvent(t, "the refusal", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWarning && e.Agent == "eng" && strings.Contains(e.Detail, "taken by another message")
	})
	waitGone(t, file)
	if n := p.deliveries(id); n != 1 {
		t.Fatalf("the message ran %d times, want once", n)
	}
	if r.count(eventlog.EvWarning, "") != 1 {
		t.Fatal("the same request again was refused")
	}
}

// A request to a role of several instances, relayed again after its
// message was routed out of the role's queue to an instance and answered,
// is acknowledged without a second delivery.
func TestARequestToARoleIsDeliveredOnceAfterItWasRouted(t *testing.T) {
	p := newProject(t, "  - name: eng\n    talks_to: [lead]\n  - name: lead\n    instances: 2\n")
	r := p.start(nil)
	id := requestAnswered(t, p, r, "eng", outbox.Request{To: "lead", Body: "hello"})
	waitGone(t, requestAgain(t, p, "eng", id, outbox.Request{To: "lead", Body: "hello"}))
	if n := p.deliveries(id); n != 1 {
		t.Fatalf("the message ran %d times, want once", n)
	}
	if r.count(eventlog.EvWarning, "") != 0 {
		t.Fatal("the same request again was refused")
	}
	if pending, _, err := p.box("@lead").Count(); err != nil || pending != 0 {
		t.Fatalf("the role's queue holds %d messages (%v), want none", pending, err)
	}
}

// requestAnswered writes request req into agent's outbox and waits until
// its message completed; it returns the message's id.
func requestAnswered(t *testing.T, p *testProject, r *running, agent string, req outbox.Request) string {
	t.Helper()
	id, err := outbox.Write(p.layout.Dir, agent, req)
	if err != nil {
		t.Fatal(err)
	}
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("the request's message: %s", st)
	}
	return id
}

// requestAgain writes request r into agent's outbox under the id of a
// request relayed before, as it would be found again by a shim started
// anew before its acknowledgement, and returns the file's path.
func requestAgain(t *testing.T, p *testProject, agent, id string, r outbox.Request) string {
	t.Helper()
	data, err := outbox.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(outbox.Path(p.layout.Dir, agent), outbox.SubTmp, "again")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(outbox.Path(p.layout.Dir, agent), outbox.SubNew, id+".json")
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	return file
}

// waitGone waits until path no longer exists.
func waitGone(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if _, err := os.Lstat(path); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
