package statusview

import (
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/safetext"
)

func TestTokens(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1.0k"}, {1049, "1.0k"}, {1050, "1.1k"}, {1250, "1.3k"}, {12345, "12.3k"},
		{19_100, "19.1k"}, {999_949, "999.9k"},
		{999_950, "1.0M"}, // the unit after rounding: never "1000.0k"
		{1_000_000, "1.0M"}, {1_234_567, "1.2M"}, {4_500_000, "4.5M"}, {4_560_000, "4.6M"}, {12_345_678_901, "12345.7M"},
		{-5, "-5"},
	} {
		if got := Tokens(c.n); got != c.want {
			t.Errorf("Tokens(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		d, unit time.Duration
		want    string
	}{
		{0, time.Second, "0s"},
		{-3 * time.Second, time.Second, "0s"},
		{42*time.Second + 900*time.Millisecond, time.Second, "42s"},
		{185 * time.Second, time.Second, "3m05s"},
		{2*time.Hour + 7*time.Minute + 9*time.Second, time.Second, "2h07m"},
		{50 * time.Hour, time.Second, "50h00m"},
		{0, time.Minute, "<1m"},
		{59 * time.Second, time.Minute, "<1m"},
		{2*time.Minute + 59*time.Second, time.Minute, "2m"},
		{65 * time.Minute, time.Minute, "1h05m"},
		{185 * time.Second, time.Hour, "3m05s"}, // another unit: to the second
	} {
		if got := Duration(c.d, c.unit); got != c.want {
			t.Errorf("Duration(%s, %s) = %q, want %q", c.d, c.unit, got, c.want)
		}
	}
}

func TestGauge(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		p    *float64
		want Gauge
	}{
		{nil, Gauge{}}, {f(12.4), Gauge{"12%", "ok"}}, {f(80), Gauge{"80%", "warn"}}, {f(100), Gauge{"100%", "over"}},
	} {
		if got := NewGauge(c.p, GaugeWarn); got != c.want {
			t.Errorf("NewGauge(%v) = %+v, want %+v", c.p, got, c.want)
		}
	}
	if h := Highest(nil, f(3), nil, f(7), f(5)); h == nil || *h != 7 {
		t.Errorf("Highest = %v, want 7", h)
	}
	if Highest(nil, nil) != nil {
		t.Error("Highest of none is set")
	}
}

// Time-ordered (v7) thread ids of the app-server, made the same minute by
// three agents: their first 12 characters are alike.
var sameMinuteThreads = []string{
	"019ad6f1-2c3e-7a41-9f5e-3a2b1c0d9e8f",
	"019ad6f1-2c3e-7b02-8c11-77e0a4d5b6c1",
	"019ad6f1-2c41-7e9d-a0b4-c5d6e7f80912",
}

func TestThreadCell(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"", "-"},
		{"T1", "T1"},
		{"0123456789abc", "0123456789abc"}, // 13: shown whole
		{sameMinuteThreads[0], "…3a2b1c0d9e8f"},
		{sameMinuteThreads[1], "…77e0a4d5b6c1"},
		{"019ad6f1-2c3e-7a41-9f5e-\x1b[2J3a2b1c0d9e8f\n", "…3a2b1c0d9e8f"}, // made safe first
	} {
		if got := ThreadCell(c.id); got != c.want {
			t.Errorf("ThreadCell(%q) = %q, want %q", c.id, got, c.want)
		}
	}
	seen := map[string]string{}
	for _, id := range sameMinuteThreads {
		cell := ThreadCell(id)
		if other, ok := seen[cell]; ok {
			t.Fatalf("threads %s and %s both show as %q", other, id, cell)
		}
		seen[cell] = id
	}
}

func TestStateCell(t *testing.T) {
	for _, c := range []struct {
		a    control.AgentStatus
		want string
	}{
		{control.AgentStatus{State: "idle"}, "idle"},
		{control.AgentStatus{State: "idle", Waiting: &control.WaitingStatus{Reason: control.WaitDispatchPaused}}, "idle (dispatch_paused)"},
		{control.AgentStatus{State: "budget_held", Waiting: &control.WaitingStatus{Reason: "budget_held"}}, "budget_held"},
		{control.AgentStatus{State: control.AgentWaitingForSlot, Waiting: &control.WaitingStatus{Reason: control.WaitSlot}}, control.AgentWaitingForSlot},
		{control.AgentStatus{State: "working", Host: "gpu-1\x1b[2J"}, "working @gpu-1"},
		{control.AgentStatus{State: "idle", AppServer: &control.AppServerStatus{PID: 0}}, "idle [app starting]"},
		{control.AgentStatus{State: "working", Host: "h", AppServer: &control.AppServerStatus{PID: 41250}}, "working @h [app 41250]"},
	} {
		if got := StateCell(c.a); got != c.want {
			t.Errorf("StateCell(%+v) = %q, want %q", c.a, got, c.want)
		}
	}
}

func TestNewAgent(t *testing.T) {
	id := "20261202T120000.000000000Z-1f2e3d4c"
	limit := 85.0
	a := control.AgentStatus{Name: "eng-1", Role: "engineer", State: "working", ThreadID: sameMinuteThreads[0], Backlog: 3,
		InFlight: &id, InFlightAgeS: 125, TurnsCompleted: 4, InputTokens: 19_100, OutputTokens: 412, ContextPct: 4.4,
		LimitPct: &limit, LastError: "boom\x1b[31m\nagain",
		Workspace: &control.WorkspaceStatus{Branch: "batty/eng-1", Ahead: 2, Dirty: 1, Exists: true}}
	r := NewAgent(a)
	want := Agent{Name: "eng-1", Role: "engineer", State: "working", StateCell: "working", Thread: "…3a2b1c0d9e8f", Host: "local",
		Backlog: 3, Behind: 2, Turns: 4, Busy: true, InFlight: "1f2e3d4c", InFlightAge: 125 * time.Second, InFlightFor: "2m05s", Runs: true,
		Input: "19.1k", Output: "412", ContextPct: 4.4, Context: "4%", Limit: Gauge{"85%", "warn"},
		Why: r.LastError, LastError: r.LastError, Branch: "batty/eng-1", AheadBy: 2, Dirty: 1, Workspace: "batty/eng-1 +2 ~1", Ahead: "+2"}
	if r != want {
		t.Fatalf("NewAgent =\n%+v, want\n%+v", r, want)
	}
	if r.LastError == "" || r.LastError != "boom again" {
		t.Errorf("last error %q: want one safe line", r.LastError)
	}
	parked := NewAgent(control.AgentStatus{State: "parked", Backlog: 2, LastError: "old", Host: "gpu-1",
		Parked:  &control.ParkedStatus{Kind: "not_logged_in", Detail: "codex is not logged in", Fix: "codex login"},
		Waiting: &control.WaitingStatus{Reason: "parked", Detail: "parked: \x07codex is not logged in"}})
	if parked.Why != "codex is not logged in — codex login" || parked.Waiting != safetext.Line("parked: \x07codex is not logged in", MaxWhy) ||
		parked.Host != "gpu-1" || parked.Busy || parked.Behind != 2 || parked.Workspace != "" || parked.Ahead != "-" || parked.Thread != "-" {
		t.Errorf("parked row %+v", parked)
	}
	net := NewAgent(control.AgentStatus{State: control.AgentWaitingForNetwork, Network: &control.NetworkStatus{State: "waiting", Message: "stream disconnected"}})
	if net.Why != "stream disconnected" {
		t.Errorf("network row why %q", net.Why)
	}
}

// The TOTAL row counts the turns that run: an agent whose turn has ended
// and whose outcome is being recorded (finishing) is not working, and its
// message is counted apart.
func TestTeamTotalsCountWhatRuns(t *testing.T) {
	id := "20261202T120000.000000000Z-1f2e3d4c"
	in := func(state string) control.AgentStatus { return control.AgentStatus{State: state, InFlight: &id} }
	for _, c := range []struct {
		name             string
		agents           []control.AgentStatus
		working, flights int
		finishing        int
		cell             string
	}{
		{"none", []control.AgentStatus{{State: "idle"}}, 0, 0, 0, "0 in flight"},
		{"working", []control.AgentStatus{in("working"), {State: "idle"}}, 1, 1, 0, "1 in flight"},
		{"sent, not working yet", []control.AgentStatus{in("idle")}, 1, 1, 0, "1 in flight"},
		{"waiting for the network", []control.AgentStatus{in(control.AgentWaitingForNetwork)}, 1, 1, 0, "1 in flight"},
		{"finishing", []control.AgentStatus{in("working"), in(control.AgentFinishing), in(control.AgentFinishing)}, 1, 1, 2, "1 in flight, 2 finishing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tt := TeamTotals(c.agents)
			if tt.Working != c.working || tt.InFlight != c.flights || tt.Finishing != c.finishing || tt.FlightCell() != c.cell {
				t.Fatalf("totals %+v (%q), want working %d, in flight %d, finishing %d (%q)", tt, tt.FlightCell(), c.working, c.flights, c.finishing, c.cell)
			}
			if want := len(c.agents); tt.Agents != want || tt.Summary() != fmtWorking(c.working, want) {
				t.Fatalf("summary %q", tt.Summary())
			}
		})
	}
}

func fmtWorking(w, n int) string {
	return string(rune('0'+w)) + "/" + string(rune('0'+n)) + " working"
}

func TestNewTotals(t *testing.T) {
	l1, l2 := 40.0, 91.0
	st := control.Status{
		Agents: []control.AgentStatus{
			{Backlog: 2, TurnsCompleted: 3, InputTokens: 1500, OutputTokens: 20, LimitPct: &l1},
			{Backlog: 1, TurnsCompleted: 1, InputTokens: 999_000, OutputTokens: 980, LimitPct: &l2},
		},
		Queues:  map[string]int{"eng": 4, "qa": 0},
		Budgets: []control.BudgetStatus{{UsedPct: 50}, {UsedPct: 82}},
	}
	got := NewTotals(st)
	if got.Agents != 2 || got.Backlog != 3 || got.Queued != 4 || got.Turns != 4 || got.Input != "1.0M" || got.Output != "1.0k" ||
		got.Limit != (Gauge{"91%", "warn"}) || got.Budget != (Gauge{"82%", "warn"}) {
		t.Fatalf("NewTotals = %+v", got)
	}
	if NewTotals(control.Status{}).Budget != (Gauge{}) {
		t.Error("a team without budgets shows a budget gauge")
	}
}

func TestNewLanding(t *testing.T) {
	at := time.Date(2030, 3, 7, 12, 0, 0, 0, time.UTC)
	l := NewLanding(control.LandingStatus{ID: "20261202T120000.000000000Z-9a8b7c6d", Agent: "eng-1", State: "review", RequestedAt: at,
		By: "human", Commit: "0123456789abcdef", Tip: "fedcba9876543210", Detail: "verify passed\x1b[2J\nwaiting"})
	want := Landing{ID: "20261202T120000.000000000Z-9a8b7c6d", Short: "9a8b7c6d", Agent: "eng-1", State: "review", By: "human",
		RequestedAt: at, Detail: "verify passed waiting", Tip: "fedcba987654", Commit: "0123456789ab", Review: true}
	if l != want {
		t.Fatalf("NewLanding =\n%+v, want\n%+v", l, want)
	}
	if !NewLanding(control.LandingStatus{State: "landed"}).Finished || NewLanding(control.LandingStatus{State: "queued"}).Finished {
		t.Error("Finished is not the landing's")
	}
	if n := OpenLandings([]control.LandingStatus{{State: "landed"}, {State: "queued"}, {State: "review"}, {State: "failed"}, {State: "nothing"}}); n != 2 {
		t.Errorf("OpenLandings = %d, want 2", n)
	}
}
