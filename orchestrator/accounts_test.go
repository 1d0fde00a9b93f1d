package orchestrator

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// An account agents may move to that cannot run codex (its CODEX_HOME is
// missing) is named at start, with its fix, before a usage limit sends
// anyone there; the agents start on their preferred account.
func TestASpareAccountThatCannotRunIsNamedAtStart(t *testing.T) {
	p, _, spare := projectWithMissingSpare(t)
	r := p.start(nil)
	w := r.waitEvent(t, "the warning", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWarning && payloadOf[eventlog.Warning](e).Account == "spare"
	})
	if !strings.Contains(w.Detail, spare) || !strings.Contains(w.Detail, "codex_home") {
		t.Fatalf("warning %+v", w)
	}
	id := p.send("eng", "human", "hello")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("%s: %s", id, st)
	}
}

// A daemon that starts with an agent placed on its second account (work
// paused by a usage limit) checks that account for it: spare's home is
// missing, so the agent is parked at start with spare's problem and fix,
// and its message waits; work, where it does not run, parks nothing.
func TestAnAgentPlacedOnABrokenAccountIsParkedAtStart(t *testing.T) {
	p, work, spare := projectWithMissingSpare(t)
	now := time.Now().UTC()
	st := project.QuotaState{
		Paused: []project.AccountPause{{Account: work, Reason: "limit", Agent: "eng", Since: now, ProbeAt: now.Add(time.Hour)}},
		Placed: map[string]string{"eng": spare},
	}
	if err := project.SaveJSON(p.layout, project.QuotaName, st); err != nil {
		t.Fatal(err)
	}
	r := p.start(nil)
	a := r.waitAgent(t, "eng", "parked state", func(a control.AgentStatus) bool { return a.State == agentParked })
	if a.Parked == nil || a.Parked.Kind != "codex_home" || !strings.Contains(a.Parked.Detail, spare) || !strings.Contains(a.Parked.Fix, "CODEX_HOME="+spare) {
		t.Fatalf("eng parked with %+v; want spare's missing home", a.Parked)
	}
	id := p.send("eng", "human", "hello")
	r.waitAgent(t, "eng", "the message seen", func(a control.AgentStatus) bool { return a.Backlog == 1 })
	assertWaiting(t, p, r, id)
}

func TestGroupMoves(t *testing.T) {
	moves := []dispatch.Move{
		{Agent: "a", From: "/w", To: "/s", FromName: "work", ToName: "spare"},
		{Agent: "b", From: "/x", To: "/s"},
		{Agent: "c", From: "/w", To: "/s", FromName: "work", ToName: "spare"},
	}
	g := groupMoves(moves)
	if len(g) != 2 || strings.Join(g[0].agents, ",") != "a,c" || g[1].agents[0] != "b" || g[0].fromName != "work" {
		t.Fatalf("groups %+v", g)
	}
}

// The health an agent is attached to is the one of how it runs Codex on
// the account it is placed on: agents share one exactly when their targets
// there (and their hosts) are the same.
func TestHealthKeyFollowsTheAccount(t *testing.T) {
	codex := team.CodexSettings{Bin: "/bin/codex", CodexHome: "/h/work", Env: map[string]string{"K": "v"}, Config: map[string]string{"model": "m"}}
	eng := team.Agent{Name: "eng-1", Role: "eng", Cwd: "/p", Codex: codex,
		Accounts: []team.Account{{Name: "work", CodexHome: "/h/work"}, {Name: "spare", CodexHome: "/h/spare"}}}
	eng2 := eng
	eng2.Name = "eng-2"
	ops := team.Agent{Name: "ops", Role: "ops", Cwd: "/p", Codex: codex}
	other := ops
	other.Cwd = "/elsewhere"
	type placed struct {
		def        team.Agent
		home, host string
	}
	cases := []struct {
		name     string
		a, b     placed
		same     bool
		wantHome string // a's target's CODEX_HOME
	}{
		{"unplaced: the role's own home", placed{def: ops}, placed{def: eng}, true, "/h/work"},
		{"on the preferred account: as unplaced", placed{def: eng, home: "/h/work"}, placed{def: ops}, true, "/h/work"},
		{"moved to another account: its own", placed{def: eng, home: "/h/spare"}, placed{def: ops}, false, "/h/spare"},
		{"moved: left the preferred one", placed{def: eng, home: "/h/spare"}, placed{def: eng, home: "/h/work"}, false, "/h/spare"},
		{"two agents moved there share it", placed{def: eng, home: "/h/spare"}, placed{def: eng2, home: "/h/spare"}, true, "/h/spare"},
		{"another directory: another target", placed{def: other}, placed{def: ops}, false, "/h/work"},
		{"on a host: not the one here", placed{def: eng, home: "/h/spare", host: "h1"}, placed{def: eng, home: "/h/spare"}, false, "/h/spare"},
		{"on two hosts: one each", placed{def: eng, host: "h1"}, placed{def: eng, host: "h2"}, false, "/h/work"},
		{"on one host: shared", placed{def: eng, host: "h1"}, placed{def: eng2, host: "h1"}, true, "/h/work"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ta, tb := preflight.TargetFor(c.a.def, c.a.home), preflight.TargetFor(c.b.def, c.b.home)
			if ta.Home != c.wantHome {
				t.Fatalf("home %q, want %q", ta.Home, c.wantHome)
			}
			if ta.Bin != codex.Bin || ta.Cwd != c.a.def.Cwd || !slices.Equal(ta.Env, []string{"K=v"}) || ta.Config["model"] != "m" {
				t.Fatalf("target %+v: the settings are the role's", ta)
			}
			if same := healthKey(ta, c.a.host) == healthKey(tb, c.b.host); same != c.same {
				t.Fatalf("same health %v, want %v", same, c.same)
			}
		})
	}
}

// projectWithMissingSpare is a team whose agent eng rotates over the
// accounts work (a home that exists) and spare, whose home is missing;
// work and spare are their CODEX_HOMEs.
func projectWithMissingSpare(t *testing.T) (p *testProject, work, spare string) {
	t.Helper()
	dir := t.TempDir()
	work, spare = filepath.Join(dir, "work"), filepath.Join(dir, "nowhere")
	p = newProjectWith(t, "timeouts:\n  shutdown: 5s\naccounts:\n  - {name: work, codex_home: "+work+"}\n  - {name: spare, codex_home: "+spare+"}\n",
		"  - name: eng\n    accounts: [work, spare]\n")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	return p, work, spare
}
