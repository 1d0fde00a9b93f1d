package orchestrator

import (
	"time"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/usage"
	"github.com/battyhq/batty/workspaces"
)

// ledgerTurn appends the usage of m's turn e to the usage ledger (again:
// m goes back to the queue). It runs as the turn's end arrives, before its
// outcome is recorded; a failure is logged and told once per turn as a
// warning, and the turn is held by the ledger to be written with the next.
func (a *agent) ledgerTurn(m inbox.Message, e protocol.TurnFinished, again bool) {
	t := usage.Turn{At: a.opts.BudgetClock.Now().UTC(), Agent: a.def.Name, Role: a.def.Role, Account: a.acct.name(), Host: a.def.Host,
		Model: a.def.Codex.Model, Runtime: a.def.Codex.Runtime, Message: m.ID, Attempt: m.Attempt,
		Tokens: usage.Tokens{Input: e.Usage.Input, CachedInput: e.Usage.CachedInput, Output: e.Usage.Output, ReasoningOutput: e.Usage.ReasoningOutput},
		Thread: e.ThreadID, ThreadTokens: usage.Tokens{Input: e.Thread.Input, CachedInput: e.Thread.CachedInput, Output: e.Thread.Output, ReasoningOutput: e.Thread.ReasoningOutput},
		DurationMS: e.Duration.Milliseconds(), Status: string(e.Status), Failure: string(e.Failure), Again: again}
	added, err := a.ledger.AppendTurn(t)
	if err != nil {
		a.log.Error("Usage ledger", "message", m.ID, "error", err)
		a.emit(eventlog.Event{Type: eventlog.EvWarning, Agent: a.def.Name, Message: m.ID, Detail: "usage ledger: " + err.Error()})
	}
	if added {
		// Counted once, as the ledger counts it (a turn held in memory
		// to be written counts too).
		a.crew.budgetTurn(t)
	}
}

// journalTurn records m's turn e in the agent's turn journal (again: m
// goes back to the queue), with the commands it ran (as the shim reported
// them) and the commit it made and the files that commit changed, once its edits are
// committed and before its outcome is recorded (searchindex.Keeper.Append:
// one fsynced line; the index follows on its own goroutine). A failure is
// logged and told as a warning: the turn goes on.
func (a *agent) journalTurn(m inbox.Message, e protocol.TurnFinished, again bool) {
	c := a.worktree.turnCommitOf(m.ID)
	t := journal.Turn{Agent: a.def.Name, Role: a.def.Role, Account: a.acct.name(), Host: a.def.Host,
		Message: m, Finished: e, At: a.opts.BudgetClock.Now().UTC(), Again: again, Files: c.files}
	for _, x := range e.Commands {
		c := journal.Command{Command: x.Command, Output: x.Output}
		if x.ExitCode >= 0 {
			code := x.ExitCode
			c.ExitCode = &code
		}
		t.Commands = append(t.Commands, c)
	}
	if c.head != "" {
		t.Commit = journal.Commit{SHA: c.head, Branch: workspaces.Branch(a.def.Name)}
	}
	if err := a.journal.Append(t); err != nil {
		a.log.Error("Turn journal", "message", m.ID, "error", err)
		a.emit(eventlog.Event{Type: eventlog.EvWarning, Agent: a.def.Name, Message: m.ID, Detail: "turn journal: " + err.Error()})
	}
}

// ledgerLimits records the rate-limit windows of snapshot e in the usage
// ledger (a window when it changed), at the time it arrives.
func (a *agent) ledgerLimits(e protocol.RateLimits) {
	at := time.Now().UTC() // the daemon's clock, as the turns' (a shim may run on another host)
	samples := make([]usage.LimitSample, 0, len(e.Windows))
	for _, w := range e.Windows {
		samples = append(samples, usage.LimitSample{At: at, Account: a.acct.name(), Agent: a.def.Name, Window: w.Name,
			UsedPct: w.UsedPct, WindowMinutes: w.WindowMinutes, ResetsAt: w.ResetsAt})
	}
	if _, err := a.ledger.AppendLimits(samples); err != nil {
		a.log.Error("Usage ledger: rate limits", "error", err)
	}
}

// threadFromLedger takes the running total of the agent's thread from its
// last turn in the ledger when that turn ran on the thread its state names:
// the ledger is written before the state, so a daemon killed in between
// left the state one turn behind, and the next turn's usage (the
// difference from the total) would count that turn's tokens again. Called
// once, before the agent runs.
func (a *agent) threadFromLedger() {
	id, total, ok := a.ledger.LastThread(a.def.Name)
	if !ok || id == "" || id != a.st.ThreadID {
		return
	}
	u := protocol.Usage{Input: total.Input, CachedInput: total.CachedInput, Output: total.Output, ReasoningOutput: total.ReasoningOutput}
	if u != a.st.ThreadUsage {
		a.log.Info("Thread total taken from the usage ledger", "thread", id, "state_input", a.st.ThreadUsage.Input, "ledger_input", u.Input)
		a.st.ThreadUsage = u
	}
}
