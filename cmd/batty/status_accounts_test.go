package main

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
)

// Text status names each paused account: its agents, why, until when, and
// how many messages it holds; an open account is not listed.
func TestStatusShowsPausedAccounts(t *testing.T) {
	at := time.Now().Add(time.Hour)
	var b strings.Builder
	printStatus(&b, control.Status{Team: "t", Accounts: []control.AccountStatus{
		{Account: "/home/u/.codex", Agents: []string{"eng-1", "eng-2"}, Paused: true, Reason: "You’ve hit your usage limit. Try again at 1:14 PM.", ResumeAt: &at, Held: 3},
		{Account: "/home/u/.codex-b", Agents: []string{"lead"}},
	}})
	out := b.String()
	for _, want := range []string{"QUOTA PAUSED account /home/u/.codex (eng-1, eng-2)", "until " + at.Local().Format("2006-01-02 15:04:05 MST"), "3 message(s) held", "Try again at 1:14 PM."} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, ".codex-b") {
		t.Errorf("an open account is listed:\n%s", out)
	}
}

func TestRateLimitsLine(t *testing.T) {
	at := time.Now().Add(90 * time.Minute)
	rl := &control.RateLimitsStatus{Windows: []control.RateLimitWindowStatus{
		{Name: "primary", UsedPct: 42.4, WindowMinutes: 300, ResetsAt: &at},
		{Name: "secondary", UsedPct: 10, WindowMinutes: 7 * 24 * 60},
		{Name: "other\x1b[2J", UsedPct: 1},
	}}
	want := "5h 42% (resets " + at.Local().Format("01-02 15:04") + ") · 7d 10% · other 1%"
	if got := rateLimitsLine(rl); got != want {
		t.Fatalf("rateLimitsLine = %q, want %q", got, want)
	}
	if rateLimitsLine(nil) != "-" {
		t.Fatal("no snapshot is not -")
	}
}
