package orchestrator

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/battyhq/batty/project"
)

// The daemon refuses to start when its state directory lies where agents
// work (here the project itself, as with BATTY_STATE_HOME=<project>/x),
// and creates nothing there.
func TestDaemonRefusesAStateDirectoryInsideAWorkspace(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	for _, home := range []string{filepath.Join(p.dir, "state"), filepath.Join(p.dir, "sub", "deeper")} {
		l := project.LayoutIn(home, p.dir)
		d, err := New(p.cfg, l, Options{})
		if err == nil {
			d.events.Close()
			project.ReleaseLock(d.lock)
		}
		if !errors.Is(err, project.ErrStateExposed) {
			t.Fatalf("New with the state in %s: %v; want ErrStateExposed", home, err)
		}
		if _, err := os.Stat(home); !os.IsNotExist(err) {
			t.Fatalf("the refused state directory was made: %v", err)
		}
	}
}
