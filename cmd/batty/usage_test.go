package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/usage"
)

// writeLedger appends turns to the usage ledger of l.
func writeLedger(t *testing.T, l project.Layout, turns ...usage.Turn) {
	t.Helper()
	lg, err := usage.Open(l)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	for _, tr := range turns {
		if _, err := lg.AppendTurn(tr); err != nil {
			t.Fatal(err)
		}
	}
}

func usageTurn(agent, model string, at time.Time, in, cached, out int64) usage.Turn {
	return usage.Turn{Agent: agent, Role: strings.TrimRight(agent, "-0123456789"), Model: model, Message: "m-" + at.Format("20060102150405.000"),
		Attempt: 1, At: at, Tokens: usage.Tokens{Input: in, CachedInput: cached, Output: out}, DurationMS: 2000, Status: "completed"}
}

// `batty usage` with the team stopped reads the ledger: the rows, the
// total, the cost with pricing:, the range, and JSON with the same rows.
func TestUsageCommand(t *testing.T) {
	dir := t.TempDir()
	team := "name: t\npricing:\n  gpt-5: {input: 1.25, cached_input: 0.125, output: 10}\nroles:\n  - name: engineer\n    instances: 2\n"
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(team), 0o644); err != nil {
		t.Fatal(err)
	}
	l := layoutOf(t, dir)
	now := time.Now().UTC()
	writeLedger(t, l,
		usageTurn("engineer-1", "gpt-5", now.Add(-3*time.Hour), 1_000_000, 400_000, 100_000),
		usageTurn("engineer-2", "gpt-5", now.Add(-2*time.Hour), 2_000_000, 0, 10_000),
		usageTurn("engineer-1", "", now.Add(-time.Hour), 5000, 0, 500),
		usageTurn("engineer-2", "gpt-5", now.Add(-50*time.Hour), 7, 0, 1),
	)

	out, errOut, code := runBattyIn(t, dir, nil, "", "usage", "--since", "24h", "--by", "agent")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"3 turn(s)", "3.1M tokens", "engineer-2", "engineer-1", "TOTAL", "COST", "$2.60", "$1.80*", "$4.40*", "1 turn(s) on a model without a price"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "engineer-2") > strings.Index(out, "engineer-1") {
		t.Errorf("rows not by total, most first:\n%s", out)
	}
	if strings.Contains(out, "tokens per") {
		t.Errorf("a chart on a pipe:\n%s", out)
	}

	out, errOut, code = runBattyIn(t, dir, nil, "", "usage", "--since", "24h", "--by", "agent", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Rows  []usage.Row  `json:"rows"`
		Total usage.Row    `json:"total"`
		Skip  []usage.Skip `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Rows) != 2 || got.Rows[0].Key != "engineer-2" || got.Total.Turns != 3 || got.Total.Tokens.Input != 3_005_000 ||
		got.Total.Unpriced != 1 || got.Total.Cost == nil || got.Skip == nil {
		t.Fatalf("JSON %+v", got)
	}

	// A corrupt line is skipped and named; the rest is counted.
	seg := filepath.Join(l.UsageDir(), "turns-000001.jsonl")
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{\"v\":1,\"key\":\"cut")
	f.Close()
	out, errOut, code = runBattyIn(t, dir, nil, "", "usage")
	if code != 0 || !strings.Contains(out, "4 turn(s)") || !strings.Contains(errOut, "turns-000001.jsonl:5: cut last line") {
		t.Fatalf("exit %d, out %s, stderr %s", code, out, errOut)
	}
}

func TestUsageCommandErrors(t *testing.T) {
	dir, _ := writeTeam(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"usage", "--since", "yesterday"}, "--since: invalid time"},
		{[]string{"usage", "--by", "week"}, `--by: unknown grouping "week"`},
		{[]string{"usage", "--since", "1h", "--until", "2h"}, "must come before --until"},
		{[]string{"usage", "--limits", "--by", "agent"}, "--limits shows the rate-limit windows"},
	} {
		_, errOut, code := runBattyIn(t, dir, nil, "", tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	// No ledger yet: an empty table, not an error.
	out, errOut, code := runBattyIn(t, dir, nil, "", "usage")
	if code != 0 || !strings.Contains(out, "0 turn(s)") {
		t.Fatalf("exit %d, %s %s", code, out, errOut)
	}
}

// --limits shows each account's windows, the last used percent and the
// reset time; on a terminal the table comes with a chart.
func TestUsageLimitsAndChart(t *testing.T) {
	dir, l := writeTeam(t)
	now := time.Now().UTC()
	lg, err := usage.Open(l)
	if err != nil {
		t.Fatal(err)
	}
	reset := now.Add(3 * time.Hour).Truncate(time.Minute)
	for i, pct := range []float64{10, 20, 35} {
		if _, err := lg.AppendLimits([]usage.LimitSample{{At: now.Add(time.Duration(i-3) * time.Hour), Account: "work", Agent: "engineer-1", Window: "primary", UsedPct: pct, WindowMinutes: 300, ResetsAt: reset}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lg.AppendTurn(usageTurn("engineer-1", "", now.Add(-2*time.Hour), 100, 0, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := lg.AppendTurn(usageTurn("engineer-1", "", now.Add(-time.Hour), 300, 0, 10)); err != nil {
		t.Fatal(err)
	}
	lg.Close()
	out, errOut, code := runBattyIn(t, dir, nil, "", "usage", "--limits")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"work", "primary (5h)", "35%", reset.Local().Format("2006-01-02 15:04")} {
		if !strings.Contains(out, want) {
			t.Errorf("--limits lacks %q:\n%s", want, out)
		}
	}
	term := string(outputOnTerminal(t, battyCommand(t, dir, nil, "usage")))
	if !strings.Contains(term, "tokens per") || !strings.Contains(term, "█") {
		t.Errorf("no chart on a terminal:\n%s", term)
	}
}
