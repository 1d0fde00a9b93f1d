package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/team"
)

// An agent that asks for its own landing in the turn that wrote the work
// (`batty merge eng` in its shell, relayed into the landing inbox) gets
// that work landed: the request waits for the turn's commit, status
// saying so, and main then holds the file. Without the wait the queue
// finds nothing on the branch and records "nothing to land".
func TestALandingAskedMidTurnWaitsForTheTurnsCommit(t *testing.T) {
	p := newGitProject(t, "", "  - name: eng\n    workspace: worktree\n")
	r := p.start(inProcess)
	gate := filepath.Join(t.TempDir(), "gate")
	id := p.send("eng", "human", "scenario:gate:"+gate)
	r.waitEvent(t, "the turn", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == id })
	before := git(t, p.dir, "rev-parse", "main")

	// The model's edit, then its `batty merge eng`, in the same turn.
	wt := filepath.Join(p.layout.WorktreesDir(), "eng")
	if err := os.WriteFile(filepath.Join(wt, "feature.txt"), []byte("from the turn\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.send(team.LandingBox, "eng", "eng")
	e := r.waitEvent(t, "the landing waiting for the turn", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvLandingWaiting && e.Agent == "eng"
	})
	if !strings.Contains(e.Detail, "waits for eng's turn to end") {
		t.Fatalf("landing_waiting %q", e.Detail)
	}
	var held control.LandingStatus
	for _, l := range r.d.status().Landings {
		if l.Agent == "eng" {
			held = l
		}
	}
	if held.State != string(landing.WaitingTurn) || !strings.Contains(held.Detail, "waits for eng's turn to end") {
		t.Fatalf("status landing %+v, want waiting_turn", held)
	}
	if r.count(eventlog.EvLanded, "") != 0 || git(t, p.dir, "rev-parse", "main") != before {
		t.Fatal("the landing ran before the turn's commit")
	}

	// The turn ends: its commit, then the landing.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	landed := r.waitEvent(t, "the landing", func(e eventlog.Event) bool { return e.Type == eventlog.EvLanded && e.Agent == "eng" })
	if payloadOf[eventlog.Landed](landed).Nothing {
		t.Fatalf("landed nothing: %s", landed.Detail)
	}
	if got := git(t, p.dir, "show", "main:feature.txt"); got != "from the turn" {
		t.Fatalf("main's feature.txt %q", got)
	}
}

// A daemon killed while a landing waits for its agent's turn lands it
// after the restart: the request is in the queue's state file, and the
// work the killed turn left is committed before it lands.
func TestALandingWaitingForATurnLandsAfterACrash(t *testing.T) {
	p := newGitProject(t, "", "  - name: eng\n    workspace: worktree\n")
	child := p.startChildDaemon()
	gate := filepath.Join(t.TempDir(), "gate")
	p.send("eng", "human", "scenario:gate:"+gate)
	wt := filepath.Join(p.layout.WorktreesDir(), "eng")
	waitFor(t, "the worktree", func() bool { _, err := os.Stat(filepath.Join(wt, "shared.txt")); return err == nil })
	waitFor(t, "the turn", func() bool { return fileHas(p.fakeLog, "batty message") })
	if err := os.WriteFile(filepath.Join(wt, "feature.txt"), []byte("from the turn\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.send(team.LandingBox, "eng", "eng")
	waitFor(t, "the request held for the turn", func() bool { return fileHas(landing.StatePath(p.layout), `"waiting_turn"`) })
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	before := git(t, p.dir, "rev-parse", "main")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	r := p.start(nil)
	landed := r.waitEvent(t, "the landing", func(e eventlog.Event) bool { return e.Type == eventlog.EvLanded && e.Agent == "eng" })
	if payloadOf[eventlog.Landed](landed).Nothing || git(t, p.dir, "rev-parse", "main") == before {
		t.Fatalf("landed nothing: %s", landed.Detail)
	}
	if got := git(t, p.dir, "show", "main:feature.txt"); got != "from the turn" {
		t.Fatalf("main's feature.txt %q", got)
	}
}

// fileHas reports whether the file at path holds s.
func fileHas(path, s string) bool {
	b, _ := os.ReadFile(path)
	return strings.Contains(string(b), s)
}

func TestWaitsForTurn(t *testing.T) {
	tests := []struct {
		name         string
		open         bool
		sent, heldAt uint64
		seen         bool
		want         bool
	}{
		{"idle", false, 3, 0, false, false},
		{"mid-turn, not held yet", true, 3, 0, false, true},
		{"held, the same turn goes on", true, 3, 3, true, true},
		{"held, a later turn runs: the one it waited for is committed", true, 4, 3, true, false},
		{"held, idle", false, 3, 3, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := waitsForTurn(tt.open, tt.sent, tt.heldAt, tt.seen); got != tt.want {
				t.Fatalf("waitsForTurn = %v, want %v", got, tt.want)
			}
		})
	}
}

// An agent whose inbox keeps it busy does not hold its landing for ever:
// the request waits for the turn in flight when it came, and lands that
// turn's work while the next turn runs.
func TestALandingWaitsForOneTurnNotForABusyAgentsBacklog(t *testing.T) {
	p := newGitProject(t, "", "  - name: eng\n    workspace: worktree\n")
	r := p.start(inProcess)
	gate1, gate2 := filepath.Join(t.TempDir(), "gate1"), filepath.Join(t.TempDir(), "gate2")
	first := p.send("eng", "human", "scenario:gate:"+gate1)
	r.waitEvent(t, "the first turn", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == first })
	second := p.send("eng", "human", "scenario:gate:"+gate2)
	wt := filepath.Join(p.layout.WorktreesDir(), "eng")
	if err := os.WriteFile(filepath.Join(wt, "feature.txt"), []byte("from the first turn\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.send(team.LandingBox, "human", "eng")
	r.waitEvent(t, "the landing waiting for the turn", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvLandingWaiting && e.Agent == "eng"
	})
	if err := os.WriteFile(gate1, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r.waitEvent(t, "the second turn", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == second })
	r.waitEvent(t, "the landing", func(e eventlog.Event) bool { return e.Type == eventlog.EvLanded && e.Agent == "eng" })
	if got := git(t, p.dir, "show", "main:feature.txt"); got != "from the first turn" {
		t.Fatalf("main's feature.txt %q", got)
	}
	if r.count(eventlog.EvTurnFinished, second) != 0 {
		t.Fatal("the second turn ended before the landing: the test shows nothing")
	}
	os.WriteFile(gate2, nil, 0o600)
}
