package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/project"
)

// The state directory is writable by agents, so every test here plants a
// symbolic link in it pointing at "outside" (a directory standing for the
// rest of the user's files, holding one file, victim) and checks that
// nothing reaches outside.

func plantOutside(t *testing.T) (out, victim string) {
	t.Helper()
	out = t.TempDir()
	victim = filepath.Join(out, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return out, victim
}

func assertOutsideUntouched(t *testing.T, out, victim string) {
	t.Helper()
	des, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	if len(names) != 1 {
		t.Errorf("written outside through a link: %s holds %v", out, names)
	}
	b, err := os.ReadFile(victim)
	if err != nil || string(b) != "precious\n" {
		t.Errorf("victim = %q, %v; want it unchanged", b, err)
	}
	if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("victim's mode changed: %v, %v", fi.Mode(), err)
	}
}

func link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

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
			out, victim := plantOutside(t)
			l := project.Layout{Dir: filepath.Join(t.TempDir(), project.DirName)}
			at := filepath.Join(l.Root(), tc.linked)
			target := out
			if tc.toFile {
				target = victim
			}
			link(t, target, at)

			name := project.AgentStateName("solo")
			if strings.HasSuffix(tc.linked, project.DispatchName) {
				name = project.DispatchName
			}
			wantRefused(t, project.SaveJSON(l, name, project.AgentState{Name: "solo", ThreadID: "t-1"}), at)
			var st project.AgentState
			wantRefused(t, project.LoadJSON(l, name, &st), at)
			if tc.toFile && strings.HasSuffix(tc.linked, project.DispatchName) {
				_, err := newGate(l)
				wantRefused(t, err, at)
			}
			assertOutsideUntouched(t, out, victim)
		})
	}
}

// A daemon refuses to start on a state directory with a link where it
// writes, naming the link, and writes nothing through it.
func TestDaemonRefusesToStartOnLinks(t *testing.T) {
	for _, linked := range []string{".batty", ".batty/state", ".batty/logs", ".batty/events.jsonl", ".batty/daemon.lock", ".batty/team-file", ".batty/state/solo.json", ".batty/state/dispatch.json"} {
		t.Run(linked, func(t *testing.T) {
			p := newProject(t, "  - name: solo\n")
			out, victim := plantOutside(t)
			target := out
			if strings.Contains(filepath.Base(linked), ".") && linked != ".batty" {
				target = victim
				if err := p.layout.MkdirAll(); err != nil {
					t.Fatal(err)
				}
			}
			at := filepath.Join(p.dir, linked)
			link(t, target, at)
			d, err := New(p.cfg, p.layout, Options{})
			if err == nil {
				d.events.Close()
				project.ReleaseLock(d.lock)
			}
			wantRefused(t, err, at)
			if running, _ := project.Running(p.layout); running {
				t.Error("Running reports a daemon")
			}
			assertOutsideUntouched(t, out, victim)
		})
	}
}

// A .batty swapped for a link after the event log was opened does not
// redirect its rotation: the log keeps working in the directory it checked.
func TestEventLogRotationDoesNotFollowSwappedDir(t *testing.T) {
	out, victim := plantOutside(t)
	l := project.Layout{Dir: filepath.Join(t.TempDir(), project.DirName)}
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
	link(t, out, l.Dir)
	for i := range 20 {
		el.Append(Event{Type: EvWarning, Detail: fmt.Sprintf("event %02d", i)})
	}
	if err := el.Close(); err != nil {
		t.Fatal(err)
	}
	if len(errs) > 0 {
		t.Errorf("event log errors: %v", errs)
	}
	assertOutsideUntouched(t, out, victim)
	if _, err := os.Stat(filepath.Join(l.Dir+".real", project.EventsName+".1")); err != nil {
		t.Errorf("no rotation in the real directory: %v", err)
	}
}

// A link at events.jsonl is refused when the log is opened, and when it is
// reopened after a failure: reported, the event dropped, nothing written
// through it.
func TestEventLogRefusesPlantedLink(t *testing.T) {
	out, victim := plantOutside(t)
	l := project.Layout{Dir: filepath.Join(t.TempDir(), project.DirName)}
	if err := l.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	link(t, victim, l.EventsLog())
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
	link(t, victim, l.EventsLog())
	el.Append(Event{Type: EvWarning, Detail: "secret"})
	el.Close()
	assertOutsideUntouched(t, out, victim)
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
	out, victim := plantOutside(t)
	if err := p.layout.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	link(t, victim, p.layout.Transcript("solo"))
	r := p.start(nil)
	// Loaded at start; planted for the save after the turn.
	link(t, victim, p.layout.AgentState("solo"))
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
	assertOutsideUntouched(t, out, victim)
	r.log.mu.Lock()
	logText := r.log.b.String()
	r.log.mu.Unlock()
	if !strings.Contains(logText, "Transcript refused") {
		t.Error("no warning about the refused transcript in the shim's log")
	}
}
