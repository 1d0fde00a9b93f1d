package console

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/usage"
)

// Usage implements Team: the ledger the test wrote with writeLedger
// (none: empty), entries since since, as usage.Read selects them.
func (f *fakeTeam) Usage(_ context.Context, since time.Time) (usage.Data, error) {
	b, err := os.ReadFile(filepath.Join(f.dir, "ledger.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return usage.Data{}, nil
	}
	if err != nil {
		return usage.Data{}, err
	}
	var all usage.Data
	if err := json.Unmarshal(b, &all); err != nil {
		return usage.Data{}, err
	}
	var d usage.Data
	for _, t := range all.Turns {
		if !t.At.Before(since) {
			d.Turns = append(d.Turns, t)
		}
	}
	for _, s := range all.Limits {
		if !s.At.Before(since) {
			d.Limits = append(d.Limits, s)
		}
	}
	return d, nil
}

// writeLedger gives the fake backend a ledger.
func writeLedger(t *testing.T, f *fakeTeam, d usage.Data) {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "ledger.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// usageNow is the usage tests' clock.
var usageNow = time.Date(2031, 4, 2, 15, 30, 0, 0, time.UTC)

func turn(agent, role, model string, ago time.Duration, in, out int64) usage.Turn {
	return usage.Turn{V: usage.Version, Key: agent + "/" + ago.String(), At: usageNow.Add(-ago), Agent: agent, Role: role, Model: model,
		Message: "m", Tokens: usage.Tokens{Input: in, Output: out}, DurationMS: 1000, Status: "completed"}
}

func TestNewUsageData(t *testing.T) {
	turns := []usage.Turn{
		turn("eng-1", "eng", "gpt", 90*time.Minute, 1000, 100),
		turn("eng-2", "eng", "gpt", 90*time.Minute, 500, 50),
		turn("mgr", "mgr", "other", 30*time.Minute, 200, 20),
		turn("eng-1", "eng", "gpt", 30*time.Hour, 9999, 9999), // before the range
	}
	prices := usage.Prices{"gpt": {Input: 1, Output: 10}}
	st := &control.Status{Budgets: []control.BudgetStatus{{Budget: "team/day", For: "team", Per: "day", Used: 1870, Tokens: 2000, UsedPct: 93.5, WarnAt: 80}},
		Accounts: []control.AccountStatus{{Name: "work", RateLimits: &control.RateLimitsStatus{Windows: []control.RateLimitWindowStatus{{Name: "primary", UsedPct: 42}}}}}}
	samples := []usage.LimitSample{{V: 1, At: usageNow.Add(-time.Hour), Account: "work", Agent: "eng-1", Window: "secondary", UsedPct: 10}}
	d := newUsageData(turns, samples, st, rangeNamed("24h"), usageNow, prices)

	if d.Total.Turns != 3 || d.Total.Total != 1870 {
		t.Fatalf("total %+v", d.Total)
	}
	if d.Total.Cost == nil || d.Total.Unpriced != 1 || *d.Total.Cost != (1500+1500)/1e6 {
		t.Fatalf("cost %v, unpriced %d", d.Total.Cost, d.Total.Unpriced)
	}
	if d.Step != time.Hour || len(d.Buckets) != 24 && len(d.Buckets) != 25 {
		t.Fatalf("step %s, %d buckets", d.Step, len(d.Buckets))
	}
	// Two buckets with turns: by agent (eng-1, eng-2 | mgr) and by role
	// (eng | mgr).
	var got []string
	for _, r := range d.Rows {
		got = append(got, r.At.Format("15:04")+" "+string(r.By)+" "+r.Key)
	}
	want := []string{"14:00 agent eng-1", "14:00 agent eng-2", "14:00 role eng", "15:00 agent mgr", "15:00 role mgr"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if byRole := d.Sums[usage.ByRole]; len(byRole.Rows) != 2 || byRole.Rows[0].Key != "eng" || byRole.Rows[0].Total != 1650 {
		t.Fatalf("by role %+v", byRole.Rows)
	}
	if len(d.Budgets) != 1 || len(d.Limits) != 2 || d.Limits[0].Window != "secondary" || d.Limits[1].Window != "primary" || d.Limits[1].UsedPct != 42 {
		t.Fatalf("budgets %+v, limits %+v", d.Budgets, d.Limits)
	}

	v := newUsageView("crew", d, time.UTC)
	if len(v.Charts) != 2 || v.Charts[0].Empty || len(v.Charts[0].Bars) != 3 || len(v.Charts[1].Bars) != 2 {
		t.Fatalf("charts %+v", v.Charts)
	}
	if v.Total.Cost != "$0.00*" || v.Budgets[0].Class != "warn" || v.Limits[0].Points == "" || v.Limits[1].Points != "" {
		t.Fatalf("view %+v", v)
	}
	// The stack of a bucket is as tall as its tokens: 1650 on a top of 2000.
	var h float64
	for _, b := range v.Charts[0].Bars {
		if strings.Contains(b.Title, "14:00") {
			h += b.H
		}
	}
	if plot := float64(chartH - chartBottom - chartTop); h < plot*1650/2000-1 || h > plot*1650/2000+1 {
		t.Fatalf("stack of 14:00 is %v high, want %v", h, plot*1650/2000)
	}
}

func TestNiceCeil(t *testing.T) {
	for n, want := range map[int64]int64{0: 1, 1: 1, 2: 2, 3: 5, 9: 10, 11: 20, 21: 25, 26: 50, 51: 100, 1650: 2000, 2001: 2500, 99999: 100000} {
		if got := niceCeil(n); got != want {
			t.Errorf("niceCeil(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestCellText(t *testing.T) {
	for in, want := range map[string]string{"eng": "eng", "=HYPERLINK(1)": "'=HYPERLINK(1)", "+1": "'+1", "-x": "'-x", "@a": "'@a", "": ""} {
		if got := cellText(in); got != want {
			t.Errorf("cellText(%q) = %q, want %q", in, got, want)
		}
	}
}

// The usage page draws its charts as SVG in the page, names escaped;
// the CSV and JSON downloads carry the same rows.
func TestUsagePageAndDownloads(t *testing.T) {
	ts, s, fb := newConsole(t)
	s.cfg.Now = func() time.Time { return usageNow }
	s.cfg.Loc = time.UTC
	s.cfg.Prices = usage.Prices{"gpt": {Input: 1, Output: 10}}
	fb.set(func(st *control.Status) {
		st.Budgets = []control.BudgetStatus{{Budget: "eng/day", For: "eng", Per: "day", Used: 50, Tokens: 100, UsedPct: 50, WarnAt: 80, WindowEnd: usageNow.Add(time.Hour)}}
	})
	writeLedger(t, fb, usage.Data{Turns: []usage.Turn{
		turn("eng", "<script>alert(1)</script>", "gpt", time.Hour, 1000, 100),
		turn("eng", "eng", "gpt", 2*time.Hour, 10, 1),
	}})
	c := logIn(t, ts)
	resp, page := get(t, ts, "/usage", c)
	if resp.StatusCode != 200 {
		t.Fatalf("usage page: %s\n%s", resp.Status, page)
	}
	for _, want := range []string{`<svg class="bars"`, `<rect class="c0"`, "&lt;script&gt;alert(1)&lt;/script&gt;", "$0.00", "eng</b> per day", `href="/usage.csv?range=24h"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the usage page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>alert") {
		t.Fatal("a role's name reached the page as markup")
	}

	resp, body := get(t, ts, "/usage.csv?range=7d", c)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" || !strings.Contains(resp.Header.Get("Content-Disposition"), "batty-usage-7d.csv") {
		t.Fatalf("csv: %s %v", resp.Status, resp.Header)
	}
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || strings.Join(recs[0], ",") != strings.Join(usageCSVHeader, ",") {
		t.Fatalf("csv:\n%s", body)
	}
	resp, body = get(t, ts, "/usage.json?range=7d", c)
	var j usageJSON
	if err := json.Unmarshal([]byte(body), &j); err != nil || resp.StatusCode != 200 {
		t.Fatalf("json: %s %v\n%s", resp.Status, err, body)
	}
	if len(j.Rows) != len(recs)-1 || j.Team != "crew" || len(j.Budgets) != 1 || !j.Priced || j.Total.Turns != 2 {
		t.Fatalf("json %+v", j)
	}
	for i, r := range j.Rows {
		if rec := recs[i+1]; rec[0] != r.At.Format(time.RFC3339) || rec[1] != string(r.By) || rec[2] != r.Key {
			t.Fatalf("row %d: csv %v, json %+v", i, rec, r)
		}
	}
	// Not logged in: nothing.
	if resp, _ := get(t, ts, "/usage.csv", nil); resp.StatusCode != 401 {
		t.Fatalf("csv without a session: %s", resp.Status)
	}
}

// The team page shows each agent's usage-limit and budget percent, and the
// team's highest of each, at a level a colour shows.
func TestTeamViewUsageGauges(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	st := &control.Status{Team: "crew",
		Agents:  []control.AgentStatus{{Name: "a", LimitPct: f(42), BudgetPct: f(85)}, {Name: "b", LimitPct: f(100)}, {Name: "c"}},
		Budgets: []control.BudgetStatus{{UsedPct: 85}, {UsedPct: 12}}}
	v := newTeamView(st, nil, "")
	want := [][2]gauge{{{Text: "42%", Level: "ok"}, {Text: "85%", Level: "warn"}}, {{Text: "100%", Level: "over"}, {}}, {{}, {}}}
	for i, a := range v.Agents {
		if a.Limit != want[i][0] || a.Budget != want[i][1] {
			t.Errorf("agent %s: limit %+v, budget %+v; want %+v", a.Name, a.Limit, a.Budget, want[i])
		}
	}
	if v.Totals.Limit != (gauge{Text: "100%", Level: "over"}) || v.Totals.Budget != (gauge{Text: "85%", Level: "warn"}) {
		t.Errorf("totals: limit %+v, budget %+v", v.Totals.Limit, v.Totals.Budget)
	}
	if v := newTeamView(&control.Status{Agents: []control.AgentStatus{{Name: "a"}}}, nil, ""); v.Totals.Limit.Text != "" || v.Totals.Budget.Text != "" {
		t.Errorf("totals without limits or budgets: %+v", v.Totals)
	}
}
