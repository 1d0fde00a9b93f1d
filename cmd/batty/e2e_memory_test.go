package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/searchindex"
	"github.com/battyhq/batty/threads"
)

// The real Codex CLI on both runtimes against the mock Responses API: a
// turn, a reset, a turn on the fresh thread, a restart of the team and a
// turn more. `batty threads --all` with the team stopped lists each
// agent's two threads, the first archived by the reset with its one turn,
// the second current with the turns after the reset and the restart; the
// archived thread's first message and last reply are shown, `batty
// search` finds its turn, `threads show` exports it, and a turn's command
// is kept with its output.
func TestE2EThreadsAcrossResetAndRestart(t *testing.T) {
	r, _, _ := newRuntimesTeam(t, "e2e-memory")
	agents := []string{"eng", "warm"}
	turn := func(n int, word string) {
		t.Helper()
		for _, a := range agents {
			r.must("send", a, fmt.Sprintf("turn %d of %s: %s%s [[mock:reply %s-%d]]", n, a, word, a, a, n))
		}
		r.waitStatus(fmt.Sprintf("turn %d", n), func(st control.Status) bool {
			for _, a := range agents {
				if s := agentStatus(st, a); s.TurnsCompleted != n || s.State != "idle" {
					return false
				}
			}
			return true
		})
	}
	r.must("start")
	turn(1, "zanzibar")
	for _, a := range agents {
		r.must("reset", a, "--reason", "a fresh start")
	}
	turn(2, "kilimanjaro")
	r.must("stop", "--timeout", "5s")
	r.must("start")
	turn(3, "timbuktu")
	// A turn that runs a command: the journal keeps it with its output.
	for _, a := range agents {
		r.must("send", a, "turn 4: run it [[mock:shell echo recalled-$BATTY_AGENT]]")
	}
	r.waitStatus("turn 4", func(st control.Status) bool {
		for _, a := range agents {
			if s := agentStatus(st, a); s.TurnsCompleted != 4 || s.State != "idle" {
				return false
			}
		}
		return true
	})
	r.must("stop", "--timeout", "5s")

	var got struct{ Threads []threads.Thread }
	if err := json.Unmarshal([]byte(r.must("threads", "--all", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	archived := map[string]threads.Thread{}
	for _, a := range agents {
		var mine []threads.Thread
		for _, th := range got.Threads {
			if th.Agent == a {
				mine = append(mine, th)
			}
		}
		if len(mine) != 2 {
			t.Fatalf("%s has %d threads: %+v", a, len(mine), mine)
		}
		cur, old := mine[0], mine[1]
		if cur.State != threads.StateCurrent || cur.Turns != 3 || old.State != threads.StateArchived || old.Ended != threads.EndReset ||
			old.EndReason != "a fresh start" || old.Turns != 1 || cur.ID == old.ID {
			t.Fatalf("%s's threads: %+v", a, mine)
		}
		archived[a] = old
	}

	l := layoutOf(t, r.dir)
	if _, err := os.Stat(filepath.Join(l.Dir, journal.DirName)); os.IsNotExist(err) {
		t.Fatalf("the daemon kept no turn journal: %v", err)
	}
	for _, a := range agents {
		if th := archived[a]; !strings.Contains(th.FirstMessage, "zanzibar"+a) || !strings.Contains(th.LastReply, a+"-1") {
			t.Errorf("%s's archived thread: %+v", a, th)
		}
	}
	var found struct{ Hits []searchindex.Hit }
	if err := json.Unmarshal([]byte(r.must("search", "zanzibarwarm", "--json")), &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Hits) != 1 || found.Hits[0].Thread != archived["warm"].ID || found.Hits[0].Agent != "warm" {
		t.Errorf("search of an archived thread's turn: %+v", found.Hits)
	}
	show := r.must("threads", "show", archived["eng"].ID, "--markdown")
	if !strings.Contains(show, "zanzibareng") || !strings.Contains(show, "eng-1") {
		t.Errorf("threads show:\n%s", show)
	}
	for _, a := range agents {
		var cur struct{ Turns []journal.Record }
		if err := json.Unmarshal([]byte(r.must("threads", "show", currentOf(t, got.Threads, a), "--json")), &cur); err != nil {
			t.Fatal(err)
		}
		last := cur.Turns[len(cur.Turns)-1]
		if len(last.Commands) != 1 || !strings.Contains(last.Commands[0].Command, "recalled-$BATTY_AGENT") ||
			!strings.Contains(last.Commands[0].Output, "recalled-"+a) || last.Commands[0].ExitCode == nil || *last.Commands[0].ExitCode != 0 {
			t.Errorf("%s's command turn in the journal: %+v", a, last.Commands)
		}
	}
}

// currentOf is the id of agent's current thread in ts.
func currentOf(t *testing.T, ts []threads.Thread, agent string) string {
	t.Helper()
	for _, th := range ts {
		if th.Agent == agent && th.State == threads.StateCurrent {
			return th.ID
		}
	}
	t.Fatalf("%s has no current thread", agent)
	return ""
}

// newRuntimesTeam writes the team name of two agents on one Codex home
// of the mock Responses API, with the real Codex CLI: eng on exec, warm on
// its app-server. It returns the team's run, the mock and the home.
func newRuntimesTeam(t *testing.T, name string) (*teamRun, *codextest.Server, string) {
	t.Helper()
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := newTeamRun(t, name)
	r.writeTeam(fmt.Sprintf(`name: %s
codex:
  bin: %s
  codex_home: %s
  sandbox: danger-full-access
roles:
  - name: eng
  - name: warm
    codex:
      runtime: app-server
`, name, codexBin, home))
	return r, srv, home
}
