package eventlog

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/atomicfile/linktest"
	"github.com/battyhq/batty/project"
)

// A .batty swapped for a link after the event log was opened does not
// redirect its rotation: the log keeps working in the directory it checked.
func TestEventLogRotationDoesNotFollowSwappedDir(t *testing.T) {
	out, victim := linktest.Outside(t)
	l := project.Layout{Dir: filepath.Join(t.TempDir(), project.DirName)}
	if err := l.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	var errs []error
	el, err := Open(l, func(err error) { errs = append(errs, err) })
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
	if _, err := os.Stat(filepath.Join(l.Dir+".real", project.EventsName+".1")); err != nil {
		t.Errorf("no rotation in the real directory: %v", err)
	}
}

// A link at events.jsonl is refused when the log is opened, and when it is
// reopened after a failure: reported, the event dropped, nothing written
// through it.
func TestEventLogRefusesPlantedLink(t *testing.T) {
	out, victim := linktest.Outside(t)
	l := project.Layout{Dir: filepath.Join(t.TempDir(), project.DirName)}
	if err := l.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	linktest.Symlink(t, victim, l.EventsLog())
	_, err := Open(l, func(err error) { t.Errorf("event log: %v", err) })
	linktest.WantRefused(t, err, l.EventsLog(), atomicfile.ErrSymlink)

	os.Remove(l.EventsLog())
	var errs []error
	el, err := Open(l, func(err error) { errs = append(errs, err) })
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
	linktest.WantRefused(t, errs[0], l.EventsLog(), atomicfile.ErrSymlink)
}
