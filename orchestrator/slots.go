package orchestrator

import (
	"fmt"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/slots"
)

// newSlots returns the pool of the team's turn slots (limits and the
// hosts' concurrent_turns), nil when the team caps nothing.
func (d *Daemon) newSlots() *slots.Pool {
	l := slots.Limits{Turns: d.cfg.Limits.ConcurrentTurns, MinFree: d.cfg.Limits.MinFreeMemory, Hosts: map[string]int{}}
	for _, h := range d.cfg.Hosts {
		if h.ConcurrentTurns > 0 {
			l.Hosts[h.Name] = h.ConcurrentTurns
		}
	}
	if !l.Enabled() {
		return nil
	}
	p := slots.New(l, d.opts.Memory, d.slotGranted, d.memoryEpisode)
	p.ObserveWaits(d.slotWaited)
	return p
}

// slotWaited records that agent who got a slot after waiting for one
// (its next turn goes): the turn's wait, for the telemetry. Called on
// any goroutine; it never blocks on the agent.
func (d *Daemon) slotWaited(who string, waited time.Duration) {
	d.events.Append(eventlog.Event{Type: eventlog.EvSlotGranted, Agent: who, Detail: "waited " + waited.Round(time.Millisecond).String(),
		Data: eventlog.SlotGranted{WaitedMS: waited.Milliseconds()}})
}

// slotGranted tells agent who, waiting, that it holds a slot now: it
// looks at its inbox again. Called on any goroutine; it never blocks.
func (d *Daemon) slotGranted(who string) {
	if a := d.byName[who]; a != nil {
		a.poke()
	}
}

// memoryEpisode records the start (an alert, once per episode) or the end
// of a time when free memory here is below limits.min_free_memory.
func (d *Daemon) memoryEpisode(ep slots.Episode) {
	data := eventlog.Memory{Free: ep.Free, Min: ep.Min}
	if ep.Low {
		d.log.Warn("Free memory is low: no new turn starts here", "free", ep.Free, "min", ep.Min)
		d.events.Append(eventlog.Event{Type: eventlog.EvMemoryLow, Detail: fmt.Sprintf("%s available, below limits.min_free_memory %s",
			mib(ep.Free), mib(ep.Min)), Data: data})
		return
	}
	d.log.Info("Free memory is back", "free", ep.Free, "min", ep.Min)
	d.events.Append(eventlog.Event{Type: eventlog.EvMemoryRecovered, Detail: mib(ep.Free) + " available", Data: data})
}

// mib shows n bytes in MiB.
func mib(n uint64) string { return fmt.Sprintf("%d MiB", n>>20) }

// slotState is the state and the slot status shows for an agent in state
// with a turn in flight or not, that holds a slot or waits for one: an
// idle agent that waits is control.AgentWaitingForSlot; every other state
// is kept. It is a pure function.
func slotState(state string, inflight, holds, waits bool) (string, string) {
	switch {
	case inflight && holds:
		return state, control.SlotHeld
	case !inflight && waits:
		if state == string(protocol.StateIdle) {
			state = control.AgentWaitingForSlot
		}
		return state, control.SlotWaiting
	}
	return state, ""
}

// takeSlot asks the team's pool a slot for the agent's next turn: true
// when it holds one (kept until releaseSlot); otherwise it waits in the
// pool's queue and is poked once granted, or, with memory low here, looks
// again after Options.MemoryRecheck. Only run's goroutine calls it.
func (a *agent) takeSlot() bool {
	switch a.crew.turnSlots().Acquire(a.def.Name, a.def.Host) {
	case slots.Granted:
		return true
	case slots.LowMemory:
		a.retryIn(a.opts.MemoryRecheck)
	}
	return false
}

// endTurn marks the end of the turn of the message in flight, if any: its
// slot is given back (releaseSlot), and until the message leaves flight
// (its outcome recorded, or it is back in the queue) status shows the
// agent finishing, not running (flightState). Only run's goroutine calls
// it.
func (a *agent) endTurn() {
	a.releaseSlot()
	ended := a.inflight != nil
	a.setSnap(func(s *agentSnap) { s.ended = ended })
}

// flightState is the state status shows for an agent in state, with a
// message in flight or not, whose turn has ended or not: once the turn of
// the message in flight has ended, while its edits are committed and its
// reply and outcome written, the agent shows control.AgentFinishing in
// place of the shim's states (starting, idle, working) and of
// control.AgentWaitingForNetwork — it runs nothing and holds no slot, so
// it is not counted among the turns that run (control.AgentStatus.TurnRuns);
// every other state (parked, restarting, stopping, failed …) is kept. It
// is a pure function.
func flightState(state string, inflight, ended bool) string {
	if !inflight || !ended {
		return state
	}
	switch state {
	case string(protocol.StateStarting), string(protocol.StateIdle), string(protocol.StateWorking), control.AgentWaitingForNetwork:
		return control.AgentFinishing
	}
	return state
}

// releaseSlot gives back the agent's slot, if it holds one: its turn has
// ended (completed, failed, interrupted, refused by the shim, cut off by
// the shim's exit), or it was granted one it will not use now. Its place
// in the queue, if it waits, is kept. It never blocks.
func (a *agent) releaseSlot() { a.crew.turnSlots().Release(a.def.Name) }
