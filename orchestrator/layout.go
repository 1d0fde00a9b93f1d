package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/battyhq/batty/team"
)

// DirName is the name of a project's state directory, next to its team file.
const DirName = ".batty"

// EnvDir names the environment variable that points batty commands run by
// agents (inside Codex, in another working directory) at the project's
// state directory.
const EnvDir = "BATTY_DIR"

// EnvAgent names the environment variable that identifies the agent running
// a batty command (set by the shim for codex).
const EnvAgent = "BATTY_AGENT"

// Layout names the files of one project's state directory. It only computes
// paths; it creates nothing.
type Layout struct {
	// Dir is the absolute path of the .batty directory.
	Dir string
}

// Inboxes is the root of the message store.
func (l Layout) Inboxes() string { return filepath.Join(l.Dir, "inboxes") }

// StateDir holds per-agent state and the dispatch state.
func (l Layout) StateDir() string { return filepath.Join(l.Dir, "state") }

// AgentState is one agent's state file.
func (l Layout) AgentState(agent string) string {
	return filepath.Join(l.StateDir(), agent+".json")
}

// DispatchState is the team-wide dispatch state file (pauses).
func (l Layout) DispatchState() string { return filepath.Join(l.StateDir(), "dispatch.json") }

// LogsDir holds the agents' transcripts.
func (l Layout) LogsDir() string { return filepath.Join(l.Dir, "logs") }

// Transcript is one agent's readable transcript.
func (l Layout) Transcript(agent string) string {
	return filepath.Join(l.LogsDir(), agent+".log")
}

// RepliesDir holds, per agent, replies too long for one frame on their way
// from the shim to the daemon (see replyfile).
func (l Layout) RepliesDir() string { return filepath.Join(l.Dir, "replies") }

// ReplyDir is where an agent's shim stores its replies too long for one
// frame: RepliesDir()/<agent>.
func (l Layout) ReplyDir(agent string) string { return filepath.Join(l.RepliesDir(), agent) }

// EventsLog is the append-only event log.
func (l Layout) EventsLog() string { return filepath.Join(l.Dir, "events.jsonl") }

// DaemonLog is the daemon's own log.
func (l Layout) DaemonLog() string { return filepath.Join(l.Dir, "daemon.log") }

// Socket is the daemon's control socket.
func (l Layout) Socket() string { return filepath.Join(l.Dir, "daemon.sock") }

// LockFile is held (flock) by the running daemon.
func (l Layout) LockFile() string { return filepath.Join(l.Dir, "daemon.lock") }

// TeamFileRef records the absolute path of the team file the daemon was
// started with, for commands run from elsewhere (agents).
func (l Layout) TeamFileRef() string { return filepath.Join(l.Dir, "team-file") }

// Project is a team file and the state directory that belongs to it.
type Project struct {
	TeamFile string // absolute
	Layout   Layout
}

// LayoutFor returns the layout of the state directory that belongs to a
// team file: <dir of team.yaml>/.batty, or the .batty directory itself when
// the team file lives in it.
func LayoutFor(teamFile string) (Layout, error) {
	abs, err := filepath.Abs(teamFile)
	if err != nil {
		return Layout{}, fmt.Errorf("resolve team file %s: %w", teamFile, err)
	}
	dir := filepath.Dir(abs)
	if filepath.Base(dir) == DirName {
		return Layout{Dir: dir}, nil
	}
	return Layout{Dir: filepath.Join(dir, DirName)}, nil
}

// ResolveProject finds the project a command works on: the explicit team
// file (-f) if given; else $BATTY_DIR and the team file recorded there by
// `batty start`; else ./team.yaml or ./.batty/team.yaml. The error says what
// was tried.
func ResolveProject(explicit string) (Project, error) {
	if explicit == "" {
		if dir := os.Getenv(EnvDir); dir != "" {
			return projectFromDir(dir)
		}
	}
	f, err := team.FindFile(explicit)
	if err != nil {
		return Project{}, err
	}
	abs, err := filepath.Abs(f)
	if err != nil {
		return Project{}, fmt.Errorf("resolve team file %s: %w", f, err)
	}
	l, err := LayoutFor(abs)
	if err != nil {
		return Project{}, err
	}
	return Project{TeamFile: abs, Layout: l}, nil
}

func projectFromDir(dir string) (Project, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Project{}, fmt.Errorf("resolve %s=%s: %w", EnvDir, dir, err)
	}
	l := Layout{Dir: abs}
	if b, err := os.ReadFile(l.TeamFileRef()); err == nil {
		if f := strings.TrimSpace(string(b)); f != "" {
			return Project{TeamFile: f, Layout: l}, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return Project{}, fmt.Errorf("read %s: %w", l.TeamFileRef(), err)
	}
	for _, f := range []string{filepath.Join(abs, "team.yaml"), filepath.Join(filepath.Dir(abs), "team.yaml")} {
		if _, err := os.Stat(f); err == nil {
			return Project{TeamFile: f, Layout: l}, nil
		}
	}
	return Project{}, fmt.Errorf("%s=%s has no team file: start the team with `batty start` first", EnvDir, dir)
}
