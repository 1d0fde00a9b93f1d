package orchestrator

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/budget"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/preflight"
)

// gateHold is one fact that holds an agent and what decideGate answers to
// it alone, in decideGate's order of precedence.
type gateHold struct {
	name string
	set  func(*gateFacts)
	want gateDecision
}

func gateHolds() []gateHold {
	wait := func(r waitReason) gateDecision { return gateDecision{step: stepWait, why: r} }
	return []gateHold{
		{"outcome not recorded", func(f *gateFacts) { f.recordHeld = true }, wait(waitRecording)},
		{"no shim", func(f *gateFacts) { f.shimDown = true }, wait(waitNoShim)},
		{"shim not ready", func(f *gateFacts) { f.shimBusy = true }, wait(waitShimNotReady)},
		{"turn in flight", func(f *gateFacts) { f.inflight = true }, wait(waitTurnInFlight)},
		{"stopping", func(f *gateFacts) { f.stopping = true }, wait(waitStopping)},
		{"git step", func(f *gateFacts) { f.stepRuns = true }, wait(waitGitStep)},
		{"requests deferred", func(f *gateFacts) { f.ctlDeferred = true }, wait(waitRequests)},
		{"switching account", func(f *gateFacts) { f.switching = true }, wait(waitAccountSwitch)},
		{"placed on another account", func(f *gateFacts) { f.moveTo = "/acct/b" }, gateDecision{step: stepSwitchAccount, why: waitAccountSwitch}},
		{"parked", func(f *gateFacts) { f.parked = &preflight.Problem{Kind: preflight.KindLogin, Detail: "not logged in"} }, wait(waitParked)},
		{"health unchecked", func(f *gateFacts) { f.healthUnknown = true }, wait(waitCodexCheck)},
		{"base to merge", func(f *gateFacts) { f.syncBase = "main" }, gateDecision{step: stepSyncWorkspace, why: waitWorkspaceSync}},
		{"dispatch paused", func(f *gateFacts) { f.paused, f.pauseReason = true, "lunch" }, wait(waitPaused)},
		{"network: another probes", func(f *gateFacts) { f.net, f.netProber = dispatch.NetWait, "eng-2" }, wait(waitNetwork)},
		{"quota paused", func(f *gateFacts) { f.quotaHeld = true }, wait(waitQuota)},
		{"budget held", func(f *gateFacts) {
			f.budget = []budget.Hold{{Budget: "team/hour", Used: 2100, Tokens: 2000, Until: time.Date(2030, 3, 7, 15, 0, 0, 0, time.UTC)}}
		}, wait(waitBudget)},
		{"nothing ready", func(f *gateFacts) { f.head = "" }, wait(waitNothing)},
		{"retry back-off", func(f *gateFacts) { f.backoff = 3 * time.Second }, wait(waitBackoff)},
		{"refused sender", func(f *gateFacts) { f.refusal = "unknown sender" }, gateDecision{step: stepReject}},
		{"no slot", func(f *gateFacts) { f.slot = refused }, wait(waitSlot)},
		{"probe is another's", func(f *gateFacts) { f.admit = refused }, wait(waitProbe)},
	}
}

// goFacts are the facts of an agent that may start its oldest message:
// read, its slot taken and admitted.
func goFacts() gateFacts {
	return gateFacts{gateHead: gateHead{headRead: true, head: "m1", slot: granted, admit: granted}}
}

func TestDecideGateEachHold(t *testing.T) {
	if got := decideGate(goFacts()); got != (gateDecision{step: stepSend}) {
		t.Fatalf("nothing holds it: %+v, want a send", got)
	}
	seen := map[waitReason]bool{}
	for _, h := range gateHolds() {
		f := goFacts()
		h.set(&f)
		if got := decideGate(f); got != h.want {
			t.Errorf("%s: %+v, want %+v", h.name, got, h.want)
		}
		seen[h.want.why] = true
		if h.want.why != waitNone && waitDetail(h.want.why, f) == "" {
			t.Errorf("%s: no detail for %s", h.name, h.want.why)
		}
	}
	// Every reason status may show is one the decision gives.
	for _, r := range []string{control.WaitRecording, control.WaitNoShim, control.WaitShimNotReady, control.WaitTurnInFlight,
		control.WaitStopping, control.WaitGitStep, control.WaitRequests, control.WaitAccountSwitch, control.WaitParked,
		control.WaitCodexCheck, control.WaitWorkspaceSync, control.WaitDispatchPaused, control.WaitNetworkHeld,
		control.WaitQuotaPaused, control.WaitBudgetHeld, control.WaitNothingReady, control.WaitRetryBackoff,
		control.WaitSlot, control.WaitQuotaProbe} {
		if !seen[waitReason(r)] {
			t.Errorf("reason %s is never decided", r)
		}
	}
}

// TestDecideGatePrecedence: with every fact from the i-th on holding the
// agent, the i-th decides.
func TestDecideGatePrecedence(t *testing.T) {
	holds := gateHolds()
	for i, h := range holds {
		f := goFacts()
		for _, later := range holds[i:] {
			later.set(&f)
		}
		if got := decideGate(f); got != h.want {
			t.Errorf("%s with all after it: %+v, want %+v", h.name, got, h.want)
		}
	}
}

// TestDecideGateSteps: the actions a decision asks for before a turn, in
// order, and what their outcomes decide.
func TestDecideGateSteps(t *testing.T) {
	f := gateFacts{gateTeam: gateTeam{net: dispatch.NetTake, netProber: "eng-2"}}
	steps := []struct {
		learn func(*gateFacts)
		want  gateDecision
	}{
		{nil, gateDecision{step: stepTakeNetProbe, why: waitNetwork}},
		{func(f *gateFacts) { f.netTake = granted }, gateDecision{step: stepReadHead}},
		{func(f *gateFacts) { f.headRead, f.head = true, "m1" }, gateDecision{step: stepTakeSlot, why: waitSlot}},
		{func(f *gateFacts) { f.slot = granted }, gateDecision{step: stepAdmit, why: waitProbe}},
		{func(f *gateFacts) { f.admit = granted }, gateDecision{step: stepSend}},
	}
	for i, s := range steps {
		if s.learn != nil {
			s.learn(&f)
		}
		if got := decideGate(f); got != s.want {
			t.Fatalf("step %d: %+v, want %+v", i, got, s.want)
		}
	}
	// The probe taken by another first: the agent waits under the hold.
	f = gateFacts{gateTeam: gateTeam{net: dispatch.NetTake, netTake: refused}}
	if got := decideGate(f); got != (gateDecision{step: stepWait, why: waitNetwork}) {
		t.Errorf("probe lost: %+v", got)
	}
	// Every other step under a hold (the probe to give up, nothing to
	// send) waits; one that probes goes.
	for _, step := range []dispatch.NetStep{dispatch.NetWait, dispatch.NetRelease, dispatch.NetIdle} {
		if got := decideGate(gateFacts{gateTeam: gateTeam{net: step}}); got.why != waitNetwork || got.step != stepWait {
			t.Errorf("net step %d: %+v", step, got)
		}
	}
	if got := decideGate(gateFacts{gateTeam: gateTeam{net: dispatch.NetGo}}); got.step != stepReadHead {
		t.Errorf("the probe: %+v", got)
	}
}

func TestWaitDetail(t *testing.T) {
	f := goFacts()
	f.pauseReason = "lunch"
	f.budget = []budget.Hold{
		{Budget: "team/day", Used: 10, Tokens: 5, Until: time.Date(2030, 3, 7, 0, 0, 0, 0, time.UTC)},
		{Budget: "engineer/hour", Used: 2100, Tokens: 2000, Until: time.Date(2030, 3, 7, 15, 0, 0, 0, time.UTC)},
	}
	f.backoff = 2500 * time.Millisecond
	f.parked = &preflight.Problem{Kind: preflight.KindLogin, Detail: "codex is not logged in", Fix: "run codex login"}
	for r, want := range map[waitReason]string{
		waitPaused:  "the team is paused: lunch",
		waitBudget:  "held by budget engineer/hour: 2100 of 2000 tokens used; no new turn until 2030-03-07 15:00 UTC",
		waitBackoff: "message m1 waits 3s more for its retry back-off",
		waitParked:  "parked: " + f.parked.String(),
	} {
		if got := waitDetail(r, f); got != want {
			t.Errorf("%s: %q, want %q", r, got, want)
		}
	}
	if got := waitDetail(waitNone, f); got != "" {
		t.Errorf("none: %q", got)
	}
	if got := waitDetail(waitNetwork, gateFacts{gateTeam: gateTeam{netProber: "eng-2"}}); !strings.Contains(got, "eng-2 probes") {
		t.Errorf("network: %q", got)
	}
}
