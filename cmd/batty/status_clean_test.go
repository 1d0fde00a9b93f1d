package main

import (
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/battyhq/batty/control"
)

// hostile is text a model or an agent might put into an error: an OSC 52
// (writes the clipboard), an OSC 0 (sets the window title), a screen clear,
// a CR that overwrites the line, backspaces, a line break and bidirectional
// controls that reorder what is shown.
const hostile = "boom\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\x1b]0;pwned\x1b\\\x1b[2J\rfake\b\b\nnext \u202eevil\u2066\u200f\u061c"

// checkTerminalSafe fails the test for any control character but "\n" (and
// "\t" when tabs is set) and any invisible format character in out.
func checkTerminalSafe(t *testing.T, what, out string, tabs bool) {
	t.Helper()
	for _, r := range out {
		if r == '\n' || (tabs && r == '\t') {
			continue
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			t.Errorf("%s holds %U:\n%q", what, r, out)
			return
		}
	}
}

// TestStatusCleansOutsideText: everything `batty status` prints that comes
// from outside — an agent's last error, a parked agent's detail and fix, an
// account's reason, codex's network notice, the pause reason, a schedule's
// last error — reaches the terminal as one line without escape sequences,
// CRs or bidirectional controls; what was removed shows as an escape.
func TestStatusCleansOutsideText(t *testing.T) {
	now := time.Now()
	resume := now.Add(time.Hour)
	id := "id" + hostile
	st := control.Status{
		Team:     "t",
		Daemon:   control.DaemonStatus{PID: 42},
		Dispatch: control.DispatchStatus{Paused: true, Reason: hostile},
		Agents: []control.AgentStatus{
			{Name: "a", State: "idle", LastError: hostile, ThreadID: hostile, InFlight: &id},
			{Name: "b", State: "parked", Parked: &control.ParkedStatus{Kind: "codex_broken", Detail: hostile, Fix: hostile}},
			{Name: "c", State: control.AgentWaitingForNetwork,
				Network: &control.NetworkStatus{State: "waiting", Account: "/h" + hostile, Since: now, Message: hostile}},
			{Name: "d", State: "idle", Network: &control.NetworkStatus{State: "held", Account: "/h" + hostile, Since: now}},
		},
		Accounts:  []control.AccountStatus{{Account: "/h" + hostile, Agents: []string{"a"}, Paused: true, Reason: hostile, ResumeAt: &resume}},
		Schedules: []control.ScheduleStatus{{Name: "n", To: "a", Every: "1h", State: "failed", Running: hostile, LastError: hostile}},
	}
	var b strings.Builder
	printStatus(&b, st)
	out := b.String()
	checkTerminalSafe(t, "status", out, false)
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "fake") || strings.HasPrefix(l, "next") {
			t.Errorf("a line break of outside text starts a line of its own: %q\n%s", l, out)
		}
	}
	for _, want := range []string{
		"PAUSED: boom fake", // the table cuts at 60 runes; the rest follows in full
		`b parked: boom fake\x08\x08 next \u202eevil\u2066\u200f\u061c — boom fake`,
		`(account /hboom fake\x08\x08 next \u202eevil\u2066\u200f\u061c): boom fake`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "boom fake") < 8 {
		t.Errorf("the outside texts are not all shown:\n%s", out)
	}
}
