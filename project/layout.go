// Package project is a project's state directory: the names of its files,
// the daemon lock, and the state files the daemon keeps there, read and
// written without ever following a link.
//
// The state directory is the daemon's: inboxes, state, logs, the control
// socket. It lies outside the project (StateHome/projects/<key>), out of
// every agent's writable roots, so that no agent — not even one whose
// working directory is the project's checkout — can write what the daemon
// trusts. Agents write only their own outbox in it (package outbox), a
// writable root of their sandbox, and a worktree agent its own worktree
// (worktrees/<agent>, its working directory). The merge queue's worktree
// (worktrees/.landing) is written by no agent.
package project

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/team"
)

// DirName is the name of a project's own directory of batty's, next to its
// team file: it may hold the team file, and held the worktree agents'
// worktrees before they moved into the state directory (see
// LegacyWorktreesDir); never state the daemon trusts.
const DirName = ".batty"

// EnvStateHome names the variable that overrides where the state
// directories of projects live (StateHome).
const EnvStateHome = "BATTY_STATE_HOME"

// Layout names the files of one project's state directory. It only computes
// paths; it creates nothing.
//
// Agents can write the state directory, so nothing in it is opened, created,
// renamed or chmodded through a symbolic link: files are reached through
// OpenDir, which refuses a link at .batty or at any directory below it.
type Layout struct {
	// Dir is the absolute path of the state directory.
	Dir string
	// Project is the project directory (the team file's); "" means the
	// directory that holds Dir (a host's .batty, whose project is its
	// parent).
	Project string
}

// Entry names of files in the state directory and in its state/ directory,
// for use with the directories OpenDir returns.
const (
	EventsName    = "events.jsonl"
	lockName      = "daemon.lock"
	SocketName    = "daemon.sock"
	TeamRefName   = "team-file"
	daemonLogName = "daemon.log"
	DispatchName  = "dispatch.json"
	// BudgetsName is the daemon's budget state in state/ (package
	// budget: the alerts sent and the resumes of each budget's window).
	BudgetsName = "budgets.json"
	subState    = "state"
	subLogs     = "logs"
	subInboxes  = "inboxes"
	// UsageName is the directory of the usage ledger (package usage).
	UsageName = "usage"
)

// AgentStateName is the name of an agent's state file in state/.
func AgentStateName(agent string) string { return agent + ".json" }

// OpenDir opens the directory sub of the state directory ("" = the state
// directory itself) without following a symbolic link at .batty or at any
// directory below it; the project directory that holds .batty is trusted. A
// link is refused with an error matching atomicfile.ErrSymlink that names it
// and says to remove it. With create, missing directories are created with
// mode 0700. The caller owns the returned directory and must close it.
func (l Layout) OpenDir(sub string, create bool) (*atomicfile.Dir, error) {
	if create {
		// The trusted directory that holds the state directories is the
		// user's own: made as MkdirAll makes it.
		if err := os.MkdirAll(l.StateRoot(), 0o700); err != nil {
			return nil, fmt.Errorf("make %s: %w", l.StateRoot(), err)
		}
	}
	return atomicfile.OpenDirBeneath(l.StateRoot(), filepath.Join(filepath.Base(l.Dir), sub), create)
}

// StateRoot is the trusted directory that holds the state directory.
func (l Layout) StateRoot() string { return filepath.Dir(l.Dir) }

// Root is the project directory: Project, else the directory that holds
// the state directory.
func (l Layout) Root() string {
	if l.Project != "" {
		return l.Project
	}
	return filepath.Dir(l.Dir)
}

// Inboxes is the root of the message store.
func (l Layout) Inboxes() string { return filepath.Join(l.Dir, subInboxes) }

// StateDir holds per-agent state and the dispatch state.
func (l Layout) StateDir() string { return filepath.Join(l.Dir, subState) }

// AgentState is one agent's state file.
func (l Layout) AgentState(agent string) string {
	return filepath.Join(l.StateDir(), AgentStateName(agent))
}

// WorktreesDir is where the worktree agents' git worktrees live, one
// directory per agent (and the merge queue's own, .landing): the state
// directory's worktrees/. Being in the state directory, out of every
// agent's writable roots, a worktree is written by its own agent alone (it
// is that agent's working directory and writable root) and the queue's by
// no agent: an agent that shares the project's checkout cannot write
// another's worktree, as it could when they lived in the checkout
// (LegacyWorktreesDir).
func (l Layout) WorktreesDir() string { return filepath.Join(l.Dir, "worktrees") }

// LegacyWorktreesDir is where an earlier batty kept the worktree agents'
// worktrees, in the project (<project>/.batty/worktrees), "" for a layout
// without a project. Migration moves them to WorktreesDir
// (workspaces.Repo.MoveWorktrees); on another host, where the clones were
// kept there too, they are left alone and never read again
// (clones.Serve).
func (l Layout) LegacyWorktreesDir() string {
	if l.Project == "" {
		return ""
	}
	return filepath.Join(l.Project, DirName, "worktrees")
}

// CloneRepo is, on another host, the repository whose worktrees are the
// clones of that host's worktree agents (package clones), in the
// project's state directory there beside their worktrees (WorktreesDir).
func (l Layout) CloneRepo() string { return filepath.Join(l.Dir, "repo") }

// GitLock is the file whose lock serialises batty's git commands on the
// project's repository, across the daemon and the CLI.
func (l Layout) GitLock() string { return filepath.Join(l.StateDir(), "git.lock") }

// DispatchState is the team-wide dispatch state file (pauses).
func (l Layout) DispatchState() string { return filepath.Join(l.StateDir(), DispatchName) }

// LogsDir holds the agents' transcripts.
func (l Layout) LogsDir() string { return filepath.Join(l.Dir, subLogs) }

// Transcript is one agent's readable transcript.
func (l Layout) Transcript(agent string) string {
	return filepath.Join(l.LogsDir(), agent+".log")
}

// EventsLog is the append-only event log.
func (l Layout) EventsLog() string { return filepath.Join(l.Dir, EventsName) }

// UsageDir holds the usage ledger: every finished turn's usage and the
// accounts' rate-limit windows over time (package usage).
func (l Layout) UsageDir() string { return filepath.Join(l.Dir, UsageName) }

// DaemonLog is the daemon's own log.
func (l Layout) DaemonLog() string { return filepath.Join(l.Dir, daemonLogName) }

// Socket is the daemon's control socket.
func (l Layout) Socket() string { return filepath.Join(l.Dir, SocketName) }

// LockFile is held (flock) by the running daemon.
func (l Layout) LockFile() string { return filepath.Join(l.Dir, lockName) }

// TeamFileRef records the absolute path of the team file the daemon was
// started with, for commands run from elsewhere (agents).
func (l Layout) TeamFileRef() string { return filepath.Join(l.Dir, TeamRefName) }

// Project is a team file and the state directory that belongs to it.
type Project struct {
	TeamFile string // absolute
	Layout   Layout
}

// LayoutFor returns the layout of the state directory that belongs to a
// team file: StateHome/projects/<StateKey of the project directory>, the
// project directory being the team file's (its parent when the team file
// lives in .batty).
func LayoutFor(teamFile string) (Layout, error) {
	abs, err := filepath.Abs(teamFile)
	if err != nil {
		return Layout{}, fmt.Errorf("resolve team file %s: %w", teamFile, err)
	}
	home, err := StateHome()
	if err != nil {
		return Layout{}, err
	}
	return LayoutIn(home, ProjectDirOf(abs)), nil
}

// ErrStateExposed is wrapped by the error of CheckStateDir: the state
// directory lies where an agent may write.
var ErrStateExposed = errors.New("the state directory is inside an agent's workspace")

// CheckStateDir reports whether the state directory stateDir lies inside
// one of the directories agents or their code may write (workspaces: the
// project, a role's cwd, the sandbox's writable caches of verify and
// setup): then an agent could
// speak as the human, rewrite its state or plant files the daemon trusts,
// and the error (wrapping ErrStateExposed) says to move it with
// $BATTY_STATE_HOME. Paths are compared cleaned, as given. Pure.
func CheckStateDir(stateDir string, workspaces []string) error {
	for _, w := range workspaces {
		if w == "" {
			continue
		}
		if Inside(w, stateDir) {
			return fmt.Errorf("%w: %s is inside %s, which the agents working there may write; set $%s to a directory outside every agent's workspace",
				ErrStateExposed, stateDir, w, EnvStateHome)
		}
	}
	return nil
}

// Inside reports whether path is dir or lies below it, compared cleaned,
// as written (both absolute, or both relative). Pure.
func Inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// legacyNames are what an earlier batty kept in the project's .batty.
var legacyNames = []string{"inboxes", "state", "logs", "events.jsonl", "daemon.log", "daemon.sock"}

// LegacyState lists what an earlier batty left of a team's state in the
// project's .batty directory (inboxes, state, logs, the event log), where
// agents could write it; empty when there is none. batty no longer reads
// it. It only looks (lstat).
func (l Layout) LegacyState() []string {
	if l.Project == "" {
		return nil
	}
	var found []string
	for _, n := range legacyNames {
		p := filepath.Join(l.Project, DirName, n)
		if _, err := os.Lstat(p); err == nil {
			found = append(found, p)
		}
	}
	return found
}

// LayoutIn is the layout of the project directory dir with the state
// directories under home. Pure.
func LayoutIn(home, dir string) Layout {
	return Layout{Dir: filepath.Join(home, ProjectsDir, StateKey(dir)), Project: dir}
}

// ProjectDirOf is the project directory of the absolute team file path:
// its directory, or the parent of that when it is .batty. Pure.
func ProjectDirOf(teamFile string) string {
	dir := filepath.Dir(teamFile)
	if filepath.Base(dir) == DirName {
		return filepath.Dir(dir)
	}
	return dir
}

// HomeStateDir is where, relative to a home directory, the state
// directories of projects live when neither $BATTY_STATE_HOME nor
// $XDG_STATE_HOME says otherwise: here (StateHome) and on other hosts.
const HomeStateDir = ".local/state/batty"

// ProjectsDir is the directory of the state directories under a state
// home: <state home>/projects/<StateKey>.
const ProjectsDir = "projects"

// StateHome is where the state directories of projects live:
// $BATTY_STATE_HOME, else $XDG_STATE_HOME/batty, else
// ~/.local/state/batty. Each must be absolute: a relative one is refused,
// as the XDG specification says to ignore it, and a missing home is an
// error naming the variables to set.
func StateHome() (string, error) {
	if d := os.Getenv(EnvStateHome); d != "" {
		if !filepath.IsAbs(d) {
			return "", fmt.Errorf("$%s=%q is not an absolute path", EnvStateHome, d)
		}
		return filepath.Clean(d), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "batty"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", fmt.Errorf("no place for batty's state: $HOME is not set (set HOME, XDG_STATE_HOME or %s): %v", EnvStateHome, err)
	}
	return filepath.Join(home, HomeStateDir), nil
}

// keyUnsafe matches what a state key does not keep of a directory's name.
var keyUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// maxKeyName bounds the readable part of a state key, which keeps the
// control socket's path short.
const maxKeyName = 24

// StateKey names the state directory of the project directory dir: its
// base name (only letters, digits, '.', '_' and '-', at most 24 bytes) and
// 12 hex digits of the SHA-256 of its cleaned absolute path, so two
// projects never share one, and a project moved elsewhere starts afresh.
// Pure.
func StateKey(dir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	name := strings.Trim(keyUnsafe.ReplaceAllString(filepath.Base(dir), "_"), "._-")
	if len(name) > maxKeyName {
		name = name[:maxKeyName]
	}
	if name == "" {
		name = "project"
	}
	return name + "-" + hex.EncodeToString(sum[:6])
}

// ResolveProject finds the project a command works on: the explicit team
// file (-f) if given; else $BATTY_DIR with $BATTY_TEAM_FILE, or the team
// file recorded in $BATTY_DIR by `batty start`; else ./team.yaml or ./.batty/team.yaml. The error says what
// was tried.
func ResolveProject(explicit string) (Project, error) {
	if explicit == "" {
		if dir := os.Getenv(agentenv.Dir); dir != "" {
			if f := os.Getenv(agentenv.TeamFile); filepath.IsAbs(f) {
				// An agent's: its state directory is not to be read.
				return Project{TeamFile: f, Layout: Layout{Dir: filepath.Clean(dir), Project: ProjectDirOf(f)}}, nil
			}
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
		return Project{}, fmt.Errorf("resolve %s=%s: %w", agentenv.Dir, dir, err)
	}
	l := Layout{Dir: abs}
	if b, err := l.readFile(TeamRefName); err == nil {
		if f := strings.TrimSpace(string(b)); f != "" {
			l.Project = ProjectDirOf(f)
			return Project{TeamFile: f, Layout: l}, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return Project{}, fmt.Errorf("read %s: %w", l.TeamFileRef(), err)
	}
	// On another host the state directory holds no team-file record but
	// the roster the daemon put there (team.yaml).
	for _, f := range []string{filepath.Join(abs, "team.yaml"), filepath.Join(filepath.Dir(abs), "team.yaml")} {
		if _, err := os.Stat(f); err == nil {
			l.Project = ProjectDirOf(f)
			return Project{TeamFile: f, Layout: l}, nil
		}
	}
	return Project{}, fmt.Errorf("%s=%s has no team file: start the team with `batty start` first", agentenv.Dir, dir)
}

// readFile reads the file name of the state directory, refusing links as
// OpenDir does.
func (l Layout) readFile(name string) ([]byte, error) {
	d, err := l.OpenDir("", false)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadFile(name)
}

// MkdirAll creates the state directory and its state/ and logs/
// directories (mode 0700) where missing, refusing symbolic links as OpenDir
// does. It is idempotent.
func (l Layout) MkdirAll() error {
	for _, sub := range []string{"", subState, subLogs} {
		d, err := l.OpenDir(sub, true)
		if err != nil {
			return err
		}
		d.Close()
	}
	return nil
}

// OpenDaemonLog opens daemon.log for appending, creating the state
// directory (0700) and the file (0600) when needed, never through a link.
func (l Layout) OpenDaemonLog() (*os.File, error) {
	d, err := l.OpenDir("", true)
	if err != nil {
		return nil, fmt.Errorf("open daemon log: %w", err)
	}
	defer d.Close()
	f, err := d.OpenFile(daemonLogName, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open daemon log: %w", err)
	}
	return f, nil
}

// WriteRequest writes r into agent's outbox (outbox.Write), making the
// state directory (0700) where missing, never through a link, and returns
// the id of the request. Inside the agent's sandbox only the outbox is
// writable, and the agent's shim has made it.
func (l Layout) WriteRequest(agent string, r outbox.Request) (string, error) {
	d, err := l.OpenDir("", true)
	switch {
	case errors.Is(err, fs.ErrPermission):
		// Inside the agent's permission profile: the state directory
		// can only be passed through to the outbox (outbox.Write).
	case err != nil:
		return "", err
	default:
		d.Close()
	}
	return outbox.Write(l.Dir, agent, r)
}

// OpenInboxes opens the project's message store, creating .batty and
// .batty/inboxes (0700) where missing. Neither may be a symbolic link: a
// link is refused, as OpenDir does, before the store touches anything.
func (l Layout) OpenInboxes() (*inbox.Store, error) {
	d, err := l.OpenDir(subInboxes, true)
	if err != nil {
		return nil, err
	}
	d.Close()
	return inbox.Open(l.Inboxes())
}
