package orchestrator

import (
	"fmt"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/protocol"
)

// threadSwitch is what opSwitch asks: make thread the agent's (restored,
// one of its archived threads), or, fork, have its next turn fork thread
// into a new one. from is the agent whose thread it is (a fork); its home
// is the Codex home where that agent's rollouts are ("" unknown) and
// portable whether they are on this machine.
type threadSwitch struct {
	thread   string
	fork     bool
	from     string
	fromHome string
	portable bool
}

// switchThread applies sw like a reset (see reset): with no turn in flight
// the worktree is committed first, then the state changes and the shim is
// told; then gets the result.
func (a *agent) switchThread(sw threadSwitch, then func(error)) {
	if a.inflight != nil {
		then(a.applySwitch(sw))
		return
	}
	a.commitWorkspace(nil, true, "work in progress when the thread was switched", func() { then(a.applySwitch(sw)) })
}

// applySwitch changes the agent's state for sw, saves it, and sends the
// shim a SwitchThread (taken between turns: a turn in flight ends on its
// thread). The thread left is archived, in batty's records and in Codex's
// store.
func (a *agent) applySwitch(sw threadSwitch) error {
	now := time.Now().UTC()
	prev := a.st
	old := a.st.ThreadID
	var usage protocol.Usage
	if sw.fork {
		home, err := forkHome(a.def.Name, sw, a.where().ThreadsPortable(), a.acct.account)
		if err != nil {
			return err
		}
		if home != "" {
			if _, err := codex.CarryThread(home, a.acct.account, sw.thread); err != nil {
				return fmt.Errorf("the thread could not be carried to %s's Codex home: %w", a.def.Name, err)
			}
			a.log.Info("Thread carried for a fork", "thread", sw.thread, "from", home, "to", a.acct.account)
		}
		a.st.Fork(sw.thread, "set aside for a fork of thread "+sw.thread, now)
	} else {
		at, err := a.st.Restore(sw.thread, "set aside for thread "+sw.thread+", restored", now)
		if err != nil {
			return err
		}
		usage = at.Usage
		if at.Home != "" && at.Home != a.acct.account && a.where().ThreadsPortable() && !codex.HasRollout(a.acct.account, at.ID) {
			// Archived on another account: its rollout is carried to
			// this one (as an account rotation carries a thread).
			if _, err := codex.CarryThread(at.Home, a.acct.account, at.ID); err != nil {
				a.st = prev
				return fmt.Errorf("the thread could not be carried from %s to %s: %w", at.Home, a.acct.account, err)
			}
		}
	}
	if a.failed {
		a.st.SetError("", "", time.Time{})
		a.retryNow()
	}
	err := a.writeState()
	a.stateSaved(err)
	if err != nil {
		a.st = prev
		return err
	}
	if a.p != nil {
		a.p.Send(protocol.SwitchThread{ThreadID: sw.thread, Fork: sw.fork, Archive: old != "", Usage: usage, Reason: switchWord(sw)})
	}
	a.emit(eventlog.Event{Type: eventlog.EvThreadReset, Agent: a.def.Name, Detail: switchWord(sw), Data: eventlog.ThreadReset{Archived: old}})
	return nil
}

// switchWord says what sw does, for the log and the shim.
func switchWord(sw threadSwitch) string {
	if sw.fork {
		return "fork of thread " + sw.thread
	}
	return "thread " + sw.thread + " restored"
}

// forkHome decides where the rollout of the thread sw forks comes from
// for agent (here whether the agent runs on this machine, home its Codex
// home): "" when the agent's Codex finds it where it is (its own thread,
// or one in the same Codex home), else the home to carry it from
// (codex.CarryThread). A thread of another agent is refused when either
// agent runs on another host (its rollouts are there, not here), or when
// its home is not known. Pure but for the look at the homes' files.
func forkHome(agent string, sw threadSwitch, here bool, home string) (string, error) {
	switch {
	case sw.from == agent:
		return "", nil
	case !here || !sw.portable:
		return "", fmt.Errorf("thread %s is %s's, and %s or %s runs on another host, where its threads' rollouts are: fork a thread of the agent's own there", sw.thread, sw.from, sw.from, agent)
	case codex.HasRollout(home, sw.thread):
		return "", nil
	case sw.fromHome != "" && codex.HasRollout(sw.fromHome, sw.thread):
		return sw.fromHome, nil
	}
	return "", fmt.Errorf("no rollout of thread %s in %s's Codex home (%s) nor in %s's (%s)", sw.thread, agent, home, sw.from, sw.fromHome)
}

// serveSwitch asks the agent to restore a thread or fork one (see
// agent.switchThread), answered as a reset is.
func (d *Daemon) serveSwitch(c control.Conn) {
	req := c.Req
	a, ok := d.byName[req.Agent]
	if !ok {
		c.Reply(control.Response{Error: fmt.Sprintf("no agent %q in team %q", req.Agent, d.cfg.Name)})
		return
	}
	if !codex.IsThreadID(req.Thread) {
		c.Reply(control.Response{Error: fmt.Sprintf("%q is not a thread id", req.Thread)})
		return
	}
	sw := threadSwitch{thread: req.Thread, fork: req.Op == control.OpFork, from: req.Agent, portable: a.where().ThreadsPortable()}
	if sw.fork && req.From != "" {
		sw.from = req.From
		if f, ok := d.byName[req.From]; ok {
			sw.fromHome, sw.portable = f.snapshot().st.CodexHome, f.where().ThreadsPortable()
		}
	}
	if !sw.fork && req.From != "" && req.From != req.Agent {
		c.Reply(control.Response{Error: restoreOthers(req.Thread, req.From, req.Agent)})
		return
	}
	var got agentAnswer
	d.askAgents(c, []agentAsk{{a: a, c: agentCtl{op: opSwitch, sw: sw}, got: func(ans agentAnswer) { got = ans }}},
		func() control.Response { return resetResponse(req.Agent, got) })
}

// restoreOthers refuses the restore of another agent's thread: two agents
// resuming one thread would write one rollout, their turns interleaved in
// one history; a fork gives the agent a copy of its own.
func restoreOthers(thread, owner, agent string) string {
	return fmt.Sprintf("thread %s is %s's: %s may only restore its own threads (batty threads fork %s --to %s gives it a new thread with that history)", thread, owner, agent, thread, agent)
}
