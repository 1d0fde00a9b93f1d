package statusview

import (
	"fmt"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/safetext"
)

// MaxWhy bounds the reason shown for an agent's state (Agent.Why) and the
// detail of why it waits (Agent.Waiting).
const MaxWhy = 400

// Agent is one agent as the views show it, every text made one safe line.
// A view picks the cells its layout has.
type Agent struct {
	Name, Role string
	// State is the agent's state as the status names it (idle, working,
	// finishing, waiting_for_slot, …).
	State string
	// StateCell is the status table's STATE cell: State, the waiting
	// reason's code when it adds to it (WaitingSuffix), " @host" for an
	// agent on another host and its shared app-server (AppServerSuffix).
	StateCell string
	// Thread is the THREAD cell (ThreadCell).
	Thread string
	// Host is where the agent runs: its host's name, or "local".
	Host, Account string
	// Backlog is its messages not done yet (waiting and in flight);
	// Behind those waiting behind the one in flight.
	Backlog, Behind int
	Turns           int
	// Busy says a message is in flight: InFlight is its short id,
	// InFlightAge how long it has been, InFlightFor that to the second.
	Busy        bool
	InFlight    string
	InFlightAge time.Duration
	InFlightFor string
	// Runs says its turn runs (control.AgentStatus.TurnRuns).
	Runs bool
	// Input and Output are its tokens (Tokens).
	Input, Output string
	// ContextPct is its context window's use, Context that as text.
	ContextPct float64
	Context    string
	// Limit is its account's highest rate-limit use, Budget the highest
	// use of the budgets that cover it.
	Limit, Budget Gauge
	// Why says what is wrong: the parked problem and its fix, codex's
	// network message, or the last error; at most MaxWhy runes.
	Why string
	// LastError is the last error alone, unclipped ("" for none).
	LastError string
	// Waiting says why an idle agent with a backlog starts no turn
	// (control.WaitingStatus's detail), "" when it does not wait.
	Waiting string
	// Branch is its worktree's branch ("" for an agent in the project's
	// checkout); AheadBy its commits not on the base, Dirty its
	// uncommitted paths.
	Branch         string
	AheadBy, Dirty int
	// Workspace is the workspace cell: "batty/eng-1 +2 ~1" (ahead and
	// dirty when not zero), "" for the project's checkout.
	Workspace string
	// Ahead is the AHEAD cell: "+3", "-" for the project's checkout.
	Ahead string
}

// NewAgent makes a's row. It is a pure function.
func NewAgent(a control.AgentStatus) Agent {
	r := Agent{Name: safetext.Line(a.Name, 0), Role: safetext.Line(a.Role, 0), State: safetext.Line(a.State, 0),
		StateCell: StateCell(a), Thread: ThreadCell(a.ThreadID), Host: safetext.Line(a.Host, 0), Account: safetext.Line(a.Account, 0),
		Backlog: a.Backlog, Behind: a.Backlog, Turns: a.TurnsCompleted, Runs: a.TurnRuns(),
		Input: Tokens(a.InputTokens), Output: Tokens(a.OutputTokens), ContextPct: a.ContextPct, Context: Pct(a.ContextPct),
		Limit: NewGauge(a.LimitPct, GaugeWarn), Budget: NewGauge(a.BudgetPct, GaugeWarn),
		LastError: safetext.Line(a.LastError, 0), Ahead: AheadCell(a)}
	if r.Host == "" {
		r.Host = "local"
	}
	why := a.LastError
	switch {
	case a.Parked != nil:
		why = a.Parked.Detail + " — " + a.Parked.Fix
	case a.Network != nil:
		why = a.Network.Message
	}
	// It may quote codex or a model.
	r.Why = safetext.Line(why, MaxWhy)
	if w := a.Waiting; w != nil {
		r.Waiting = safetext.Line(w.Detail, MaxWhy)
	}
	if a.InFlight != nil {
		r.Busy = true
		r.InFlight = safetext.Line(inbox.ShortID(*a.InFlight), 20)
		r.InFlightAge = time.Duration(a.InFlightAgeS) * time.Second
		r.InFlightFor = Duration(r.InFlightAge, time.Second)
		r.Behind = max(a.Backlog-1, 0)
	}
	if ws := a.Workspace; ws != nil {
		r.Branch, r.AheadBy, r.Dirty = safetext.Line(ws.Branch, 0), ws.Ahead, ws.Dirty
		r.Workspace = r.Branch
		if ws.Ahead > 0 {
			r.Workspace += fmt.Sprintf(" +%d", ws.Ahead)
		}
		if ws.Dirty > 0 {
			r.Workspace += fmt.Sprintf(" ~%d", ws.Dirty)
		}
	}
	return r
}

// StateCell is the status table's STATE cell of a: its state, then the
// waiting reason's code (WaitingSuffix), " @host" for an agent on another
// host, and its shared app-server (AppServerSuffix): "idle
// (dispatch_paused) @gpu-1 [app 41250]". It is a pure function.
func StateCell(a control.AgentStatus) string {
	s := safetext.Line(a.State, 0) + WaitingSuffix(a)
	if a.Host != "" {
		s += " @" + safetext.Line(a.Host, 40) // where it runs
	}
	return s + AppServerSuffix(a.AppServer)
}

// WaitingSuffix is what the STATE cell adds for an agent that waits with a
// backlog: its reason's code in parentheses (" (dispatch_paused)"), or
// nothing when there is none or the state says it already (budget_held,
// quota_paused, parked, waiting_for_slot). It is a pure function.
func WaitingSuffix(a control.AgentStatus) string {
	w := a.Waiting
	if w == nil || w.Reason == a.State || (w.Reason == control.WaitSlot && a.State == control.AgentWaitingForSlot) {
		return ""
	}
	return " (" + safetext.Line(w.Reason, 40) + ")"
}

// AppServerSuffix is what the STATE cell adds for an agent on a shared
// app-server: " [app 41250]", " [app starting]" while the broker starts
// it again; nothing for an agent on a process of its own. It is a pure
// function.
func AppServerSuffix(s *control.AppServerStatus) string {
	switch {
	case s == nil:
		return ""
	case s.PID == 0:
		return " [app starting]"
	}
	return fmt.Sprintf(" [app %d]", s.PID)
}

// ThreadCell is the THREAD cell of an agent on thread id: "-" for none,
// else the id made safe and, when longer than 13 characters, "…" and its
// last 12. The app-server's thread ids are time-ordered UUIDs (v7) whose
// first characters are the time they were made, alike for threads made
// the same minute; their last 12 are random and tell them apart. It is a
// pure function.
func ThreadCell(id string) string {
	s := safetext.Line(id, 0)
	r := []rune(s)
	switch {
	case len(r) == 0:
		return "-"
	case len(r) <= 13:
		return s
	}
	return "…" + string(r[len(r)-12:])
}

// AheadCell is the AHEAD cell of a: "+3", its branch's commits not on the
// base branch, "+0" before its worktree is made, "-" for an agent working
// in the project's checkout. It is a pure function.
func AheadCell(a control.AgentStatus) string {
	if a.Workspace == nil {
		return "-"
	}
	return fmt.Sprintf("+%d", a.Workspace.Ahead)
}

// Totals are the team's sums over its agents: the TOTAL row.
type Totals struct {
	// Agents counts the agents; Working the turns that run
	// (control.AgentStatus.TurnRuns), never more than the team's cap on
	// turns at once lets run; InFlight the messages of those turns;
	// Finishing the turns that have ended whose outcomes are being
	// recorded.
	Agents, Working, InFlight, Finishing int
	// Backlog sums the agents' backlogs; Queued counts the messages in
	// role queues, given to no instance yet.
	Backlog, Queued int
	Turns           int
	// InputTokens and OutputTokens are the sums; Input and Output them
	// as text (Tokens).
	InputTokens, OutputTokens int64
	Input, Output             string
	// Limit is the highest rate-limit use of the team's accounts, Budget
	// the highest use of its budgets.
	Limit, Budget Gauge
}

// NewTotals sums st's agents and queues. It is a pure function.
func NewTotals(st control.Status) Totals {
	t := TeamTotals(st.Agents)
	for _, n := range st.Queues {
		t.Queued += n
	}
	var spent *float64
	for _, b := range st.Budgets {
		spent = Highest(spent, &b.UsedPct)
	}
	t.Budget = NewGauge(spent, GaugeWarn)
	return t
}

// TeamTotals sums agents (Queued and Budget are left zero: they are the
// team's, see NewTotals). It is a pure function.
func TeamTotals(agents []control.AgentStatus) Totals {
	var t Totals
	var limit *float64
	for _, a := range agents {
		t.Agents++
		t.Backlog += a.Backlog
		t.Turns += a.TurnsCompleted
		t.InputTokens += a.InputTokens
		t.OutputTokens += a.OutputTokens
		limit = Highest(limit, a.LimitPct)
		switch {
		case a.TurnRuns():
			t.Working++
			if a.InFlight != nil {
				t.InFlight++
			}
		case a.InFlight != nil:
			t.Finishing++
		}
	}
	t.Input, t.Output = Tokens(t.InputTokens), Tokens(t.OutputTokens)
	t.Limit = NewGauge(limit, GaugeWarn)
	return t
}

// Summary is the STATE cell of the TOTAL row: "1/4 working", turns that
// run of the team's agents.
func (t Totals) Summary() string {
	return fmt.Sprintf("%d/%d working", t.Working, t.Agents)
}

// FlightCell is the IN FLIGHT (or DOING) cell of the TOTAL row: "2 in
// flight", and ", 1 finishing" when turns have ended whose outcomes are
// being recorded.
func (t Totals) FlightCell() string {
	s := fmt.Sprintf("%d in flight", t.InFlight)
	if t.Finishing > 0 {
		s += fmt.Sprintf(", %d finishing", t.Finishing)
	}
	return s
}

// Landing is one request of the merge queue as the views show it, every
// text one safe line; a commit is its first 12 characters, "" for none.
type Landing struct {
	ID, Short, Agent, State, By string
	RequestedAt                 time.Time
	Detail                      string
	Tip, Onto, Commit           string
	// Review says it waits for the human's review; Finished that it has
	// ended (landed, failed, nothing).
	Review, Finished bool
}

// NewLanding makes l's row. It is a pure function.
func NewLanding(l control.LandingStatus) Landing {
	return Landing{ID: l.ID, Short: safetext.Line(inbox.ShortID(l.ID), 20), Agent: safetext.Line(l.Agent, 0), State: safetext.Line(l.State, 0),
		By: safetext.Line(l.By, 0), RequestedAt: l.RequestedAt, Detail: safetext.Line(l.Detail, 0),
		Tip: ShortCommit(l.Tip), Onto: ShortCommit(l.Onto), Commit: ShortCommit(l.Commit),
		Review: l.State == string(landing.Review), Finished: landing.State(l.State).Finished()}
}

// OpenLandings counts the requests of landings not finished. It is a pure
// function.
func OpenLandings(landings []control.LandingStatus) int {
	n := 0
	for _, l := range landings {
		if !landing.State(l.State).Finished() {
			n++
		}
	}
	return n
}

// ShortCommit is a commit id's first 12 characters, made safe; "" for none.
// It is a pure function.
func ShortCommit(c string) string {
	c = safetext.Line(c, 0)
	if r := []rune(c); len(r) > 12 {
		return string(r[:12])
	}
	return c
}
