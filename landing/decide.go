package landing

import "fmt"

// Facts is what a landing observed of the repository, at the start of an
// attempt or just before advancing base.
type Facts struct {
	// BaseTip is base's commit; "" when base does not exist.
	BaseTip string
	// BranchTip is the agent's branch's commit; "" when it does not exist.
	BranchTip string
	// BranchInBase: BranchTip is BaseTip or one of its ancestors.
	BranchInBase bool
	// MergedInBase: the request's Merged commit is BaseTip or one of its
	// ancestors (base was advanced to it).
	MergedInBase bool
	// Checkout is the work tree that has base checked out; "" when none.
	Checkout string
	// Dirty: Checkout has uncommitted changes (untracked files aside).
	Dirty bool
	// Rebasing: base is being rebased at Checkout (its HEAD is detached
	// until the rebase ends, when it sets base).
	Rebasing bool
	// AdvanceError is the error of the advance just tried; "" when none
	// was tried.
	AdvanceError string
}

// Action is the next step of a landing.
type Action int

// Actions a decision takes.
const (
	// ActMerge: merge the branch onto base in the integration worktree,
	// then verify.
	ActMerge Action = iota + 1
	// ActLanded: base already holds the request's merge commit; record it
	// landed.
	ActLanded
	// ActNothing: the branch has nothing base lacks.
	ActNothing
	// ActWait: the landing cannot proceed now; try again later.
	ActWait
	// ActFail: the landing cannot proceed at all.
	ActFail
	// ActRedo: base moved since the attempt started; land again on its
	// new tip.
	ActRedo
	// ActAdvanceRef: advance base by compare-and-swap (update-ref).
	ActAdvanceRef
	// ActAdvanceCheckout: advance base by a fast-forward merge in the work
	// tree that has it checked out, bringing its files along.
	ActAdvanceCheckout
	// ActReview: verify passed; the request waits for the human's review
	// of the tip it merged before base advances.
	ActReview
	// ActApprove: the human approves the request at its Tip: it is
	// queued again and lands (merged onto base's tip and verified again).
	ActApprove
	// ActRequeue: the branch moved since the request was verified: it is
	// queued again, to be verified and reviewed again.
	ActRequeue
	// ActReject: the human rejects the request: it fails with the reason.
	ActReject
	// ActRefuse: the approval or rejection asked cannot be done; nothing
	// changes.
	ActRefuse
)

var actionNames = map[Action]string{ActMerge: "merge", ActLanded: "landed", ActNothing: "nothing", ActWait: "wait",
	ActFail: "fail", ActRedo: "redo", ActAdvanceRef: "advance-ref", ActAdvanceCheckout: "advance-checkout",
	ActReview: "review", ActApprove: "approve", ActRequeue: "requeue", ActReject: "reject", ActRefuse: "refuse"}

func (a Action) String() string {
	if n, ok := actionNames[a]; ok {
		return n
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Decision is an Action and, for ActWait, ActFail, ActRedo, ActRequeue,
// ActReject and ActRefuse, why.
type Decision struct {
	Action Action
	Reason string
}

// dirtyReason is why a landing waits for a checkout of base with changes.
func dirtyReason(base, dir string) string {
	return fmt.Sprintf("base %s is checked out at %s with uncommitted changes; commit or stash them", base, dir)
}

// busyReason is why base cannot advance because of its checkout; "" when
// it can. Pure.
func busyReason(base string, f Facts) string {
	switch {
	case f.Checkout == "":
		return ""
	case f.Rebasing:
		return fmt.Sprintf("base %s is being rebased at %s; finish or abort the rebase", base, f.Checkout)
	case f.Dirty:
		return dirtyReason(base, f.Checkout)
	}
	return ""
}

// DecideStart decides how an attempt to land r onto base begins, from the
// facts observed then. It is a pure function.
func DecideStart(base string, r Request, f Facts) Decision {
	switch {
	case f.BaseTip == "":
		return Decision{ActFail, fmt.Sprintf("base branch %s does not exist", base)}
	case r.Merged != "" && f.MergedInBase:
		// Killed after advancing base, before recording it.
		return Decision{Action: ActLanded}
	case f.BranchTip == "":
		return Decision{ActFail, fmt.Sprintf("branch %s does not exist", r.Branch)}
	case f.BranchInBase:
		return Decision{ActNothing, "nothing to land"}
	case busyReason(base, f) != "":
		// Waiting before merging spares a verify run whose result could
		// not land anyway.
		return Decision{ActWait, busyReason(base, f)}
	}
	return Decision{Action: ActMerge}
}

// TurnStep is what DecideTurn decides for a request and its agent's turn.
type TurnStep int

// Steps DecideTurn takes.
const (
	// TurnNone: the request stays as it is.
	TurnNone TurnStep = iota
	// TurnHold: the request waits for its agent's turn (WaitingTurn).
	TurnHold
	// TurnRelease: the turn it waited for has ended and its work is
	// committed: the request is queued again and lands next.
	TurnRelease
)

var turnStepNames = map[TurnStep]string{TurnNone: "none", TurnHold: "hold", TurnRelease: "release"}

func (s TurnStep) String() string {
	if n, ok := turnStepNames[s]; ok {
		return n
	}
	return fmt.Sprintf("TurnStep(%d)", int(s))
}

// DecideTurn decides whether request r waits for its agent's turn: busy
// says that the agent has a turn in flight, or the commit of its worktree
// after a turn (or of what an earlier run left there) pending, so that
// its branch does not hold that work yet. An unfinished request (queued,
// landing, waiting) of a busy agent is held; one held is released once
// the agent is not busy, whether or not the turn committed anything. A
// request in review, and one the human approved at a tip (Approved), is
// never held: the approval is of that tip, and what a turn commits after
// it needs another review anyway. It is a pure function.
func DecideTurn(r Request, busy bool) TurnStep {
	switch {
	case r.State == WaitingTurn && busy:
		return TurnNone
	case r.State == WaitingTurn:
		return TurnRelease
	case !busy, r.State.Finished(), r.State == Review, r.Approved != "":
		return TurnNone
	}
	return TurnHold
}

// TurnReason is what a request held for agent's turn says (its Error).
// It is a pure function.
func TurnReason(agent string) string {
	return fmt.Sprintf("waits for %s's turn to end: it lands what that turn commits", agent)
}

// DecideAdvance decides how r, merged onto r.BaseBefore as r.Merged and
// verified, advances base, from the facts observed just before (and again
// after an advance that failed, f.AdvanceError). attempt counts this
// request's attempts in the current landing, from 1; after maxAttempts a
// base that keeps moving makes the request wait. It is a pure function.
func DecideAdvance(base string, r Request, f Facts, attempt, maxAttempts int) Decision {
	switch {
	case f.BaseTip == "":
		return Decision{ActFail, fmt.Sprintf("base branch %s was deleted during the landing", base)}
	case f.MergedInBase:
		// The advance happened (the error came after it).
		return Decision{Action: ActLanded}
	case f.BaseTip != r.BaseBefore:
		if attempt >= maxAttempts {
			return Decision{ActWait, fmt.Sprintf("base %s moved during each of %d attempts to land", base, attempt)}
		}
		return Decision{ActRedo, fmt.Sprintf("base %s moved from %s to %s during the landing", base, short(r.BaseBefore), short(f.BaseTip))}
	case busyReason(base, f) != "":
		return Decision{ActWait, busyReason(base, f)}
	case f.AdvanceError != "" && f.Checkout != "":
		return Decision{ActWait, fmt.Sprintf("could not bring the checkout of base %s at %s along: %s", base, f.Checkout, f.AdvanceError)}
	case f.AdvanceError != "":
		return Decision{ActWait, fmt.Sprintf("could not advance base %s: %s", base, f.AdvanceError)}
	case f.Checkout != "":
		return Decision{Action: ActAdvanceCheckout}
	}
	return Decision{Action: ActAdvanceRef}
}

// short abbreviates a commit id for a message.
func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
