package orchestrator

import (
	"fmt"
	"time"

	"github.com/battyhq/batty/budget"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/preflight"
)

// May this agent take a turn now, and if not, why: dispatch gathers the
// facts (gateFacts), decideGate decides, dispatch acts on the decision and
// gives the facts its action learned back to decideGate, until a decision
// ends the look (a wait, or a message sent).

// waitReason is why an agent starts no turn now: a control.Wait* code, ""
// when nothing holds it.
type waitReason string

// The reasons, in decideGate's order of precedence.
const (
	waitNone          waitReason = ""
	waitRecording     waitReason = control.WaitRecording
	waitNoShim        waitReason = control.WaitNoShim
	waitShimNotReady  waitReason = control.WaitShimNotReady
	waitTurnInFlight  waitReason = control.WaitTurnInFlight
	waitStopping      waitReason = control.WaitStopping
	waitGitStep       waitReason = control.WaitGitStep
	waitRequests      waitReason = control.WaitRequests
	waitAccountSwitch waitReason = control.WaitAccountSwitch
	waitParked        waitReason = control.WaitParked
	waitCodexCheck    waitReason = control.WaitCodexCheck
	waitWorkspaceSync waitReason = control.WaitWorkspaceSync
	waitPaused        waitReason = control.WaitDispatchPaused
	waitNetwork       waitReason = control.WaitNetworkHeld
	waitQuota         waitReason = control.WaitQuotaPaused
	waitBudget        waitReason = control.WaitBudgetHeld
	waitNothing       waitReason = control.WaitNothingReady
	waitBackoff       waitReason = control.WaitRetryBackoff
	waitSlot          waitReason = control.WaitSlot
	waitProbe         waitReason = control.WaitQuotaProbe
)

// turnStep is what dispatch does on a decision.
type turnStep int

const (
	// stepWait: no turn now, for the decision's reason; the look ends.
	stepWait turnStep = iota
	// stepSwitchAccount: begin the move of the shim to the account the
	// quota book places the agent on; the look ends.
	stepSwitchAccount
	// stepSyncWorkspace: start merging the new base into the worktree (a
	// step); the look ends, the agent looks again once it has ended.
	stepSyncWorkspace
	// stepTakeNetProbe: take over the probe of the account's network
	// hold, then decide again (gateFacts.netTake).
	stepTakeNetProbe
	// stepReadHead: read the oldest pending message, then decide again
	// (gateFacts.head*).
	stepReadHead
	// stepReject: record the oldest message rejected (gateFacts.refusal),
	// then read the next.
	stepReject
	// stepTakeSlot: ask the team's pool a slot, then decide again.
	stepTakeSlot
	// stepAdmit: ask the quota book to admit the message (maybe as the
	// paused account's probe), then decide again.
	stepAdmit
	// stepSend: claim the message and send it to the shim; the look ends.
	stepSend
)

// tried is the result of an action dispatch takes on a decision and tells
// the next decision.
type tried int

const (
	untried tried = iota
	granted
	refused
)

// gateFacts is what decideGate decides on: what dispatch knows of the
// agent, its account and the team, and what its actions learned during
// this look. The zero value is an agent that may go once its oldest
// message is read.
type gateFacts struct {
	gateSelf
	gateTeam
	gateHead
}

// gateSelf is the agent's own state.
type gateSelf struct {
	recordHeld  bool // an outcome waits to be written (agent.pending)
	shimDown    bool // no shim runs
	shimBusy    bool // the shim is not ready for a message
	inflight    bool // a message is in flight
	stopping    bool
	stepRuns    bool // a git or ssh step runs (agent.step)
	ctlDeferred bool // control requests wait to be applied
	switching   bool // a move to another account is under way
	// moveTo is the account the quota book places the agent on when it is
	// not the one its shim runs on ("" when it is).
	moveTo        string
	parked        *preflight.Problem
	healthUnknown bool // the first check of its Codex has not answered
	// syncBase is the base to merge into the worktree at this idle
	// moment, "" when no merge waits.
	syncBase string
}

// gateTeam is what holds the agent's account or the whole team.
type gateTeam struct {
	paused      bool   // the dispatch gate is closed
	pauseReason string // why (the gate's reason)
	// net is the agent's step under its account's network hold
	// (dispatch.NetGo when there is none); netProber the agent that probes.
	net       dispatch.NetStep
	netProber string
	netMine   bool  // the agent could probe (canProbe)
	netTake   tried // the take-over of the probe (dispatch.NetTake)
	quotaHeld bool  // the account's usage-limit pause lets it not try
	budget    []budget.Hold
}

// gateHead is the oldest pending message, read once the rest lets the
// agent go, and what the actions for its turn answered.
type gateHead struct {
	headRead bool
	head     string        // its id, "" for none
	backoff  time.Duration // how long it still waits for its retry back-off (backoffWait)
	refusal  string        // why it may not be delivered ("" = it may)
	slot     tried         // the pool's answer for the turn's slot
	admit    tried         // the quota book's
}

// gateDecision is decideGate's answer: what dispatch does now and, when
// that ends the look without a turn, why.
type gateDecision struct {
	step turnStep
	why  waitReason
}

// decideGate decides whether the agent may take a turn now and, if not,
// why: the first fact that holds it, in the order of the waitReason
// constants. An action the decision needs first (reading the oldest
// message, taking the network probe, a slot, the quota's admission) is
// asked for as a step; dispatch takes it and decides again with what it
// learned. It is a pure function.
func decideGate(f gateFacts) gateDecision {
	wait := func(r waitReason) gateDecision { return gateDecision{step: stepWait, why: r} }
	switch {
	case f.recordHeld:
		return wait(waitRecording)
	case f.shimDown:
		return wait(waitNoShim)
	case f.shimBusy:
		return wait(waitShimNotReady)
	case f.inflight:
		return wait(waitTurnInFlight)
	case f.stopping:
		return wait(waitStopping)
	case f.stepRuns:
		return wait(waitGitStep)
	case f.ctlDeferred:
		return wait(waitRequests)
	case f.switching:
		// A parked agent moves too: the account the book places it on
		// may run codex.
		return wait(waitAccountSwitch)
	case f.moveTo != "":
		return gateDecision{step: stepSwitchAccount, why: waitAccountSwitch}
	case f.parked != nil:
		return wait(waitParked)
	case f.healthUnknown:
		return wait(waitCodexCheck)
	case f.syncBase != "":
		// An idle moment: the new base is merged before the next message
		// (which may be the note of a conflict it left).
		return gateDecision{step: stepSyncWorkspace, why: waitWorkspaceSync}
	case f.paused:
		return wait(waitPaused)
	case f.net == dispatch.NetTake && f.netTake == untried:
		return gateDecision{step: stepTakeNetProbe, why: waitNetwork}
	case f.net == dispatch.NetTake && f.netTake == refused,
		f.net != dispatch.NetGo && f.net != dispatch.NetTake:
		return wait(waitNetwork)
	case f.quotaHeld:
		return wait(waitQuota)
	case len(f.budget) > 0:
		// The messages wait in the inbox until the window rolls over or
		// `batty resume`.
		return wait(waitBudget)
	case !f.headRead:
		return gateDecision{step: stepReadHead}
	case f.head == "":
		return wait(waitNothing)
	case f.backoff > 0:
		// Messages keep their order: the ones behind wait too.
		return wait(waitBackoff)
	case f.refusal != "":
		return gateDecision{step: stepReject}
	case f.slot == untried:
		return gateDecision{step: stepTakeSlot, why: waitSlot}
	case f.slot == refused:
		return wait(waitSlot)
	case f.admit == untried:
		return gateDecision{step: stepAdmit, why: waitProbe}
	case f.admit == refused:
		return wait(waitProbe)
	}
	return gateDecision{step: stepSend}
}

// waitDetail says reason r for a human, from the facts it was decided on.
// It is a pure function.
func waitDetail(r waitReason, f gateFacts) string {
	switch r {
	case waitRecording:
		return "its last outcome is not written yet: no new message until it is"
	case waitNoShim:
		return "its shim is not running"
	case waitShimNotReady:
		return "its shim is not ready yet"
	case waitTurnInFlight:
		return "a turn is in flight"
	case waitStopping:
		return "it is stopping"
	case waitGitStep:
		return "a git or ssh step of its workspace runs"
	case waitRequests:
		return "control requests wait to be applied"
	case waitAccountSwitch:
		return "its shim moves to another account"
	case waitParked:
		if f.parked != nil {
			return "parked: " + f.parked.String()
		}
		return "parked"
	case waitCodexCheck:
		return "the first check of its Codex has not answered yet"
	case waitWorkspaceSync:
		return "merging " + f.syncBase + " into its branch"
	case waitPaused:
		if f.pauseReason != "" {
			return "the team is paused: " + f.pauseReason
		}
		return "the team is paused"
	case waitNetwork:
		if f.netProber != "" {
			return "its account cannot reach the API; " + f.netProber + " probes it"
		}
		return "its account cannot reach the API"
	case waitQuota:
		return "its account is paused by a usage limit"
	case waitBudget:
		h := budgetHoldStatus(f.budget)
		if h == nil {
			return "held by a token budget"
		}
		return fmt.Sprintf("held by budget %s: %d of %d tokens used; no new turn until %s", h.Budget, h.Used, h.Tokens, h.Until.UTC().Format("2006-01-02 15:04 MST"))
	case waitNothing:
		return "no message is ready: still being written"
	case waitBackoff:
		return fmt.Sprintf("message %s waits %s more for its retry back-off", f.head, f.backoff.Round(time.Second))
	case waitSlot:
		return "waiting for a slot under the team's limits"
	case waitProbe:
		return "its paused account's probe turn is another message's"
	}
	return ""
}
