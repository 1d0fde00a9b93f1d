package orchestrator

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/project/projecttest"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/writable"
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

// The daemon refuses a state directory under /tmp or $TMPDIR, which Codex
// makes writable to every agent in workspace-write, and one under a
// writable root of a role's sandbox; with /tmp and $TMPDIR taken out of
// every sandbox, /tmp is no agent's.
func TestDaemonRefusesAStateDirectoryWhereAnySandboxWrites(t *testing.T) {
	tmpdir := t.TempDir()
	t.Setenv("TMPDIR", tmpdir)
	cache := filepath.Join(projecttest.TempProgramDir(t), "cache")
	p := newProject(t, "  - name: solo\n    codex:\n      args: [--add-dir, "+cache+"]\n")
	// A state home outside, reached through a link into /tmp.
	linked := filepath.Join(projecttest.TempProgramDir(t), "home")
	if err := os.Symlink(t.TempDir(), linked); err != nil {
		t.Fatal(err)
	}
	for _, home := range []string{filepath.Join(os.TempDir(), "batty-state-"+t.Name()), "/tmp/batty-state", filepath.Join(tmpdir, "state"), filepath.Join(cache, "state"), linked} {
		l := project.LayoutIn(home, p.dir)
		d, err := New(p.cfg, l, Options{})
		if err == nil {
			d.events.Close()
			project.ReleaseLock(d.lock)
		}
		if !errors.Is(err, project.ErrStateExposed) {
			t.Fatalf("New with the state in %s: %v; want ErrStateExposed", home, err)
		}
		if _, err := os.Stat(l.Dir); !os.IsNotExist(err) {
			t.Fatalf("the refused state directory was made: %v", err)
		}
	}
	// Read-only agents write neither /tmp nor $TMPDIR.
	ro := newProject(t, "  - name: solo\n    codex:\n      sandbox: read-only\n")
	l := project.LayoutIn(filepath.Join(tmpdir, "state"), ro.dir)
	d, err := New(ro.cfg, l, Options{})
	if err != nil {
		t.Fatalf("New of a read-only team with the state in $TMPDIR: %v", err)
	}
	d.events.Close()
	d.ledger.Close()
	project.ReleaseLock(d.lock)
}

// The daemon refuses to start a team whose on_alert lies where an agent
// may write, saying where and how to fix it, and creates nothing.
func TestDaemonRefusesAnAlertCommandAnAgentMayWrite(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	hook := hookScript(t, p.dir, "alert.sh", "exit 0\n")
	p.cfg.OnAlert = []string{hook}
	home := filepath.Join(projecttest.TempProgramDir(t), "state")
	d, err := New(p.cfg, project.LayoutIn(home, p.dir), Options{})
	if err == nil {
		d.events.Close()
		project.ReleaseLock(d.lock)
	}
	if !errors.Is(err, writable.ErrProgramWritable) || !strings.Contains(err.Error(), "on_alert runs "+hook) || !strings.Contains(err.Error(), "~/.config/batty/alert.sh") {
		t.Fatalf("New with on_alert in the project: %v; want ErrProgramWritable with the fix", err)
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Fatalf("the refused team's state directory was made: %v", err)
	}
}

// A host whose project directory there holds batty's state directory
// there ("~") is refused at start, naming the team file's line and the fix.
func TestDaemonRefusesAHostDirHoldingItsState(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	p.cfg.Hosts = []team.Host{{Name: "gpu", SSH: "gpu.example", Dir: "~", Line: 7}}
	home := filepath.Join(projecttest.TempProgramDir(t), "state")
	d, err := New(p.cfg, project.LayoutIn(home, p.dir), Options{})
	if err == nil {
		d.events.Close()
		project.ReleaseLock(d.lock)
	}
	if err == nil || !strings.Contains(err.Error(), ":7: host gpu") || !strings.Contains(err.Error(), "~/src/") {
		t.Fatalf("New with a host dir of ~: %v; want a refusal naming the line and the fix", err)
	}
}
