package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/procstat"
)

// liveChildren returns the pids of the live (not zombie) processes whose
// parent is pid.
func liveChildren(t *testing.T, pid int) []int {
	t.Helper()
	ps, err := procstat.List()
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range ps {
		if p.PPID == pid && p.State != "Z" {
			out = append(out, p.PID)
		}
	}
	slices.Sort(out)
	return out
}

// TestE2ETeamAppServerRuntime runs an agent whose role sets
// `runtime: app-server` through the real batty binary and the real Codex
// CLI: two messages are both completed on one thread, the second model
// request carries the first turn, one warm `codex app-server` (the shim's
// only child, the same process before and after the second turn) serves
// both, and `batty stop` leaves nothing running.
func TestE2ETeamAppServerRuntime(t *testing.T) {
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := newTeamRun(t, "e2e-as")
	team := fmt.Sprintf(`name: warm
codex:
  bin: %s
  codex_home: %s
  sandbox: danger-full-access
roles:
  - name: eng
    codex: {runtime: app-server}
`, codexBin, home)
	r.writeTeam(team)
	r.must("start")

	r.must("send", "eng", "FIRST-ASK [[mock:reply FIRST-ANSWER]]")
	st := r.waitStatus("eng's first turn", func(st control.Status) bool {
		e := agentStatus(st, "eng")
		return e.TurnsCompleted == 1 && e.State == "idle"
	})
	eng := agentStatus(st, "eng")
	if eng.ShimPID == 0 || eng.ThreadID == "" {
		t.Fatalf("eng status %+v", eng)
	}
	// The app-server outlives the turn: the idle shim's one child.
	server := liveChildren(t, eng.ShimPID)
	if len(server) != 1 {
		t.Fatalf("the idle shim %d has children %v, want one app-server", eng.ShimPID, server)
	}

	r.must("send", "eng", "SECOND-ASK [[mock:reply SECOND-ANSWER]]")
	st = r.waitStatus("eng's second turn", func(st control.Status) bool {
		e := agentStatus(st, "eng")
		return e.TurnsCompleted == 2 && e.State == "idle"
	})
	eng2 := agentStatus(st, "eng")
	if eng2.ShimPID != eng.ShimPID || eng2.ThreadID != eng.ThreadID {
		t.Fatalf("after the second turn eng is %+v, was %+v", eng2, eng)
	}
	if got := liveChildren(t, eng.ShimPID); !slices.Equal(got, server) {
		t.Fatalf("the shim's children are %v after the second turn, were %v: not one app-server for both", got, server)
	}

	// Two model requests on the one thread; the second carries the first
	// turn's question and answer.
	var turns []codextest.Request
	for _, req := range srv.Requests() {
		if req.Kind == "turn" || req.Kind == "" {
			turns = append(turns, req)
		}
	}
	if len(turns) != 2 {
		t.Fatalf("%d model requests, want 2", len(turns))
	}
	second := strings.Join(turns[1].InputTexts, "\n")
	for _, want := range []string{"FIRST-ASK", "FIRST-ANSWER", "SECOND-ASK"} {
		if !strings.Contains(second, want) {
			t.Errorf("the second request lacks %q:\n%s", want, second)
		}
	}
	if turns[0].ThreadID != eng.ThreadID || turns[1].ThreadID != eng.ThreadID {
		t.Errorf("requests on threads %q and %q, want %q", turns[0].ThreadID, turns[1].ThreadID, eng.ThreadID)
	}
	inbox := r.must("inbox", "--json")
	if !strings.Contains(inbox, "FIRST-ANSWER") || !strings.Contains(inbox, "SECOND-ANSWER") {
		t.Fatalf("the human's inbox lacks the replies:\n%s", inbox)
	}

	r.must("stop", "--timeout", "5s")
	codextest.AssertNoMarked(t, r.mark)
	if !codextest.WaitExit(server[0], codextest.ExitGrace) {
		t.Fatalf("the app-server %d outlived batty stop", server[0])
	}
	if st := r.status(); st.Daemon.PID != 0 {
		t.Fatalf("status after stop %+v", st)
	}
}
