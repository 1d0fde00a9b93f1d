package orchestrator

import (
	"fmt"
	"sync"
	"time"

	"github.com/battyhq/batty/budget"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/schedule"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/usage"
)

// budgetBook follows the team's token budgets (team.yaml budgets; the
// decisions are package budget's): the use of each in its current window,
// counted from the usage ledger at start and from each turn appended to it
// since, and the marks of the alerts sent and the resumes given, kept in
// state/budgets.json. Safe for concurrent use: the agents' goroutines add
// their turns and ask whether they may take one; the daemon's resumes.
type budgetBook struct {
	clock  schedule.Clock
	loc    *time.Location
	layout project.Layout

	mu      sync.Mutex
	budgets []team.Budget
	starts  []time.Time // the start of each budget's current window
	used    []int64     // each budget's use in it
	st      budget.State
	// changed (buffered 1) is signalled when a budget was reached or
	// resumed: the daemon arms its timer for the next window's end.
	changed chan struct{}
}

// budgetAlert is an alert a turn's use calls for.
type budgetAlert struct {
	b          team.Budget
	alert      budget.Alert
	used       int64
	start, end time.Time
}

// newBudgetBook reads the budget state and counts, of turns (the ledger's
// at the daemon's start, usage.Ledger.TakeOpened), those of the budgets'
// current windows (by clock, in loc).
func newBudgetBook(cfg *team.Config, l project.Layout, turns []usage.Turn, clock schedule.Clock, loc *time.Location) (*budgetBook, error) {
	bk := &budgetBook{clock: clock, loc: loc, layout: l, budgets: cfg.Budgets, changed: make(chan struct{}, 1),
		starts: make([]time.Time, len(cfg.Budgets)), used: make([]int64, len(cfg.Budgets))}
	if err := project.LoadJSON(l, project.BudgetsName, &bk.st); err != nil {
		return nil, err
	}
	if bk.st.Marks == nil {
		bk.st.Marks = map[string]budget.Mark{}
	}
	// The marks of budgets the team file no longer has are dropped at the
	// next save.
	keep := map[string]budget.Mark{}
	for _, b := range bk.budgets {
		if m, ok := bk.st.Marks[b.Key()]; ok {
			keep[b.Key()] = m
		}
	}
	bk.st.Marks = keep
	if len(bk.budgets) == 0 {
		return bk, nil
	}
	now := clock.Now()
	for i, b := range bk.budgets {
		var end time.Time
		bk.starts[i], end = budget.Window(b.Per, now, loc)
		bk.used[i] = budget.Used(b, turns, bk.starts[i], end)
	}
	return bk, nil
}

// roll moves budget i to the window holding at when it is a later one.
// Under mu.
func (bk *budgetBook) roll(i int, at time.Time) (start, end time.Time) {
	start, end = budget.Window(bk.budgets[i].Per, at, bk.loc)
	if start.After(bk.starts[i]) {
		bk.starts[i], bk.used[i] = start, 0
	}
	return start, end
}

// save writes the marks. Under mu.
func (bk *budgetBook) save() error {
	bk.st.V = budget.StateVersion
	return project.SaveJSON(bk.layout, project.BudgetsName, bk.st)
}

func (bk *budgetBook) signal() {
	select {
	case bk.changed <- struct{}{}:
	default:
	}
}

// add counts turn t in the budgets that cover its agent and returns the
// alerts their use calls for, marked as sent (in the state file: the
// error says when it could not be written).
func (bk *budgetBook) add(t usage.Turn) ([]budgetAlert, error) {
	bk.mu.Lock()
	defer bk.mu.Unlock()
	var out []budgetAlert
	for i, b := range bk.budgets {
		if !budget.Covers(b, t.Agent, t.Role) {
			continue
		}
		start, end := bk.roll(i, t.At)
		if !start.Equal(bk.starts[i]) {
			continue // a turn of a window gone by
		}
		bk.used[i] = sat(bk.used[i], t.Tokens.Total())
		m, a := budget.Decide(b, bk.used[i], bk.st.Marks[b.Key()], start)
		if a == budget.AlertNone {
			continue
		}
		bk.st.Marks[b.Key()] = m
		out = append(out, budgetAlert{b: b, alert: a, used: bk.used[i], start: start, end: end})
	}
	if len(out) == 0 {
		return nil, nil
	}
	bk.signal()
	if err := bk.save(); err != nil {
		return out, fmt.Errorf("save the budget state: %w", err)
	}
	return out, nil
}

func sat(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return 1<<63 - 1
}

// holds returns the budgets that hold the agent named agent, of role
// role, now: reached in their window and not resumed for it.
func (bk *budgetBook) holds(agent, role string) []budget.Hold {
	if bk == nil {
		return nil
	}
	now := bk.clock.Now()
	bk.mu.Lock()
	defer bk.mu.Unlock()
	var hs []budget.Hold
	for i, b := range bk.budgets {
		if !budget.Covers(b, agent, role) {
			continue
		}
		start, end := bk.roll(i, now)
		if budget.Holds(b, bk.used[i], bk.st.Marks[b.Key()], start, agent) {
			hs = append(hs, budget.Hold{Budget: b.Key(), Used: bk.used[i], Tokens: b.Tokens, Until: end})
		}
	}
	return hs
}

// budgetResumed is a budget `batty resume` let go on.
type budgetResumed struct {
	key   string
	agent string // "" for every agent of the budget
	until time.Time
}

// resume lets the agent named agent (of role role; "" for the whole team)
// go on for the rest of the window of every reached budget that covers it.
func (bk *budgetBook) resume(agent, role string) ([]budgetResumed, error) {
	now := bk.clock.Now()
	bk.mu.Lock()
	defer bk.mu.Unlock()
	var out []budgetResumed
	for i, b := range bk.budgets {
		if agent != "" && !budget.Covers(b, agent, role) {
			continue
		}
		start, end := bk.roll(i, now)
		if bk.used[i] < b.Tokens {
			continue
		}
		m, changed := budget.Resume(bk.st.Marks[b.Key()], start, agent)
		if !changed {
			continue
		}
		bk.st.Marks[b.Key()] = m
		out = append(out, budgetResumed{key: b.Key(), agent: agent, until: end})
	}
	if len(out) == 0 {
		return nil, nil
	}
	bk.signal()
	if err := bk.save(); err != nil {
		return out, fmt.Errorf("save the budget state: %w", err)
	}
	return out, nil
}

// nextEnd is the end of the earliest window of a reached budget: when the
// agents it holds may go on. Zero when none is reached.
func (bk *budgetBook) nextEnd() time.Time {
	now := bk.clock.Now()
	bk.mu.Lock()
	defer bk.mu.Unlock()
	var next time.Time
	for i, b := range bk.budgets {
		_, end := bk.roll(i, now)
		if bk.used[i] >= b.Tokens && (next.IsZero() || end.Before(next)) {
			next = end
		}
	}
	return next
}

// budgetTurn counts turn t (just appended to the ledger) in the budgets
// and writes the alerts it calls for to the event log.
func (d *Daemon) budgetTurn(t usage.Turn) {
	alerts, err := d.budgets.add(t)
	if err != nil {
		d.log.Error("Budgets", "error", err)
		d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Agent: t.Agent, Detail: err.Error()})
	}
	for _, a := range alerts {
		pct := float64(a.used) * 100 / float64(a.b.Tokens)
		data := eventlog.Budget{Budget: a.b.Key(), For: a.b.For, Per: a.b.Per, UsedTokens: a.used, BudgetTokens: a.b.Tokens,
			WarnAtPct: a.b.WarnAt, WindowStart: a.start.UTC(), Until: a.end.UTC()}
		e := eventlog.Event{Type: eventlog.EvBudgetWarning, Data: data,
			Detail: fmt.Sprintf("budget %s: %d of %d tokens used (%.0f%%, warn_at %d%%) this %s, until %s", a.b.Key(), a.used, a.b.Tokens, pct, a.b.WarnAt, a.b.Per, a.end.Format(time.RFC3339))}
		if a.alert == budget.AlertReached {
			e.Type = eventlog.EvBudgetReached
			e.Detail = fmt.Sprintf("budget %s reached: %d of %d tokens used this %s; its agents take no new turn until %s (batty resume lets them go on)",
				a.b.Key(), a.used, a.b.Tokens, a.b.Per, a.end.Format(time.RFC3339))
		}
		d.log.Warn("Budget", "budget", a.b.Key(), "used", a.used, "tokens", a.b.Tokens, "reached", a.alert == budget.AlertReached)
		d.events.Append(e)
	}
}

// resumeBudgets ends the budget holds of agent a (nil: the team's) for the
// rest of their windows, says so in the event log and returns what it
// ended, as `batty resume` words it.
func (d *Daemon) resumeBudgets(a *agent) []string {
	agent, role := "", ""
	if a != nil {
		agent, role = a.def.Name, a.def.Role
	}
	res, err := d.budgets.resume(agent, role)
	if err != nil {
		d.log.Error("Budgets", "error", err)
		d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Agent: agent, Detail: err.Error()})
	}
	var words []string
	for _, r := range res {
		who := "its agents go on"
		if r.agent != "" {
			who = r.agent + " goes on"
		}
		detail := fmt.Sprintf("budget %s: %s until %s (resumed by user)", r.key, who, r.until.Format(time.RFC3339))
		d.events.Append(eventlog.Event{Type: eventlog.EvBudgetResumed, Agent: r.agent, Detail: detail,
			Data: eventlog.BudgetResumed{Budget: r.key, Until: r.until.UTC()}})
		words = append(words, fmt.Sprintf("budget hold %s (%s until %s)", r.key, who, r.until.Format(time.RFC3339)))
	}
	if len(res) > 0 {
		if a != nil {
			a.poke()
		} else {
			d.pokeAll()
		}
	}
	return words
}

// armBudget stops t and returns a timer of the budget clock at the end of
// the earliest window of a reached budget (nil when none is reached).
func (d *Daemon) armBudget(t schedule.Timer) schedule.Timer {
	if t != nil {
		t.Stop()
	}
	next := d.budgets.nextEnd()
	if next.IsZero() {
		return nil
	}
	return d.opts.BudgetClock.TimerAt(next)
}

// budgetC is t's channel, nil for no timer.
func budgetC(t schedule.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C()
}

// status is each budget in its current window (by the clock), in the team
// file's order; an empty list without budgets.
func (bk *budgetBook) status() []control.BudgetStatus {
	out := []control.BudgetStatus{}
	if bk == nil {
		return out
	}
	now := bk.clock.Now()
	bk.mu.Lock()
	defer bk.mu.Unlock()
	for i, b := range bk.budgets {
		start, end := bk.roll(i, now)
		used := bk.used[i]
		if start.Before(bk.starts[i]) {
			used = 0 // a clock gone back: not the window counted
		}
		out = append(out, control.BudgetStatus{Budget: b.Key(), For: b.For, Per: b.Per, Used: used, Tokens: b.Tokens,
			UsedPct: float64(used) / float64(b.Tokens) * 100, WarnAt: b.WarnAt, WindowStart: start, WindowEnd: end})
	}
	return out
}

// budgetPct is the highest use in percent of the budgets that cover the
// agent named agent, of role role; nil when none does. It is a pure
// function.
func budgetPct(budgets []control.BudgetStatus, agent, role string) *float64 {
	var pct *float64
	for _, b := range budgets {
		if budget.Covers(team.Budget{For: b.For}, agent, role) && (pct == nil || b.UsedPct > *pct) {
			p := b.UsedPct
			pct = &p
		}
	}
	return pct
}
