package landing

import (
	"strings"
	"testing"
)

const (
	tipA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	tipB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	tipM = "cccccccccccccccccccccccccccccccccccccccc"
)

func TestDecideStart(t *testing.T) {
	queued := Request{ID: "r1", Agent: "a", Branch: "batty/a", State: Queued}
	crashed := queued
	crashed.State, crashed.Merged, crashed.BaseBefore = Landing, tipM, tipA
	tests := []struct {
		name   string
		r      Request
		f      Facts
		want   Action
		reason string
	}{
		{"no base", queued, Facts{BranchTip: tipB}, ActFail, "base branch main does not exist"},
		{"no branch", queued, Facts{BaseTip: tipA}, ActFail, "branch batty/a does not exist"},
		{"nothing new", queued, Facts{BaseTip: tipA, BranchTip: tipB, BranchInBase: true}, ActNothing, "nothing to land"},
		{"something new", queued, Facts{BaseTip: tipA, BranchTip: tipB}, ActMerge, ""},
		{"checkout clean", queued, Facts{BaseTip: tipA, BranchTip: tipB, Checkout: "/top"}, ActMerge, ""},
		{"checkout dirty", queued, Facts{BaseTip: tipA, BranchTip: tipB, Checkout: "/top", Dirty: true}, ActWait,
			"base main is checked out at /top with uncommitted changes; commit or stash them"},
		{"checkout rebasing", queued, Facts{BaseTip: tipA, BranchTip: tipB, Checkout: "/top", Rebasing: true}, ActWait,
			"base main is being rebased at /top; finish or abort the rebase"},
		{"dirty but nothing new", queued, Facts{BaseTip: tipA, BranchTip: tipB, BranchInBase: true, Checkout: "/top", Dirty: true}, ActNothing, "nothing to land"},
		// Killed after the advance, before recording it: no second merge.
		{"crash after advance", crashed, Facts{BaseTip: tipM, BranchTip: tipB, BranchInBase: true, MergedInBase: true}, ActLanded, ""},
		{"crash after advance, branch moved on", crashed, Facts{BaseTip: tipM, BranchTip: tipB, MergedInBase: true}, ActLanded, ""},
		{"crash before advance", crashed, Facts{BaseTip: tipA, BranchTip: tipB}, ActMerge, ""},
		{"merged recorded but not in base, branch in base", crashed, Facts{BaseTip: tipA, BranchTip: tipB, BranchInBase: true}, ActNothing, "nothing to land"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DecideStart("main", tt.r, tt.f)
			if d.Action != tt.want || d.Reason != tt.reason {
				t.Fatalf("DecideStart = %v %q, want %v %q", d.Action, d.Reason, tt.want, tt.reason)
			}
		})
	}
}

func TestDecideAdvance(t *testing.T) {
	r := Request{ID: "r1", Agent: "a", Branch: "batty/a", State: Landing, BaseBefore: tipA, Merged: tipM}
	tests := []struct {
		name    string
		f       Facts
		attempt int
		want    Action
		reason  string // a part of it
	}{
		{"base unmoved", Facts{BaseTip: tipA, BranchTip: tipB}, 1, ActAdvanceRef, ""},
		{"base checked out, clean", Facts{BaseTip: tipA, Checkout: "/top"}, 1, ActAdvanceCheckout, ""},
		{"base checked out, dirty", Facts{BaseTip: tipA, Checkout: "/top", Dirty: true}, 1, ActWait, "with uncommitted changes"},
		{"base being rebased", Facts{BaseTip: tipA, Checkout: "/top", Rebasing: true}, 1, ActWait, "being rebased"},
		{"base moved", Facts{BaseTip: tipB}, 1, ActRedo, "moved from aaaaaaaaaaaa to bbbbbbbbbbbb"},
		{"base moved, last attempt", Facts{BaseTip: tipB}, 3, ActWait, "during each of 3 attempts"},
		{"base moved, dirty", Facts{BaseTip: tipB, Checkout: "/top", Dirty: true}, 1, ActRedo, "moved"},
		{"base deleted", Facts{}, 1, ActFail, "deleted"},
		{"advanced already", Facts{BaseTip: tipM, MergedInBase: true, AdvanceError: "exit status 1"}, 1, ActLanded, ""},
		{"update-ref failed, base unmoved", Facts{BaseTip: tipA, AdvanceError: "cannot lock ref"}, 1, ActWait, "could not advance base main: cannot lock ref"},
		{"ff failed, base unmoved", Facts{BaseTip: tipA, Checkout: "/top", AdvanceError: "untracked files would be overwritten"}, 1, ActWait,
			"could not bring the checkout of base main at /top along: untracked files"},
		{"ff failed, base moved", Facts{BaseTip: tipB, Checkout: "/top", AdvanceError: "Not possible to fast-forward"}, 1, ActRedo, "moved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DecideAdvance("main", r, tt.f, tt.attempt, 3)
			if d.Action != tt.want || !strings.Contains(d.Reason, tt.reason) || (tt.reason == "") != (d.Reason == "") {
				t.Fatalf("DecideAdvance = %v %q, want %v with %q", d.Action, d.Reason, tt.want, tt.reason)
			}
		})
	}
}

func TestParseWorktrees(t *testing.T) {
	out := "worktree /top\nHEAD " + tipA + "\nbranch refs/heads/main\n\n" +
		"worktree /state/worktrees/.landing\nHEAD " + tipA + "\ndetached\n\n" +
		"worktree /gone\nHEAD " + tipB + "\nbranch refs/heads/old\nprunable gitdir file points to non-existent location\n\n" +
		"worktree /state/worktrees/a\nHEAD " + tipB + "\nbranch refs/heads/batty/a\nlocked\n\n"
	wts := parseWorktrees(out)
	if len(wts) != 4 || wts[0].Path != "/top" || wts[0].Branch != "refs/heads/main" || !wts[1].Detached ||
		!wts[2].Prunable || wts[3].Branch != "refs/heads/batty/a" || wts[3].Head != tipB {
		t.Fatalf("parseWorktrees = %+v", wts)
	}
	integ := "/state/worktrees/.landing"
	for _, tt := range []struct{ ref, want string }{
		{"refs/heads/main", "/top"},
		{"refs/heads/batty/a", "/state/worktrees/a"},
		{"refs/heads/old", ""}, // prunable: its directory is gone
		{"refs/heads/dev", ""},
	} {
		if got := checkoutOf(wts, tt.ref, integ); got != tt.want {
			t.Errorf("checkoutOf(%s) = %q, want %q", tt.ref, got, tt.want)
		}
	}
	if got := checkoutOf([]worktree{{Path: integ + "/", Branch: "refs/heads/main"}}, "refs/heads/main", integ); got != "" {
		t.Errorf("the integration worktree counted as a checkout of base: %q", got)
	}
	if got := parseWorktrees("HEAD x\nbranch y\n"); len(got) != 0 {
		t.Errorf("lines before any worktree made %+v", got)
	}
}

func TestParseIdent(t *testing.T) {
	for _, tt := range []struct{ in, name, email string }{
		{"batty <batty@localhost>", "batty", "batty@localhost"},
		{"Land Bot <land@example.com>", "Land Bot", "land@example.com"},
	} {
		name, email, err := parseIdent(tt.in)
		if err != nil || name != tt.name || email != tt.email {
			t.Errorf("parseIdent(%q) = %q %q %v", tt.in, name, email, err)
		}
	}
	for _, bad := range []string{"", "batty", "<a@b>", "batty <>", "batty <a@b", "a <b> c", "a\n <b@c>", "a <b c>"} {
		if _, _, err := parseIdent(bad); err == nil {
			t.Errorf("parseIdent(%q) accepted", bad)
		}
	}
}

func TestValidBranchName(t *testing.T) {
	for _, ok := range []string{"main", "master", "release/1.2", "dev-x", "a_b"} {
		if !validBranchName(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "-main", "--upload-pack=x", "a..b", "a b", "a~1", "a^", "a:b", "x.lock", "a/", "/a", "a//b",
		"a@{1}", "@", ".a", "a/.b", "a.", "a\x00b", "a\nb", "a*", "a?", "a[", "a\\b"} {
		if validBranchName(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestMergeMessage(t *testing.T) {
	if got := mergeMessage("batty/a", 1); got != "Land batty/a (1 commit)" {
		t.Errorf("one commit: %q", got)
	}
	if got := mergeMessage("batty/a", 3); got != "Land batty/a (3 commits)" {
		t.Errorf("three commits: %q", got)
	}
}

func TestDecideTurn(t *testing.T) {
	req := func(s State) Request { return Request{ID: "r1", Agent: "a", Branch: "batty/a", State: s} }
	approved := req(Queued)
	approved.Approved = tipA
	tests := []struct {
		name string
		r    Request
		busy bool
		want TurnStep
	}{
		{"queued, agent mid-turn", req(Queued), true, TurnHold},
		{"queued, agent idle", req(Queued), false, TurnNone},
		{"waiting, agent mid-turn", req(Waiting), true, TurnHold},
		{"found landing after a restart, agent preparing", req(Landing), true, TurnHold},
		{"held, turn goes on", req(WaitingTurn), true, TurnNone},
		{"held, turn committed", req(WaitingTurn), false, TurnRelease},
		{"in review", req(Review), true, TurnNone},
		{"approved at a tip", approved, true, TurnNone},
		{"landed", req(Landed), true, TurnNone},
		{"failed", req(Failed), true, TurnNone},
		{"nothing", req(Nothing), true, TurnNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideTurn(tt.r, tt.busy); got != tt.want {
				t.Fatalf("DecideTurn(%s, busy %v) = %v, want %v", tt.r.State, tt.busy, got, tt.want)
			}
		})
	}
}
