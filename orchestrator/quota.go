package orchestrator

import (
	"fmt"
	"time"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
)

// pokeNames pokes the named agents but skip.
func (d *Daemon) pokeNames(names []string, skip string) {
	for _, n := range names {
		if a := d.byName[n]; a != nil && n != skip {
			a.poke()
		}
	}
}

// pokeAccount pokes the agents on account but skip.
func (d *Daemon) pokeAccount(account, skip string) {
	for _, b := range d.agents {
		if b.def.Name != skip && b.snapshot().account == account {
			b.poke()
		}
	}
}

// canProbe reports whether agent could send a probe turn now
// (agent.canProbe); false for no such agent.
func (d *Daemon) canProbe(agent string) bool {
	a := d.byName[agent]
	return a != nil && a.canProbe()
}

// startProbes lets each account whose pause has run out send one probe:
// the oldest held message of its agents, on that message's agent (any
// agent when none holds one). Run's goroutine calls it.
func (d *Daemon) startProbes(now time.Time) {
	for _, key := range d.quota.Due(now) {
		agents, p, ok := d.quota.Account(key)
		if !ok {
			continue
		}
		prober, msg := d.oldestHeld(agents)
		moves, err := d.quota.StartProbe(key, prober)
		if err != nil {
			d.log.Error("Saving the quota state failed", "error", err)
		}
		d.log.Info("Usage limit pause ran out: probing", "account", key, "agent", prober, "message", msg)
		d.events.Append(eventlog.Event{Type: eventlog.EvQuotaProbe, Agent: prober, Message: msg, Detail: "pause ran out: one probe turn",
			Data: eventlog.QuotaProbe{Account: key, Result: eventlog.ProbeStart, FailedProbes: p.Probes}})
		if prober != "" {
			d.byName[prober].poke()
		} else {
			d.pokeNames(agents, "")
		}
		d.switched(moves, "return", time.Time{})
	}
}

// oldestHeld returns the agent (among agents, not failed, stopped or
// parked) with
// the oldest pending message, and that message; "" when none has one.
func (d *Daemon) oldestHeld(agents []string) (string, string) {
	var best string
	var oldest inbox.Message
	for _, n := range agents {
		a := d.byName[n]
		if a == nil {
			continue
		}
		if s := a.snapshot(); s.state == agentFailed || s.state == agentStopped || parkedNow(s) != nil {
			continue
		}
		pending, _ := a.box.Pending()
		if len(pending) == 0 {
			continue
		}
		m := pending[0]
		if best == "" || m.CreatedAt.Before(oldest.CreatedAt) || (m.CreatedAt.Equal(oldest.CreatedAt) && m.ID < oldest.ID) {
			best, oldest = n, m
		}
	}
	return best, oldest.ID
}

// armQuota (re)arms the timer of the next account probe.
func (d *Daemon) armQuota(t *time.Timer) *time.Timer {
	if t != nil {
		t.Stop()
	}
	at := d.quota.NextWake()
	if at.IsZero() {
		return nil
	}
	return time.NewTimer(max(time.Until(at), 0))
}

// resumeAccounts opens every paused account (`batty resume`) and reports
// whether one was paused.
func (d *Daemon) resumeAccounts(why string) []string {
	keys, moves, err := d.quota.ResumeAll()
	if err != nil {
		d.log.Error("Saving the quota state failed", "error", err)
	}
	d.switched(moves, "return", time.Time{})
	for _, k := range keys {
		d.events.Append(eventlog.Event{Type: eventlog.EvQuotaResumed, Detail: why, Data: eventlog.QuotaResumed{Account: k}})
	}
	if len(keys) > 0 {
		d.pokeAll()
		d.kickRoute()
	}
	return keys
}

// migrateQuotaGate turns a team-wide quota pause left in dispatch.json by
// an earlier version into a pause of every account until the same time.
func (d *Daemon) migrateQuotaGate() error {
	st := d.gate.State()
	if !st.Paused || st.Kind != project.PauseQuota {
		return nil
	}
	now := time.Now()
	for _, v := range d.quota.Views() {
		if v.Pause == nil && len(v.Agents) > 0 {
			if _, err := d.quota.Hit(v.Agents[0], "", "", st.Reason, st.ResumeAt, now); err != nil {
				return err
			}
		}
	}
	_, err := d.gate.Resume()
	return err
}

// Reasons recorded in inbox.Message.Retry.
const (
	retryQuota = "quota" // the earlier attempt hit a usage limit
	retryAuth  = "auth"  // the earlier attempt failed to authenticate
)

// retryOf is the Retry recorded with a message put back after failure f.
func retryOf(f protocol.FailureKind) string {
	switch f {
	case protocol.FailQuota:
		return retryQuota
	case protocol.FailAuth:
		return retryAuth
	}
	return ""
}

// limitRetryNote is the prompt header's note for a message put back after a
// usage limit or a failed login ("" otherwise): the model never answered
// the earlier attempt, and Codex keeps that unanswered copy in the thread,
// so the agent is told why it sees the message again. It is a pure
// function.
func limitRetryNote(m inbox.Message) string {
	switch m.Retry {
	case retryQuota:
		return fmt.Sprintf("retried after a usage limit, attempt %d; your earlier copy of this message was not answered", m.Attempt)
	case retryAuth:
		return fmt.Sprintf("retried after a login failure, attempt %d; your earlier copy of this message was not answered", m.Attempt)
	}
	return ""
}
