package landing

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNeedsReview(t *testing.T) {
	tests := []struct {
		name string
		r    Request
		want bool
	}{
		{"no review asked", Request{Tip: tipA}, false},
		{"asked, not approved", Request{Review: true, Tip: tipA}, true},
		{"approved this tip", Request{Review: true, Tip: tipA, Approved: tipA}, false},
		{"approved another tip", Request{Review: true, Tip: tipB, Approved: tipA}, true},
		{"asked, no tip", Request{Review: true}, true},
		{"protected paths, not asked", Request{Tip: tipA, Protected: []string{".envrc"}, ProtectedTotal: 1}, true},
		{"protected paths, this tip approved", Request{Tip: tipA, Approved: tipA, Protected: []string{".envrc"}, ProtectedTotal: 1}, false},
		{"protected paths, another tip approved", Request{Tip: tipB, Approved: tipA, Protected: []string{".envrc"}, ProtectedTotal: 1}, true},
		{"asked and protected", Request{Review: true, Tip: tipA, Protected: []string{".envrc"}, ProtectedTotal: 1}, true},
	}
	for _, tt := range tests {
		if got := NeedsReview(tt.r); got != tt.want {
			t.Errorf("%s: NeedsReview = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDecideApproval(t *testing.T) {
	waiting := Request{ID: "r1", Agent: "a", Branch: "batty/a", State: Review, Review: true, Tip: tipA, Merged: tipM, BaseBefore: tipB}
	queued := waiting
	queued.State = Queued
	tests := []struct {
		name   string
		r      Request
		tip    string
		want   Action
		reason string
	}{
		{"the tip reviewed", waiting, tipA, ActApprove, ""},
		{"the branch moved", waiting, tipB, ActRequeue, "batty/a moved from aaaaaaaaaaaa to bbbbbbbbbbbb since it was verified: the new commits are verified and wait for your review again"},
		{"the branch is gone", waiting, "", ActRefuse, "branch batty/a does not exist any more; reject the request"},
		{"not waiting for review", queued, tipA, ActRefuse, "landing request r1 of a is queued, not waiting for review"},
	}
	for _, tt := range tests {
		d := DecideApproval(tt.r, tt.tip)
		if d.Action != tt.want || d.Reason != tt.reason {
			t.Errorf("%s: DecideApproval = %v %q, want %v %q", tt.name, d.Action, d.Reason, tt.want, tt.reason)
		}
	}
}

func TestDecideRejection(t *testing.T) {
	waiting := Request{ID: "r1", Agent: "a", Branch: "batty/a", State: Review, Review: true, Tip: tipA}
	landed := waiting
	landed.State = Landed
	tests := []struct {
		name   string
		r      Request
		reason string
		want   Action
		why    string
	}{
		{"a reason", waiting, "  the API is not what we agreed  ", ActReject, "the API is not what we agreed"},
		{"no reason", waiting, " \n", ActRefuse, "say why: the agent is told the reason, to act on it"},
		{"too long", waiting, strings.Repeat("x", MaxReasonLen+1), ActRefuse, "the reason is longer than 4096 bytes or not UTF-8"},
		{"not UTF-8", waiting, "bad \xff", ActRefuse, "the reason is longer than 4096 bytes or not UTF-8"},
		{"finished", landed, "no", ActRefuse, "landing request r1 of a is landed, not waiting for review"},
	}
	for _, tt := range tests {
		d := DecideRejection(tt.r, tt.reason)
		if d.Action != tt.want || d.Reason != tt.why {
			t.Errorf("%s: DecideRejection = %v %q, want %v %q", tt.name, d.Action, d.Reason, tt.want, tt.why)
		}
	}
}

func TestFindReview(t *testing.T) {
	reqs := []Request{
		{ID: "20260101T000000Z-0a0a0a0a", Agent: "a", State: Landed},
		{ID: "20260102T000000Z-1b1b1b1b", Agent: "a", State: Review},
		{ID: "20260102T000000Z-2c2c2c2c", Agent: "b", State: Failed},
		{ID: "20260103T000000Z-3d3d3d3d", Agent: "b", State: Queued},
		{ID: "20260104T000000Z-4e4e4e4e", Agent: "c", State: Landed},
	}
	tests := []struct {
		arg, want, err string
	}{
		{"a", "20260102T000000Z-1b1b1b1b", ""},                         // its request waiting for review
		{"b", "20260103T000000Z-3d3d3d3d", ""},                         // none waits: its unfinished one
		{"c", "20260104T000000Z-4e4e4e4e", ""},                         // none unfinished: its latest
		{"20260101T000000Z-0a0a0a0a", "20260101T000000Z-0a0a0a0a", ""}, // a full id
		{"2c2c2c2c", "20260102T000000Z-2c2c2c2c", ""},                  // the short form
		{"20260103", "20260103T000000Z-3d3d3d3d", ""},                  // a prefix
		{"20260102", "", `"20260102" names 2 landing requests`},
		{"zed", "", "no landing waits for review: no agent has a landing request"},
		{"", "", "no landing waits for review: name an agent"},
	}
	for _, tt := range tests {
		got, err := FindReview(reqs, tt.arg)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("FindReview(%q) = %s, %v; want error %q", tt.arg, got.ID, err, tt.err)
		case tt.err == "" && (err != nil || got.ID != tt.want):
			t.Errorf("FindReview(%q) = %s, %v; want %s", tt.arg, got.ID, err, tt.want)
		}
	}
	if _, err := FindReview(reqs, "zed"); !errors.Is(err, ErrNoReview) {
		t.Errorf("FindReview of no request: %v, want ErrNoReview", err)
	}
}

func TestRequestBody(t *testing.T) {
	tests := []struct {
		body   string
		agent  string
		review bool
	}{
		{"eng-1", "eng-1", false},
		{" eng-1\n", "eng-1", false},
		{"eng-1 --review", "eng-1", true},
		{RequestBody("eng-2", true), "eng-2", true},
		{RequestBody("eng-2", false), "eng-2", false},
		{"--review", "--review", false},
	}
	for _, tt := range tests {
		a, rv := ParseRequestBody(tt.body)
		if a != tt.agent || rv != tt.review {
			t.Errorf("ParseRequestBody(%q) = %q, %v; want %q, %v", tt.body, a, rv, tt.agent, tt.review)
		}
	}
}

// enqueueReview queues agent's landing asking for review, as an agent's
// request under workspace.review: human.
func (r *repo) enqueueReview(q *Queue, agent string) Request {
	r.t.Helper()
	req, _, err := q.Enqueue(agent, agent, true)
	if err != nil {
		r.t.Fatal(err)
	}
	return req
}

// A request that asks for review is merged and verified, then waits with
// base unchanged, holding no one up: the next request lands meanwhile.
// Approved, it lands (merged again onto the base that moved meanwhile,
// verified again), and its merge holds the tip reviewed.
func TestReviewHoldsAGreenLandingUntilApproved(t *testing.T) {
	r := newRepo(t)
	a, b := r.agent("a"), r.agent("b")
	aTip := r.commit(a, "a.txt", "from a\n", "a one")
	r.commit(b, "b.txt", "from b\n", "b one")
	base := r.tip("main")
	o := r.options()
	runs := filepath.Join(t.TempDir(), "verify-runs")
	o.Verify = "echo ran >> " + runs
	q := r.open(o)
	ra := r.enqueueReview(q, "a")
	rb := r.enqueue(q, "b")

	got := r.land(q, ra.ID)
	if got.State != Review || got.Tip != aTip || got.BaseBefore != base || got.Merged == "" || got.Approved != "" {
		t.Fatalf("after a green verify: %+v", got)
	}
	if now := r.tip("main"); now != base {
		t.Fatal("a request waiting for review moved main")
	}
	if next, ok := q.Next(); !ok || next.ID != rb.ID {
		t.Fatalf("Next = %s %v: the request waiting for review holds the queue up", next.ID, ok)
	}
	r.drain(q)
	if lb, _ := q.Get(rb.ID); lb.State != Landed {
		t.Fatalf("b: %s (%s)", lb.State, lb.Error)
	}
	if w, _ := q.Get(ra.ID); w.State != Review {
		t.Fatalf("a left review by itself: %s", w.State)
	}

	// What the human sees.
	sum, err := Summarize(context.Background(), q.gitIn(r.top), got)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Commits) != 1 || !strings.HasSuffix(sum.Commits[0], " a one") || !slices.Equal(sum.Files, []string{"A\ta.txt"}) {
		t.Fatalf("summary %+v", sum)
	}

	approved, d, err := q.Approve(context.Background(), ra.ID)
	if err != nil || d.Action != ActApprove || approved.State != Queued || approved.Approved != aTip {
		t.Fatalf("Approve = %+v, %v, %v", approved, d, err)
	}
	bLanded := r.tip("main")
	done := r.land(q, ra.ID)
	if done.State != Landed || done.BaseBefore != bLanded {
		t.Fatalf("approved: %s (%s), onto %s (main was %s)", done.State, done.Error, done.BaseBefore, bLanded)
	}
	if got := r.git(r.top, "rev-parse", "main^2"); got != aTip {
		t.Fatalf("main's merge holds %s, want the tip reviewed %s", got, aTip)
	}
	// Verified on a's first merge, b's, and a's again onto the new base.
	if runs := strings.Count(r.read(filepath.Dir(runs), "verify-runs"), "ran"); runs != 3 {
		t.Fatalf("verify ran %d times, want 3", runs)
	}
}

// A branch that moved after it was verified is not approved: the request
// is verified again and waits for review again, at its new tip.
func TestApprovingAMovedTipNeedsReviewAgain(t *testing.T) {
	r := newRepo(t)
	a := r.agent("a")
	first := r.commit(a, "a.txt", "from a\n", "a one")
	q := r.open(r.options())
	ra := r.enqueueReview(q, "a")
	if got := r.land(q, ra.ID); got.State != Review || got.Tip != first {
		t.Fatalf("%+v", got)
	}
	second := r.commit(a, "a.txt", "changed after the review was asked\n", "a two")

	got, d, err := q.Approve(context.Background(), ra.ID)
	if err != nil || d.Action != ActRequeue || got.State != Queued || got.Approved != "" {
		t.Fatalf("Approve of a moved tip = %+v, %+v, %v", got, d, err)
	}
	if !strings.Contains(d.Reason, "moved from "+first[:12]+" to "+second[:12]) {
		t.Fatalf("reason %q", d.Reason)
	}
	again := r.land(q, ra.ID)
	if again.State != Review || again.Tip != second {
		t.Fatalf("after the move: %s at %s, want review at %s", again.State, again.Tip, second)
	}
	if r.merges() != nil {
		t.Fatal("main moved")
	}
	// Approved at the new tip, then the agent commits once more before
	// the landing starts: that tip waits for review again too.
	if _, d, err := q.Approve(context.Background(), ra.ID); err != nil || d.Action != ActApprove {
		t.Fatalf("Approve: %+v, %v", d, err)
	}
	third := r.commit(a, "a.txt", "after the approval\n", "a three")
	if got := r.land(q, ra.ID); got.State != Review || got.Tip != third || got.Approved != second {
		t.Fatalf("a tip moved after the approval: %+v", got)
	}
	if _, d, err := q.Approve(context.Background(), ra.ID); err != nil || d.Action != ActApprove {
		t.Fatalf("Approve: %+v, %v", d, err)
	}
	if got := r.land(q, ra.ID); got.State != Landed {
		t.Fatalf("%s (%s)", got.State, got.Error)
	}
	if got := r.git(r.top, "rev-parse", "main^2"); got != third {
		t.Fatalf("main's merge holds %s, want %s", got, third)
	}
}

// A rejection fails the request with the human's reason; base is
// unchanged, and a refused one changes nothing.
func TestRejectFailsTheRequest(t *testing.T) {
	r := newRepo(t)
	a := r.agent("a")
	r.commit(a, "a.txt", "from a\n", "a one")
	base := r.tip("main")
	q := r.open(r.options())
	ra := r.enqueueReview(q, "a")
	r.land(q, ra.ID)

	if got, d, err := q.Reject(ra.ID, "  "); err != nil || d.Action != ActRefuse || got.State != Review {
		t.Fatalf("Reject without a reason = %+v, %+v, %v", got, d, err)
	}
	got, d, err := q.Reject(ra.ID, "rename the flag to --dry-run")
	if err != nil || d.Action != ActReject || got.State != Failed || got.Rejection != "rename the flag to --dry-run" ||
		got.Error != "rejected in review: rename the flag to --dry-run" || got.FinishedAt.IsZero() {
		t.Fatalf("Reject = %+v, %+v, %v", got, d, err)
	}
	if r.tip("main") != base {
		t.Fatal("a rejection moved main")
	}
	if _, d, _ := q.Approve(context.Background(), ra.ID); d.Action != ActRefuse {
		t.Fatalf("a rejected request approved: %+v", d)
	}
	// A new request is a new request: no review state carried over.
	again, fresh, err := q.Enqueue("a", "a", true)
	if err != nil || !fresh || again.ID == ra.ID {
		t.Fatalf("Enqueue after a rejection = %+v, %v, %v", again, fresh, err)
	}
}

// The request waiting for review, and the approval, are in the state file:
// a queue opened again (a daemon restarted) finds them as they were.
func TestReviewSurvivesARestart(t *testing.T) {
	r := newRepo(t)
	a := r.agent("a")
	tip := r.commit(a, "a.txt", "from a\n", "a one")
	q := r.open(r.options())
	ra := r.enqueueReview(q, "a")
	r.land(q, ra.ID)

	q = r.open(r.options())
	got, ok := q.Get(ra.ID)
	if !ok || got.State != Review || got.Tip != tip || !got.Review {
		t.Fatalf("after a restart: %+v", got)
	}
	if next, ok := q.Next(); ok {
		t.Fatalf("a request waiting for review is due after a restart: %+v", next)
	}
	// Asked again (the agent runs batty merge again): the same request,
	// still waiting.
	if same, fresh, err := q.Enqueue("a", "a", true); err != nil || fresh || same.ID != ra.ID || same.State != Review {
		t.Fatalf("Enqueue while waiting for review = %+v, %v, %v", same, fresh, err)
	}
	if _, _, err := q.Approve(context.Background(), ra.ID); err != nil {
		t.Fatal(err)
	}
	q = r.open(r.options())
	if got, _ := q.Get(ra.ID); got.State != Queued || got.Approved != tip {
		t.Fatalf("the approval after a restart: %+v", got)
	}
	r.drain(q)
	if got, _ := q.Get(ra.ID); got.State != Landed {
		t.Fatalf("%s (%s)", got.State, got.Error)
	}
}

// A queued request asked again with review asks for review from then on.
func TestEnqueueAddsReview(t *testing.T) {
	r := newRepo(t)
	q := r.open(r.options())
	first := r.enqueue(q, "a")
	again, fresh, err := q.Enqueue("a", "a", true)
	if err != nil || fresh || again.ID != first.ID || !again.Review {
		t.Fatalf("Enqueue = %+v, %v, %v", again, fresh, err)
	}
	// And not the other way: a request without review keeps it.
	if again, _, _ := q.Enqueue("a", "human", false); !again.Review {
		t.Fatal("a request without review dropped the review")
	}
}
