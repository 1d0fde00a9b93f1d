package dispatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/retry"
	"github.com/battyhq/batty/team"
)

func TestPlacement(t *testing.T) {
	open, paused, probe := choice{open: true}, choice{}, choice{probe: true}
	tests := []struct {
		name string
		cs   []choice
		cur  int
		want int
	}{
		{"preferred open", []choice{open, open}, 1, 0},
		{"preferred paused", []choice{paused, open}, 0, 1},
		{"all paused: stays", []choice{paused, paused}, 1, 1},
		{"preferred's probe may go: back to it", []choice{probe, open}, 1, 0},
		{"a later account's probe while all else is paused", []choice{paused, probe}, 0, 1},
		{"the open one before a probe", []choice{open, probe}, 1, 0},
		{"third", []choice{paused, paused, open}, 0, 2},
	}
	for _, tt := range tests {
		if got := placement(tt.cs, tt.cur); got != tt.want {
			t.Errorf("%s: placement = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestWarnStep(t *testing.T) {
	w := func(pcts ...float64) []project.RateLimitWindow {
		var out []project.RateLimitWindow
		for i, p := range pcts {
			out = append(out, project.RateLimitWindow{Name: []string{"primary", "secondary"}[i], UsedPct: p})
		}
		return out
	}
	tests := []struct {
		name       string
		windows    []project.RateLimitWindow
		warned     bool
		pct        float64
		wantWarned bool
		wantWarn   string // the window warned of, "" for none
	}{
		{"below", w(50, 10), false, 90, false, ""},
		{"crosses on the long window", w(50, 91), false, 90, true, "secondary"},
		{"exactly at", w(90), false, 90, true, "primary"},
		{"already warned", w(95), true, 90, true, ""},
		{"back below after a reset: re-armed", w(3), true, 90, false, ""},
		{"no threshold", w(100), false, 0, false, ""},
		{"no windows", nil, true, 90, true, ""},
	}
	for _, tt := range tests {
		warned, top, warn := warnStep(tt.windows, tt.warned, tt.pct)
		got := ""
		if warn {
			got = top.Name
		}
		if warned != tt.wantWarned || got != tt.wantWarn {
			t.Errorf("%s: warnStep = %v, %q; want %v, %q", tt.name, warned, got, tt.wantWarned, tt.wantWarn)
		}
	}
}

// rotationTeam is two accounts and a role of two agents rotating across
// them, plus an agent on the first only.
func rotationTeam(t *testing.T) (*team.Config, project.Layout, string, string) {
	t.Helper()
	dir := t.TempDir()
	work, spare := filepath.Join(dir, "work"), filepath.Join(dir, "spare")
	src := "name: t\naccounts:\n  - {name: work, codex_home: " + work + "}\n  - {name: spare, codex_home: " + spare + "}\n" +
		"roles:\n  - name: eng\n    instances: 2\n    accounts: [work, spare]\n  - name: solo\n    accounts: [work]\n"
	path := filepath.Join(dir, "team.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := team.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	l := project.Layout{Dir: filepath.Join(dir, ".batty")}
	if err := os.MkdirAll(l.StateDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	return cfg, l, work, spare
}

func newRotationBook(t *testing.T, cfg *team.Config, l project.Layout) *QuotaBook {
	t.Helper()
	b, err := NewQuotaBook(cfg, l, nil, retry.QuotaPolicy{BackoffMin: time.Minute, BackoffMax: 30 * time.Minute, Cooldown: 15 * time.Minute, CooldownMax: 2 * time.Hour}, func() time.Duration { return 0 }, false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRotationAcrossAccounts(t *testing.T) {
	cfg, l, work, spare := rotationTeam(t)
	b := newRotationBook(t, cfg, l)
	for _, a := range []string{"eng-1", "eng-2"} {
		if h, ok := b.HomeOf(a); !ok || h != work {
			t.Fatalf("%s starts on %q (%v), want work", a, h, ok)
		}
	}
	if _, ok := b.HomeOf("solo"); ok {
		t.Fatal("an agent with one account is placed by the book")
	}
	now := time.Now()

	// work runs out: both engineers go on on spare; solo waits on work.
	h, err := b.Hit("eng-1", work, "m1", "limit", now.Add(time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Alert || len(h.Moves) != 2 || h.Moves[0] != (Move{Agent: "eng-1", From: work, To: spare, FromName: "work", ToName: "spare"}) || h.Moves[1].Agent != "eng-2" {
		t.Fatalf("hit = %+v", h)
	}
	if len(h.Agents) != 1 || h.Agents[0] != "solo" {
		t.Fatalf("left on work: %v, want [solo]", h.Agents)
	}
	if hm, _ := b.HomeOf("eng-2"); hm != spare || b.NameOf("eng-2") != "spare" || !b.MayTry("eng-2") || b.MayTry("solo") {
		t.Fatalf("eng-2 on %q (%s), may try %v; solo may try %v", hm, b.NameOf("eng-2"), b.MayTry("eng-2"), b.MayTry("solo"))
	}
	// eng-2's turn was still running on work when it paused: its own limit
	// counts against work, where it ran, and moves nobody.
	if h, _ := b.Hit("eng-2", work, "m2", "limit", now.Add(time.Hour), now); h.Alert || len(h.Moves) != 0 {
		t.Fatalf("second hit on work = %+v", h)
	}

	// A restart keeps the placement.
	b = newRotationBook(t, cfg, l)
	if hm, _ := b.HomeOf("eng-1"); hm != spare {
		t.Fatalf("after a restart eng-1 is on %q, want spare", hm)
	}

	// spare runs out too: everyone waits where they are.
	h, _ = b.Hit("eng-1", spare, "m3", "limit", now.Add(2*time.Hour), now)
	if !h.Alert || len(h.Moves) != 0 || len(h.Agents) != 2 || b.MayTry("eng-1") {
		t.Fatalf("hit on spare = %+v", h)
	}

	// work's pause runs out first (the earliest reset): its probe may go,
	// and the engineers, who prefer it, return to send it.
	if due := b.Due(now.Add(3 * time.Hour)); len(due) != 2 {
		t.Fatalf("due = %v", due)
	}
	moves, err := b.StartProbe(work, "")
	if err != nil || len(moves) != 2 || moves[0].To != work {
		t.Fatalf("StartProbe(work) = %+v, %v", moves, err)
	}
	if ok, probe := b.Admit("eng-1", "m3"); !ok || !probe {
		t.Fatalf("eng-1's message is not work's probe: %v %v", ok, probe)
	}
	if ok, _ := b.Admit("eng-2", "m4"); ok {
		t.Fatal("a second turn went while work's probe is in flight")
	}
	// The probe answers: work is open again, everyone on it.
	if _, resumed, _, err := b.ProbeEnded("eng-1", "m3", true); !resumed || err != nil {
		t.Fatalf("probe ended: resumed %v, %v", resumed, err)
	}
	for _, a := range []string{"eng-1", "eng-2", "solo"} {
		if !b.MayTry(a) {
			t.Errorf("%s may not try after work reopened", a)
		}
	}
	if hm, _ := b.HomeOf("eng-2"); hm != work {
		t.Fatalf("eng-2 on %q, want work", hm)
	}
}

func TestRotationProbeFailsAndGoesBack(t *testing.T) {
	cfg, l, work, spare := rotationTeam(t)
	b := newRotationBook(t, cfg, l)
	now := time.Now()
	b.Hit("eng-1", work, "m1", "limit", now.Add(time.Hour), now)
	// work's pause ran out while spare still works: the engineers return
	// to work for its probe.
	if moves, _ := b.StartProbe(work, ""); len(moves) != 2 {
		t.Fatalf("moves = %+v", moves)
	}
	if ok, probe := b.Admit("eng-2", "m9"); !ok || !probe {
		t.Fatal("no probe")
	}
	// The probe hits the limit again: back on spare, work backs off.
	h, _ := b.Hit("eng-2", work, "m9", "limit", time.Time{}, now.Add(time.Hour))
	if !h.ProbeFailed || len(h.Moves) != 2 || h.Moves[0].To != spare {
		t.Fatalf("failed probe = %+v", h)
	}
	if !b.MayTry("eng-1") || !b.MayTry("eng-2") {
		t.Fatal("the engineers may not run on spare")
	}
}

func TestUsageWarnsOnce(t *testing.T) {
	cfg, l, work, _ := rotationTeam(t)
	b := newRotationBook(t, cfg, l)
	now := time.Now()
	win := func(p float64) []project.RateLimitWindow {
		return []project.RateLimitWindow{{Name: "primary", UsedPct: p, WindowMinutes: 300, ResetsAt: now.Add(time.Hour)}}
	}
	if w, err := b.Usage("eng-1", "", win(40), now); w != nil || err != nil {
		t.Fatalf("40%%: %+v, %v", w, err)
	}
	w, _ := b.Usage("eng-1", "", win(92), now.Add(time.Second))
	if w == nil || w.Account != work || w.Name != "work" || w.Window.UsedPct != 92 || w.Pct != 90 {
		t.Fatalf("92%%: %+v", w)
	}
	if w, _ := b.Usage("eng-2", "", win(95), now.Add(2*time.Second)); w != nil {
		t.Fatalf("a second warning: %+v", w)
	}
	// Kept across a restart, and shown.
	b = newRotationBook(t, cfg, l)
	if w, _ := b.Usage("eng-1", "", win(97), now.Add(3*time.Second)); w != nil {
		t.Fatalf("a warning after a restart: %+v", w)
	}
	for _, v := range b.Views() {
		if v.Key == work && (v.Usage == nil || v.Usage.Windows[0].UsedPct != 97 || v.Name != "work") {
			t.Fatalf("view = %+v", v)
		}
	}
	// The latest snapshot wins, whatever the clock says: one seen "a year
	// earlier" (a clock set back) is kept, and saved.
	b.Usage("eng-1", "", win(10), now.AddDate(-1, 0, 0))
	b = newRotationBook(t, cfg, l)
	for _, v := range b.Views() {
		if v.Key == work && (v.Usage == nil || v.Usage.Windows[0].UsedPct != 10 || v.Usage.Warned) {
			t.Fatalf("after a snapshot under a clock set back: %+v", v.Usage)
		}
	}
}
