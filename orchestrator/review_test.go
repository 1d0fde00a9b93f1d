package orchestrator

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/team"
)

// reviewTeam is a team of two worktree engineers whose landings wait for
// the human's review (workspace.review: human), verify a check that passes.
const reviewTeam = "workspace:\n  verify: test -s shared.txt\n  review: human\n"

// askToLand writes agent's request to land its branch into its outbox, as
// `batty merge` inside its Codex does: its shim relays it, the daemon
// stamps it as from the agent.
func (p *testProject) askToLand(agent string) {
	p.t.Helper()
	if _, err := p.layout.WriteRequest(agent, outbox.Request{Land: agent}); err != nil {
		p.t.Fatal(err)
	}
}

// landingOf is the status line of the landing request of agent.
func (r *running) landingOf(t testing.TB, agent string) control.LandingStatus {
	t.Helper()
	for _, l := range r.d.status().Landings {
		if l.Agent == agent {
			return l
		}
	}
	t.Fatalf("no landing of %s in the status", agent)
	return control.LandingStatus{}
}

// loggedEvents reads events.jsonl: every daemon's events, across restarts.
func (p *testProject) loggedEvents(typ string) []eventlog.Event {
	p.t.Helper()
	b, err := os.ReadFile(p.layout.EventsLog())
	if err != nil {
		p.t.Fatal(err)
	}
	var out []eventlog.Event
	for line := range strings.SplitSeq(string(b), "\n") {
		if e, err := eventlog.Decode([]byte(line)); err == nil && e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// An agent's landing under workspace.review: human waits after a green
// verify, base unchanged, with one review_waiting alert; the human's own
// merge of another branch lands directly meanwhile; the approval (over
// the control socket) lands the tip that was reviewed.
func TestReviewHoldsAnAgentsLandingUntilApproved(t *testing.T) {
	p := newGitProject(t, reviewTeam, "  - name: eng\n    instances: 2\n    workspace: worktree\n")
	p.sandboxOrOff(t)
	r := p.start(nil)
	p.sendAndWait(r, "eng-1", "scenario:write:one.txt=one", "completed")
	p.sendAndWait(r, "eng-2", "scenario:write:two.txt=two", "completed")
	tip := git(t, p.dir, "rev-parse", "batty/eng-1")
	before := git(t, p.dir, "rev-parse", "main")

	p.askToLand("eng-1")
	e := r.waitEvent(t, "eng-1 waiting for review", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvReviewWaiting && e.Agent == "eng-1"
	})
	if a, ok := eventlog.AlertFor(e); !ok || a.Kind != eventlog.AlertReviewWaiting || payloadOf[eventlog.ReviewWaiting](e).Tip != tip {
		t.Fatalf("review_waiting %+v: alert %+v %v", e, a, ok)
	}
	if now := git(t, p.dir, "rev-parse", "main"); now != before {
		t.Fatal("a landing waiting for review moved main")
	}
	if l := r.landingOf(t, "eng-1"); l.State != "review" || !l.Review || l.Tip != tip || l.By != "eng-1" || !strings.Contains(l.Detail, "batty approve eng-1") {
		t.Fatalf("status of the landing waiting for review: %+v", l)
	}

	// The human's merge needs no review, and is not held up by eng-1's.
	p.send(team.LandingBox, "human", "eng-2")
	r.waitEvent(t, "eng-2 landed", func(e eventlog.Event) bool { return e.Type == eventlog.EvLanded && e.Agent == "eng-2" })
	if l := r.landingOf(t, "eng-1"); l.State != "review" {
		t.Fatalf("eng-1's landing left review by itself: %+v", l)
	}

	resp := call(t, p, control.Request{Op: control.OpApprove, Landing: "eng-1"})
	if resp.Landing == nil || resp.Landing.State != "queued" || resp.Landing.Approved != tip || resp.Requeued != "" {
		t.Fatalf("approve answered %+v (landing %+v)", resp, resp.Landing)
	}
	landed := r.waitEvent(t, "eng-1 landed", func(e eventlog.Event) bool { return e.Type == eventlog.EvLanded && e.Agent == "eng-1" })
	if got := git(t, p.dir, "rev-parse", payloadOf[eventlog.Landed](landed).Commit+"^2"); got != tip {
		t.Fatalf("landed %s, want the tip reviewed %s", got, tip)
	}
	if b, _ := os.ReadFile(p.dir + "/one.txt"); string(b) != "one\n" {
		t.Fatalf("the user's checkout after the approval: one.txt %q", b)
	}
	if n := len(p.loggedEvents(eventlog.EvReviewWaiting)); n != 1 {
		t.Fatalf("%d review_waiting events, want 1", n)
	}
	// Nothing is left to approve.
	if _, err := control.Call(p.layout, control.Request{Op: control.OpApprove, Landing: "eng-1"}, 30*time.Second); err == nil ||
		!strings.Contains(err.Error(), "is landed, not waiting for review") {
		t.Fatalf("a second approval: %v", err)
	}
}

// The human's `batty merge --review` waits for review too; a rejection
// fails it, base unchanged, and the agent gets the reason as a message
// it can act on.
func TestARejectedLandingTellsTheAgentWhy(t *testing.T) {
	p := newGitProject(t, "workspace:\n  verify: test -s shared.txt\n", "  - name: eng\n    workspace: worktree\n")
	p.sandboxOrOff(t)
	r := p.start(nil)
	p.sendAndWait(r, "eng", "scenario:write:one.txt=one", "completed")
	before := git(t, p.dir, "rev-parse", "main")

	p.send(team.LandingBox, "human", "eng --review")
	r.waitEvent(t, "eng waiting for review", func(e eventlog.Event) bool { return e.Type == eventlog.EvReviewWaiting && e.Agent == "eng" })
	if _, err := control.Call(p.layout, control.Request{Op: control.OpReject, Landing: "eng", Reason: " "}, 30*time.Second); err == nil ||
		!strings.Contains(err.Error(), "say why") {
		t.Fatalf("a rejection without a reason: %v", err)
	}
	id := r.landingOf(t, "eng").ID
	resp := call(t, p, control.Request{Op: control.OpReject, Landing: inbox.ShortID(id), Reason: "REASON-XYZ: name the file notes.txt"})
	if resp.Landing == nil || resp.Landing.State != "failed" || resp.Landing.ID != id {
		t.Fatalf("reject answered %+v", resp.Landing)
	}
	r.waitEvent(t, "landing_rejected", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvLandingRejected && e.Agent == "eng" && e.Detail == "REASON-XYZ: name the file notes.txt"
	})
	note := waitMessage(t, p.box("eng"), func(m inbox.Message) bool { return strings.Contains(m.Body, "REASON-XYZ") })
	if !strings.HasPrefix(note.Body, "[batty] your branch batty/eng did not land on main: the human reviewed it") ||
		!strings.Contains(note.Body, "run `batty merge eng` again") || note.From != team.Human || note.InReplyTo != id {
		t.Fatalf("the note %+v", note)
	}
	r.finished(t, note.ID)
	if now := git(t, p.dir, "rev-parse", "main"); now != before {
		t.Fatal("a rejected landing moved main")
	}
	if l := r.landingOf(t, "eng"); l.State != "failed" || !strings.Contains(l.Detail, "rejected in review: REASON-XYZ") {
		t.Fatalf("status after the rejection: %+v", l)
	}
}

// A human merge without --review lands directly, whatever
// workspace.review says.
func TestAHumanMergeLandsWithoutReview(t *testing.T) {
	p := newGitProject(t, reviewTeam, "  - name: eng\n    workspace: worktree\n")
	p.sandboxOrOff(t)
	r := p.start(nil)
	p.sendAndWait(r, "eng", "scenario:write:one.txt=one", "completed")
	p.send(team.LandingBox, "human", "eng")
	r.waitEvent(t, "eng landed", func(e eventlog.Event) bool { return e.Type == eventlog.EvLanded && e.Agent == "eng" })
	if n := r.count(eventlog.EvReviewWaiting, ""); n != 0 {
		t.Fatalf("%d review_waiting events for the human's merge", n)
	}
}

// A landing waiting for review is still waiting after a restart (no
// second alert); an approval of a tip the agent moved since is not one:
// the new tip is verified and waits for review again.
func TestAReviewSurvivesARestartAndAMovedTipIsReviewedAgain(t *testing.T) {
	p := newGitProject(t, reviewTeam, "  - name: eng\n    workspace: worktree\n")
	p.sandboxOrOff(t)
	r := p.start(nil)
	p.sendAndWait(r, "eng", "scenario:write:one.txt=one", "completed")
	first := git(t, p.dir, "rev-parse", "batty/eng")
	p.askToLand("eng")
	r.waitEvent(t, "eng waiting for review", func(e eventlog.Event) bool { return e.Type == eventlog.EvReviewWaiting && e.Agent == "eng" })
	r.stop(t)

	r = p.start(nil)
	if l := r.landingOf(t, "eng"); l.State != "review" || l.Tip != first {
		t.Fatalf("after a restart: %+v", l)
	}
	// The agent works on: its branch moves past the tip verified.
	p.sendAndWait(r, "eng", "scenario:write:one.txt=one-fixed", "completed")
	second := git(t, p.dir, "rev-parse", "batty/eng")
	resp := call(t, p, control.Request{Op: control.OpApprove, Landing: "eng"})
	if !strings.Contains(resp.Requeued, "moved from "+first[:12]+" to "+second[:12]) || resp.Landing.Approved != "" {
		t.Fatalf("approve of a moved tip answered %+v (landing %+v)", resp, resp.Landing)
	}
	again := r.waitEvent(t, "review_waiting at the new tip", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvReviewWaiting && payloadOf[eventlog.ReviewWaiting](e).Tip == second
	})
	if req := payloadOf[eventlog.ReviewWaiting](again).Request; req != resp.Landing.ID {
		t.Fatalf("a new request %v, want %s again", req, resp.Landing.ID)
	}
	if n := len(p.loggedEvents(eventlog.EvReviewWaiting)); n != 2 {
		t.Fatalf("%d review_waiting events, want 2 (one per tip, none for the restart)", n)
	}
	call(t, p, control.Request{Op: control.OpApprove, Landing: "eng"})
	landed := r.waitEvent(t, "eng landed", func(e eventlog.Event) bool { return e.Type == eventlog.EvLanded && e.Agent == "eng" })
	if got := git(t, p.dir, "rev-parse", payloadOf[eventlog.Landed](landed).Commit+"^2"); got != second {
		t.Fatalf("landed %s, want %s", got, second)
	}
}

func TestReviewOf(t *testing.T) {
	human := team.WorkspaceSettings{Review: team.ReviewHuman}
	tests := []struct {
		name  string
		ws    team.WorkspaceSettings
		from  string
		asked bool
		want  bool
	}{
		{"an agent's, review: human", human, "eng-1", false, true},
		{"the human's, review: human", human, team.Human, false, false},
		{"the human's --review", team.WorkspaceSettings{}, team.Human, true, true},
		{"an agent's, no review", team.WorkspaceSettings{}, "eng-1", false, false},
	}
	for _, tt := range tests {
		if got := reviewOf(tt.ws, tt.from, tt.asked); got != tt.want {
			t.Errorf("%s: reviewOf = %v, want %v", tt.name, got, tt.want)
		}
	}
}
