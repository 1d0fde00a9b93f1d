package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/atomicfile/linktest"
)

// The state directory is writable by agents, so every test here plants a
// symbolic link in it pointing at "outside" (a directory standing for the
// rest of the user's files, holding one file, victim) and checks that
// nothing reaches outside.

// wantRefused fails the test unless err refuses the link at path and says
// how to fix it.
func wantRefused(t *testing.T, err error, path string) {
	t.Helper()
	if !errors.Is(err, atomicfile.ErrSymlink) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("err = %v; want the link %s refused with a fix", err, path)
	}
}

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
			l := Layout{Dir: filepath.Join(t.TempDir(), DirName)}
			at := filepath.Join(l.Root(), tc.linked)
			target := out
			if tc.toFile {
				target = victim
			}
			linktest.Symlink(t, target, at)

			name := agentStateName("solo")
			if strings.HasSuffix(tc.linked, dispatchName) {
				name = dispatchName
			}
			wantRefused(t, saveJSON(l, name, AgentState{Name: "solo", ThreadID: "t-1"}), at)
			var st AgentState
			wantRefused(t, loadJSON(l, name, &st), at)
			if tc.toFile && strings.HasSuffix(tc.linked, dispatchName) {
				_, err := newGate(l)
				wantRefused(t, err, at)
			}
			linktest.AssertUntouched(t, out, victim)
		})
	}
}

// A daemon refuses to start on a state directory with a link where it
// writes, naming the link, and writes nothing through it.
func TestDaemonRefusesToStartOnLinks(t *testing.T) {
	for _, linked := range []string{".batty", ".batty/state", ".batty/logs", ".batty/events.jsonl", ".batty/daemon.lock", ".batty/team-file", ".batty/state/solo.json", ".batty/state/dispatch.json"} {
		t.Run(linked, func(t *testing.T) {
			p := newProject(t, "  - name: solo\n")
			out, victim := linktest.Outside(t)
			target := out
			if strings.Contains(filepath.Base(linked), ".") && linked != ".batty" {
				target = victim
				if err := p.layout.MkdirAll(); err != nil {
					t.Fatal(err)
				}
			}
			at := filepath.Join(p.dir, linked)
			linktest.Symlink(t, target, at)
			d, err := New(p.cfg, p.layout, Options{})
			if err == nil {
				d.events.Close()
				releaseLock(d.lock)
			}
			wantRefused(t, err, at)
			if running, _ := Running(p.layout); running {
				t.Error("Running reports a daemon")
			}
			linktest.AssertUntouched(t, out, victim)
		})
	}
}

// A .batty swapped for a link after the event log was opened does not
// redirect its rotation: the log keeps working in the directory it checked.
func TestEventLogRotationDoesNotFollowSwappedDir(t *testing.T) {
	out, victim := linktest.Outside(t)
	l := Layout{Dir: filepath.Join(t.TempDir(), DirName)}
	if err := l.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	var errs []error
	el, err := openEventLog(l, func(err error) { errs = append(errs, err) })
	if err != nil {
		t.Fatal(err)
	}
	el.max = 500
	if err := os.Rename(l.Dir, l.Dir+".real"); err != nil {
		t.Fatal(err)
	}
	linktest.Symlink(t, out, l.Dir)
	for i := range 20 {
		el.Append(Event{Type: EvWarning, Detail: fmt.Sprintf("event %02d", i)})
	}
	if err := el.Close(); err != nil {
		t.Fatal(err)
	}
	if len(errs) > 0 {
		t.Errorf("event log errors: %v", errs)
	}
	linktest.AssertUntouched(t, out, victim)
	if _, err := os.Stat(filepath.Join(l.Dir+".real", eventsName+".1")); err != nil {
		t.Errorf("no rotation in the real directory: %v", err)
	}
}

// A link at events.jsonl is refused when the log is opened, and when it is
// reopened after a failure: reported, the event dropped, nothing written
// through it.
func TestEventLogRefusesPlantedLink(t *testing.T) {
	out, victim := linktest.Outside(t)
	l := Layout{Dir: filepath.Join(t.TempDir(), DirName)}
	if err := l.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	linktest.Symlink(t, victim, l.EventsLog())
	_, err := openEventLog(l, func(err error) { t.Errorf("event log: %v", err) })
	wantRefused(t, err, l.EventsLog())

	os.Remove(l.EventsLog())
	var errs []error
	el, err := openEventLog(l, func(err error) { errs = append(errs, err) })
	if err != nil {
		t.Fatal(err)
	}
	// A failed rotation left no file open, and the agent planted a link at
	// the name before the next append.
	el.f.Close()
	el.f = nil
	os.Remove(l.EventsLog())
	linktest.Symlink(t, victim, l.EventsLog())
	el.Append(Event{Type: EvWarning, Detail: "secret"})
	el.Close()
	linktest.AssertUntouched(t, out, victim)
	if len(errs) != 1 {
		t.Fatalf("errors reported: %v; want the link refused once", errs)
	}
	wantRefused(t, errs[0], l.EventsLog())
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
	r.waitEvent(t, "warning about the state file", func(e Event) bool {
		return e.Type == EvWarning && e.Agent == "solo" && strings.Contains(e.Detail, p.layout.AgentState("solo")) && strings.Contains(e.Detail, "symbolic link")
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
