package budget

import (
	"math"
	"testing"
	"time"

	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/usage"
)

func TestWindow(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	kolkata := time.FixedZone("IST", 5*3600+1800)
	tests := []struct {
		name       string
		per        string
		now        time.Time
		loc        *time.Location
		start, end time.Time
	}{
		{"hour", team.PerHour, time.Date(2030, 3, 6, 10, 59, 59, 9, time.UTC), nil,
			time.Date(2030, 3, 6, 10, 0, 0, 0, time.UTC), time.Date(2030, 3, 6, 11, 0, 0, 0, time.UTC)},
		{"hour at its start", team.PerHour, time.Date(2030, 3, 6, 10, 0, 0, 0, time.UTC), nil,
			time.Date(2030, 3, 6, 10, 0, 0, 0, time.UTC), time.Date(2030, 3, 6, 11, 0, 0, 0, time.UTC)},
		{"hour of a half-hour zone", team.PerHour, time.Date(2030, 3, 6, 10, 10, 0, 0, time.UTC), kolkata,
			time.Date(2030, 3, 6, 9, 30, 0, 0, time.UTC), time.Date(2030, 3, 6, 10, 30, 0, 0, time.UTC)},
		{"day in UTC", team.PerDay, time.Date(2030, 3, 6, 23, 59, 0, 0, time.UTC), time.UTC,
			time.Date(2030, 3, 6, 0, 0, 0, 0, time.UTC), time.Date(2030, 3, 7, 0, 0, 0, 0, time.UTC)},
		{"day in local time", team.PerDay, time.Date(2030, 3, 6, 3, 0, 0, 0, time.UTC), ny,
			time.Date(2030, 3, 5, 5, 0, 0, 0, time.UTC), time.Date(2030, 3, 6, 5, 0, 0, 0, time.UTC)},
		{"day of a DST change is 23h", team.PerDay, time.Date(2030, 3, 10, 12, 0, 0, 0, ny), ny,
			time.Date(2030, 3, 10, 5, 0, 0, 0, time.UTC), time.Date(2030, 3, 11, 4, 0, 0, 0, time.UTC)},
		{"week from Monday", team.PerWeek, time.Date(2030, 3, 6, 12, 0, 0, 0, time.UTC), nil, // a Wednesday
			time.Date(2030, 3, 4, 0, 0, 0, 0, time.UTC), time.Date(2030, 3, 11, 0, 0, 0, 0, time.UTC)},
		{"week on Sunday", team.PerWeek, time.Date(2030, 3, 10, 23, 0, 0, 0, time.UTC), nil,
			time.Date(2030, 3, 4, 0, 0, 0, 0, time.UTC), time.Date(2030, 3, 11, 0, 0, 0, 0, time.UTC)},
		{"week on Monday midnight", team.PerWeek, time.Date(2030, 3, 11, 0, 0, 0, 0, time.UTC), nil,
			time.Date(2030, 3, 11, 0, 0, 0, 0, time.UTC), time.Date(2030, 3, 18, 0, 0, 0, 0, time.UTC)},
		{"week across a year", team.PerWeek, time.Date(2031, 1, 1, 8, 0, 0, 0, time.UTC), nil, // a Wednesday
			time.Date(2030, 12, 30, 0, 0, 0, 0, time.UTC), time.Date(2031, 1, 6, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, e := Window(tt.per, tt.now, tt.loc)
			if !s.Equal(tt.start) || !e.Equal(tt.end) {
				t.Fatalf("Window = [%s, %s), want [%s, %s)", s, e, tt.start, tt.end)
			}
			if tt.now.Before(s) || !tt.now.Before(e) {
				t.Fatalf("%s not in [%s, %s)", tt.now, s, e)
			}
		})
	}
}

func TestCoversAndUsed(t *testing.T) {
	at := time.Date(2030, 3, 6, 10, 0, 0, 0, time.UTC)
	turn := func(agent, role string, min int, in, out int64) usage.Turn {
		return usage.Turn{Agent: agent, Role: role, At: at.Add(time.Duration(min) * time.Minute), Tokens: usage.Tokens{Input: in, CachedInput: in / 2, Output: out, ReasoningOutput: out / 2}}
	}
	turns := []usage.Turn{
		turn("eng-1", "eng", 0, 100, 10),
		turn("eng-2", "eng", 30, 200, 20),
		turn("manager", "manager", 59, 1000, 1),
		turn("eng-1", "eng", 60, 5000, 5000), // the next hour
		turn("eng-1", "eng", -1, 7000, 7000), // the hour before
	}
	tests := []struct {
		forName string
		want    int64
	}{
		{team.BudgetTeam, 110 + 220 + 1001},
		{"eng", 110 + 220},
		{"eng-2", 220},
		{"manager", 1001},
		{"nobody", 0},
	}
	for _, tt := range tests {
		b := team.Budget{For: tt.forName, Tokens: 1, Per: team.PerHour}
		if got := Used(b, turns, at, at.Add(time.Hour)); got != tt.want {
			t.Errorf("Used for %s = %d, want %d", tt.forName, got, tt.want)
		}
	}
	if !Covers(team.Budget{For: "eng"}, "eng-1", "eng") || Covers(team.Budget{For: "eng-1"}, "eng-2", "eng") || !Covers(team.Budget{For: "team"}, "x", "y") {
		t.Error("Covers")
	}
}

func TestWarnTokens(t *testing.T) {
	tests := []struct {
		tokens int64
		warn   int
		want   int64
	}{
		{100, 80, 80},
		{1000, 80, 800},
		{1, 80, 1},
		{3, 50, 2},
		{101, 1, 2},
		{math.MaxInt64, 99, math.MaxInt64/100*99 + (math.MaxInt64%100*99+99)/100},
	}
	for _, tt := range tests {
		if got := WarnTokens(team.Budget{Tokens: tt.tokens, WarnAt: tt.warn}); got != tt.want {
			t.Errorf("WarnTokens(%d, %d%%) = %d, want %d", tt.tokens, tt.warn, got, tt.want)
		}
	}
	if WarnTokens(team.Budget{Tokens: math.MaxInt64, WarnAt: 99}) <= 0 {
		t.Error("overflow")
	}
}

func TestDecide(t *testing.T) {
	b := team.Budget{For: "team", Tokens: 1000, Per: team.PerDay, WarnAt: 80}
	w1 := time.Date(2030, 3, 6, 0, 0, 0, 0, time.UTC)
	w2 := w1.AddDate(0, 0, 1)
	tests := []struct {
		name  string
		used  int64
		mark  Mark
		start time.Time
		want  Alert
		next  Mark
	}{
		{"below", 799, Mark{}, w1, AlertNone, Mark{Start: w1}},
		{"warn", 800, Mark{}, w1, AlertWarning, Mark{Start: w1, Warned: true}},
		{"warned already", 900, Mark{Start: w1, Warned: true}, w1, AlertNone, Mark{Start: w1, Warned: true}},
		{"reached", 1000, Mark{Start: w1, Warned: true}, w1, AlertReached, Mark{Start: w1, Warned: true, Reached: true}},
		{"past at once: reached alone", 5000, Mark{}, w1, AlertReached, Mark{Start: w1, Warned: true, Reached: true}},
		{"reached already", 5000, Mark{Start: w1, Warned: true, Reached: true}, w1, AlertNone, Mark{Start: w1, Warned: true, Reached: true}},
		{"a new window warns again", 850, Mark{Start: w1, Warned: true, Reached: true, Resumed: true}, w2, AlertWarning, Mark{Start: w2, Warned: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, a := Decide(b, tt.used, tt.mark, tt.start)
			if a != tt.want || !next.Start.Equal(tt.next.Start) || next.Warned != tt.next.Warned || next.Reached != tt.next.Reached || next.Resumed != tt.next.Resumed {
				t.Fatalf("Decide = %+v, %v; want %+v, %v", next, a, tt.next, tt.want)
			}
		})
	}
}

func TestHoldsAndResume(t *testing.T) {
	b := team.Budget{For: "eng", Tokens: 1000, Per: team.PerDay, WarnAt: 80}
	w1 := time.Date(2030, 3, 6, 0, 0, 0, 0, time.UTC)
	w2 := w1.AddDate(0, 0, 1)
	one, changed := Resume(Mark{Start: w1, Reached: true}, w1, "eng-1")
	if !changed {
		t.Fatal("resume of eng-1 changed nothing")
	}
	if _, again := Resume(one, w1, "eng-1"); again {
		t.Error("a second resume of eng-1 changed the mark")
	}
	all, _ := Resume(Mark{Start: w1}, w1, "")
	if _, again := Resume(all, w1, "eng-2"); again {
		t.Error("resume of an agent after the whole budget changed the mark")
	}
	tests := []struct {
		name  string
		used  int64
		mark  Mark
		start time.Time
		agent string
		want  bool
	}{
		{"under", 999, Mark{}, w1, "eng-1", false},
		{"reached", 1000, Mark{}, w1, "eng-1", true},
		{"reached without a mark (state lost)", 2000, Mark{Start: w2, Resumed: true}, w1, "eng-1", true},
		{"resumed agent", 1000, one, w1, "eng-1", false},
		{"another agent of the budget", 1000, one, w1, "eng-2", true},
		{"resumed budget", 1000, all, w1, "eng-2", false},
		{"a resume ends with its window", 1000, all, w2, "eng-2", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Holds(b, tt.used, tt.mark, tt.start, tt.agent); got != tt.want {
				t.Fatalf("Holds = %v, want %v", got, tt.want)
			}
		})
	}
}
