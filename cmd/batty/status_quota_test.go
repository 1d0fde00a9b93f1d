package main

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
)

// The headline of a running team names each account a usage limit
// pauses, until when and its agents; an open account is not named.
func TestStatusHeadlineNamesPausedAccounts(t *testing.T) {
	at := time.Now().Add(time.Hour)
	st := control.Status{Team: "t", Daemon: control.DaemonStatus{PID: 7}, Accounts: []control.AccountStatus{
		{Account: "/home/u/.codex", Agents: []string{"eng-1", "eng-2"}, Paused: true, ResumeAt: &at},
		{Account: "/home/u/.codex-p", Agents: []string{"lead"}, Paused: true, Probing: true},
		{Account: "/home/u/.codex-b", Agents: []string{"ops"}},
	}}
	head := statusHeadline(st)
	for _, want := range []string{
		"dispatch running · usage limit: account /home/u/.codex paused until " + at.Local().Format("2006-01-02 15:04 MST") + " (eng-1, eng-2)",
		"usage limit: account /home/u/.codex-p paused, probing now (lead)",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("headline lacks %q:\n%s", want, head)
		}
	}
	if strings.Contains(head, ".codex-b") {
		t.Errorf("an open account is in the headline:\n%s", head)
	}
}

// resume says which pauses it ended, one safe line.
func TestResumeEnded(t *testing.T) {
	if got := resumeEnded(nil); got != "" {
		t.Errorf("nothing ended: %q", got)
	}
	got := resumeEnded([]string{"usage-limit pause of account /a", "dispatch pause (manual: lunch\x1b[31m)"})
	want := "batty: resumed: usage-limit pause of account /a ended; dispatch pause (manual: lunch"
	if !strings.HasPrefix(got, want) || strings.Contains(got, "\x1b") || !strings.HasSuffix(got, ") ended") {
		t.Errorf("resumeEnded = %q", got)
	}
}
