package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/eventlog"
)

// An account agents may move to that cannot run codex (its CODEX_HOME is
// missing) is named at start, with its fix, before a usage limit sends
// anyone there; the agents start on their preferred account.
func TestASpareAccountThatCannotRunIsNamedAtStart(t *testing.T) {
	dir := t.TempDir()
	work, spare := filepath.Join(dir, "work"), filepath.Join(dir, "nowhere")
	p := newProjectWith(t, "timeouts:\n  shutdown: 5s\naccounts:\n  - {name: work, codex_home: "+work+"}\n  - {name: spare, codex_home: "+spare+"}\n",
		"  - name: eng\n    accounts: [work, spare]\n")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	r := p.start(nil)
	w := r.waitEvent(t, "the warning", func(e eventlog.Event) bool { return e.Type == eventlog.EvWarning && e.Data["account"] == "spare" })
	if !strings.Contains(w.Detail, spare) || !strings.Contains(w.Detail, "codex_home") {
		t.Fatalf("warning %+v", w)
	}
	id := p.send("eng", "human", "hello")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("%s: %s", id, st)
	}
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
