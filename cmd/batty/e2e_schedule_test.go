package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
)

// scheduleStatus returns schedule name of st (zero when absent).
func scheduleStatus(st control.Status, name string) control.ScheduleStatus {
	for _, s := range st.Schedules {
		if s.Name == name {
			return s
		}
	}
	return control.ScheduleStatus{}
}

// Scheduled prompts through the real batty binary and the real Codex CLI:
// runs at the period up to max_runs, each answered into the human's inbox;
// the daemon killed (SIGKILL) with a run in flight neither repeats that run
// nor forgets the count when it starts again.
func TestE2EScheduleWithRealCodex(t *testing.T) {
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := &teamRun{t: t, bin: buildBatty(t), dir: t.TempDir(), mark: fmt.Sprintf("e2e-%d", time.Now().UnixNano())}
	os.WriteFile(filepath.Join(r.dir, "team.yaml"), []byte(fmt.Sprintf(`name: e2e
codex:
  bin: %s
  codex_home: %s
  sandbox: danger-full-access
roles:
  - name: eng
  - name: ops
schedules:
  - {name: tick, to: eng, prompt: "scheduled [[mock:reply TICK]]", every: 1s, max_runs: 2}
  - {name: slow, to: ops, prompt: "slow one [[mock:slow 8]]", every: 1h, max_runs: 1}
`, codexBin, home)), 0o644)
	t.Cleanup(func() {
		r.batty("stop", "--timeout", "2s")
		codextest.AssertNoMarked(t, r.mark)
	})
	r.must("start")
	// In flight at ops: delivered, so its state was saved before (a
	// schedule shows "running" a moment before its state is saved).
	st := r.waitStatus("slow's run to be in flight", func(st control.Status) bool {
		if scheduleStatus(st, "slow").State != "running" {
			return false
		}
		for _, a := range st.Agents {
			if a.Name == "ops" && a.InFlight != nil && strings.HasSuffix(*a.InFlight, "-schedule.slow.1") {
				return true
			}
		}
		return false
	})

	// SIGKILL with slow's run in flight; the next daemon finds it in the
	// inbox and lets it finish: one run, counted once.
	pid := st.Daemon.PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// A killed daemon leaves the run "running" in the state file.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := control.Call(layoutOf(r.t, r.dir), control.Request{Op: control.OpStatus}, time.Second)
		if errors.Is(err, control.ErrNotRunning) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed daemon still answers: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // the daemon is another process
	}
	states, err := os.ReadFile(filepath.Join(layoutOf(r.t, r.dir).Dir, "state", "schedules.json"))
	if err != nil || !strings.Contains(string(states), `-schedule.slow.1"`) {
		t.Fatalf("state file after the kill (%v):\n%s", err, states)
	}
	r.must("start")
	st = r.waitStatus("slow to stop after its run", func(st control.Status) bool {
		return scheduleStatus(st, "slow").State == "stopped"
	})
	st = r.waitStatus("tick to stop after its 2 runs", func(st control.Status) bool {
		return scheduleStatus(st, "tick").State == "stopped"
	})
	if s := scheduleStatus(st, "slow"); s.RunsCompleted != 1 || s.RunsFailed != 0 || s.LastError != "" {
		t.Fatalf("slow %+v", s)
	}
	if s := scheduleStatus(st, "tick"); s.RunsCompleted != 2 || s.RunsFailed != 0 || s.LastError != "" || !s.NextDue.IsZero() || s.LastFinished.Before(s.LastStarted) {
		t.Fatalf("tick %+v", s)
	}
	var replies []struct {
		InReplyTo string `json:"in_reply_to"`
	}
	if err := json.Unmarshal([]byte(r.must("inbox", "--json")), &replies); err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, m := range replies {
		if i := strings.Index(m.InReplyTo, "-schedule."); i >= 0 {
			runs[m.InReplyTo[i+len("-schedule."):]]++
		}
	}
	// A tick run the kill interrupted may be answered twice (its turn
	// ran again); slow's was killed before Codex answered.
	if len(runs) != 3 || runs["tick.1"] == 0 || runs["tick.2"] == 0 || runs["slow.1"] != 1 {
		t.Fatalf("replies to runs %v, want tick.1, tick.2 and one to slow.1, nothing else", runs)
	}
	text := r.must("status")
	if !strings.Contains(text, "SCHEDULE") || !strings.Contains(text, "tick") || !strings.Contains(text, "stopped") {
		t.Fatalf("status text:\n%s", text)
	}
}
