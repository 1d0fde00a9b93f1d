package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/atomicfile/linktest"
	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/project"
)

// The state directory is writable by agents, so every test here plants a
// symbolic link in it pointing at "outside" (a directory standing for the
// rest of the user's files, holding one file, victim) and checks that
// nothing reaches outside.

func TestStateFilesAreNeverWrittenThroughLinks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		linked string // relative to the project; a link to outside (or victim)
		toFile bool
	}{
		{"state dir is .batty link", ".batty", false},
		{"state/ is a link", ".batty/state", false},
		{"agent state file is a link", ".batty/state/solo.json", true},
		{"dispatch state file is a link", ".batty/state/dispatch.json", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, victim := linktest.Outside(t)
			l := project.Layout{Dir: filepath.Join(t.TempDir(), project.DirName)}
			at := filepath.Join(l.Root(), tc.linked)
			target := out
			if tc.toFile {
				target = victim
			}
			linktest.Symlink(t, target, at)

			name := project.AgentStateName("solo")
			if strings.HasSuffix(tc.linked, project.DispatchName) {
				name = project.DispatchName
			}
			linktest.WantRefused(t, project.SaveJSON(l, name, project.AgentState{Name: "solo", ThreadID: "t-1"}), at, atomicfile.ErrSymlink)
			var st project.AgentState
			linktest.WantRefused(t, project.LoadJSON(l, name, &st), at, atomicfile.ErrSymlink)
			if tc.toFile && strings.HasSuffix(tc.linked, project.DispatchName) {
				_, err := dispatch.NewGate(l)
				linktest.WantRefused(t, err, at, atomicfile.ErrSymlink)
			}
			linktest.AssertUntouched(t, out, victim)
		})
	}
}

// A daemon refuses to start on a state directory with a link where it
// writes, naming the link, and writes nothing through it.
func TestDaemonRefusesToStartOnLinks(t *testing.T) {
	for _, linked := range []string{"", "state", "logs", "events.jsonl", "daemon.lock", "team-file", "state/solo.json", "state/dispatch.json"} {
		t.Run("state/"+linked, func(t *testing.T) {
			p := newProject(t, "  - name: solo\n")
			out, victim := linktest.Outside(t)
			target := out
			if err := os.MkdirAll(p.layout.StateRoot(), 0o700); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(filepath.Base(linked), ".") || linked == "team-file" {
				target = victim
				if err := p.layout.MkdirAll(); err != nil {
					t.Fatal(err)
				}
			}
			at := filepath.Join(p.layout.Dir, linked)
			if linked == "" {
				if err := os.RemoveAll(at); err != nil {
					t.Fatal(err)
				}
			}
			linktest.Symlink(t, target, at)
			d, err := New(p.cfg, p.layout, Options{})
			if err == nil {
				d.events.Close()
				project.ReleaseLock(d.lock)
			}
			linktest.WantRefused(t, err, at, atomicfile.ErrSymlink)
			if running, _ := project.Running(p.layout); running {
				t.Error("Running reports a daemon")
			}
			linktest.AssertUntouched(t, out, victim)
		})
	}
}

// An agent's transcript planted as a link is refused by its shim with a
// warning; the agent still works and nothing reaches the link's target.
// A state file planted as a link makes the save fail visibly (log, event,
// status) without stopping the agent.
func TestRunningTeamRefusesPlantedLinks(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	out, victim := linktest.Outside(t)
	if err := p.layout.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	linktest.Symlink(t, victim, p.layout.Transcript("solo"))
	r := p.start(nil)
	// Loaded at start; planted for the save after the turn.
	linktest.Symlink(t, victim, p.layout.AgentState("solo"))
	id := p.send("solo", "human", "secret message text")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	r.waitEvent(t, "warning about the state file", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWarning && e.Agent == "solo" && strings.Contains(e.Detail, p.layout.AgentState("solo")) && strings.Contains(e.Detail, "symbolic link")
	})
	st := r.d.status()
	if a := st.Agents[0]; !strings.Contains(a.LastError, "agent state not saved") || a.TurnsCompleted != 1 {
		t.Errorf("status %+v; want the failed save shown and the turn counted", a)
	}
	r.stop(t)
	linktest.AssertUntouched(t, out, victim)
	r.log.mu.Lock()
	logText := r.log.b.String()
	r.log.mu.Unlock()
	if !strings.Contains(logText, "Transcript refused") {
		t.Error("no warning about the refused transcript in the shim's log")
	}
}
