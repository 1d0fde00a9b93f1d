package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
)

// jsonStatus runs `batty status --json` in dir.
func jsonStatus(t *testing.T, dir string) control.Status {
	t.Helper()
	var st control.Status
	if err := json.Unmarshal([]byte(mustBatty(t, dir, "status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// waitJSONStatus asks `batty status --json` in dir until ok holds (the
// daemon is another process: it tells no event).
func waitJSONStatus(t *testing.T, dir, what string, ok func(control.Status) bool) control.Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := jsonStatus(t, dir)
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; status %+v", what, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// recorded returns the outcome status of message id in box ("" while it
// has none).
func recorded(t *testing.T, l project.Layout, box, id string) string {
	t.Helper()
	m, _, err := openBox(t, l, box).Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if m.Outcome == nil {
		return ""
	}
	return m.Outcome.Status
}

func TestCancelOfAStoppedTeam(t *testing.T) {
	dir, l := writeTeam(t)
	id, _ := mustSend(t, dir, nil, "", "manager", "never mind")
	role, _ := mustSend(t, dir, nil, "", "engineer", "nor this")
	// The short form the feed shows is enough.
	out := mustBatty(t, dir, "cancel", inbox.ShortID(id), role)
	if !strings.Contains(out, "batty: cancelled "+id+" (manager)") || !strings.Contains(out, "batty: cancelled "+role+" (@engineer)") {
		t.Fatalf("cancel: %q", out)
	}
	if recorded(t, l, "manager", id) != inbox.StatusCancelled || recorded(t, l, "@engineer", role) != inbox.StatusCancelled {
		t.Fatal("not recorded as cancelled")
	}
	out, errOut, code := runBattyIn(t, dir, nil, "", "cancel", id, "20260101T000000.000000000Z-0badc0de")
	if code != 1 || out != "" || !strings.Contains(errOut, id+" (manager): not cancelled: finished already (cancelled)") ||
		!strings.Contains(errOut, "20260101T000000.000000000Z-0badc0de: not found") {
		t.Fatalf("second cancel: exit %d, %q, %q", code, out, errOut)
	}
	if out := mustBatty(t, dir, "inbox", "manager"); !strings.Contains(out, "cancelled") {
		t.Fatalf("inbox does not show the cancelled message:\n%s", out)
	}
}

func TestCancelAndRestartOfARunningTeam(t *testing.T) {
	dir := fakeTeam(t, "steer", 1)
	l := layoutOf(t, dir)
	t.Cleanup(func() { runBattyIn(t, dir, nil, "", "stop", "--timeout", "1s") })
	mustBatty(t, dir, "start", "--no-tmux")
	busy, _ := mustSend(t, dir, nil, "", "eng", "scenario:slow:60 long job")
	queued, _ := mustSend(t, dir, nil, "", "eng", "waits behind it")
	st := waitJSONStatus(t, dir, "the long job in flight", func(st control.Status) bool {
		return len(st.Agents) == 1 && st.Agents[0].InFlight != nil && *st.Agents[0].InFlight == busy
	})
	if st.TeamFileChanged || strings.Contains(mustBatty(t, dir, "status"), "batty restart") {
		t.Fatal("the team file is reported changed right after the start")
	}

	// Cancel: the queued one goes, the one in flight only with --interrupt.
	out, errOut, code := runBattyIn(t, dir, nil, "", "cancel", queued, busy)
	if code != 1 || !strings.Contains(out, "batty: cancelled "+queued) || !strings.Contains(errOut, busy+" (eng): not cancelled: in flight on eng; `batty cancel --interrupt` ends its turn") {
		t.Fatalf("cancel: exit %d, %q, %q", code, out, errOut)
	}
	if out := mustBatty(t, dir, "cancel", "--interrupt", busy); !strings.Contains(out, "cancelling "+busy) {
		t.Fatalf("cancel --interrupt: %q", out)
	}
	waitJSONStatus(t, dir, "the turn interrupted", func(st control.Status) bool { return st.Agents[0].InFlight == nil })
	if recorded(t, l, "eng", busy) != inbox.StatusCancelled || recorded(t, l, "eng", queued) != inbox.StatusCancelled {
		t.Fatal("not recorded as cancelled")
	}
	if out := mustBatty(t, dir, "feed", "-n", "200", "--follow=false"); !strings.Contains(out, "eng: message "+inbox.ShortID(queued)+" from human cancelled") ||
		!strings.Contains(out, "eng: message "+inbox.ShortID(busy)+" from human cancelled (its turn interrupted)") || strings.Contains(out, inbox.ShortID(busy)+" interrupted") {
		t.Fatalf("the feed does not show the cancels:\n%s", out)
	}

	// An edited team file: status and validate say restart applies it.
	done, _ := mustSend(t, dir, nil, "", "eng", "before the restart")
	before := waitJSONStatus(t, dir, "the turn before the restart", func(st control.Status) bool { return st.Agents[0].TurnsCompleted == 1 })
	team := filepath.Join(dir, "team.yaml")
	orig, err := os.ReadFile(team)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(team, append(orig, "# edited\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"validate"}} {
		if out := mustBatty(t, dir, args...); !strings.Contains(out, teamChangedNotice) {
			t.Fatalf("batty %s does not say the team file changed:\n%s", args[0], out)
		}
	}
	if !jsonStatus(t, dir).TeamFileChanged {
		t.Fatal("status --json: team_file_changed false")
	}
	out = mustBatty(t, dir, "restart", "--no-tmux")
	if !strings.Contains(out, "batty: stopped (pid ") {
		t.Fatalf("restart: %q", out)
	}
	after := jsonStatus(t, dir)
	if after.Daemon.PID == 0 || after.Daemon.PID == before.Daemon.PID || after.TeamFileChanged {
		t.Fatalf("after the restart: pid %d (before %d), team_file_changed %v", after.Daemon.PID, before.Daemon.PID, after.TeamFileChanged)
	}
	if after.Agents[0].ThreadID != before.Agents[0].ThreadID || after.Agents[0].TurnsCompleted != 1 || recorded(t, l, "eng", done) != inbox.StatusCompleted {
		t.Fatalf("the restart lost the thread or the history: before %+v, after %+v", before.Agents[0], after.Agents[0])
	}
	if out := mustBatty(t, dir, "validate"); strings.Contains(out, "batty restart") {
		t.Fatalf("validate after the restart: %q", out)
	}
}

func TestFeedTellsACancelOnce(t *testing.T) {
	turn := eventlog.Event{Type: eventlog.EvTurnFinished, Agent: "eng", Message: "m-1f2e3d4c", Data: eventlog.TurnFinished{Status: "interrupted", Cancelled: true}}
	if _, text := feedText(turn); text != "" {
		t.Fatalf("the turn interrupted to cancel its message shows %q", text)
	}
	cancelled := eventlog.Event{Type: eventlog.EvCancelled, Message: "m-1f2e3d4c", Data: eventlog.Cancelled{From: "manager", Queue: "@eng"}}
	if _, text := feedText(cancelled); text != "✘ @eng: message 1f2e3d4c from manager cancelled" {
		t.Fatalf("cancelled in a role queue: %q", text)
	}
}

func TestExpandMessageID(t *testing.T) {
	known := []string{"20261121T125100.000000001Z-1f2e3d4c", "20261121T125100.000000002Z-1f99aaaa", "20261122T000000.000000000Z-abcdef01"}
	for _, tc := range []struct{ arg, want, err string }{
		{known[0], known[0], ""},
		{"1f2e", known[0], ""},
		{"20261122", known[2], ""},
		{"abc", known[2], ""},
		{"1f", "", "matches 2 messages"},
		{"20261121T", "", "matches 2 messages"},
		{"ffff", "ffff", ""}, // unknown: the queues answer for it
	} {
		got, err := expandMessageID(tc.arg, known)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("expandMessageID(%q) = %q, %v; want %q, %q", tc.arg, got, err, tc.want, tc.err)
		}
	}
}
