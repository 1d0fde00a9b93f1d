package hosts

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/shim/shimconfig"
)

// ShimConfig is c, the configuration of a shim here, for a shim on a host
// whose project is hostDir (root is the project here, home the home
// directory here): every path as the host sees it — the working
// directory (a worktree agent's, in its worktree in the state directory
// here, in its clone there: WorktreesThere), sandbox directories, output
// schema and BATTY_PROJECT in the project there (ProjectPath), the codex binary and CODEX_HOME under the
// home there (HomePath, "~/" which the shim expands), BATTY_DIR the
// project's state directory there (StateDir), with the agent's outbox — no transcript file
// (it is not on the host). The caller adds what else its shims there
// do (the daemon's stream their transcript and relay `batty send`). It is
// a pure function; c is not changed.
func ShimConfig(c shimconfig.Config, hostDir, root, home string) shimconfig.Config {
	if here := agentenv.Lookup(c.Env, agentenv.Dir); here != "" && InProject(project.Layout{Dir: here}.WorktreesDir(), c.Cwd) {
		// A worktree agent's directory in its worktree here (in the
		// state directory): the same in its clone there.
		rel, _ := filepath.Rel(project.Layout{Dir: here}.WorktreesDir(), c.Cwd)
		c.Cwd = path.Join(WorktreesThere(hostDir), filepath.ToSlash(rel))
	} else {
		c.Cwd = ProjectPath(hostDir, root, c.Cwd)
	}
	c.CodexBin = HomePath(c.CodexBin, home)
	if c.Exec.AddDirs != nil {
		here := agentenv.Lookup(c.Env, agentenv.Dir)
		dirs := make([]string, len(c.Exec.AddDirs))
		for i, d := range c.Exec.AddDirs {
			if rel, err := filepath.Rel(here, d); here != "" && err == nil && InProject(here, d) {
				// The agent's outbox, in the state directory there.
				dirs[i] = path.Join(StateDir(hostDir), filepath.ToSlash(rel))
				continue
			}
			dirs[i] = ProjectPath(hostDir, root, d)
		}
		c.Exec.AddDirs = dirs
	}
	if c.Exec.OutputSchema != "" {
		c.Exec.OutputSchema = ProjectPath(hostDir, root, c.Exec.OutputSchema)
	}
	if c.Env != nil {
		env := make([]string, len(c.Env))
		for i, e := range c.Env {
			k, v, _ := strings.Cut(e, "=")
			switch k {
			case agentenv.Dir:
				e = k + "=" + StateDir(hostDir)
			case agentenv.Project:
				e = k + "=" + ProjectPath(hostDir, root, v)
			case "CODEX_HOME":
				e = k + "=" + HomePath(v, home)
			}
			env[i] = e
		}
		c.Env = env
	}
	c.Transcript, c.TranscriptRoot = "", ""
	return c
}

// WorktreesThere is, on a host, the directory of the clones' worktrees of
// the project there (hostDir): the worktrees/ of the project's state
// directory there (StateDir), where `batty clone-host` makes them beside
// the clone repository (project.Layout.CloneRepo) — out of the project
// directory there, which an agent that works in the project there may
// write (see docs/security.md, "Worktrees on another host"). Pure.
func WorktreesThere(hostDir string) string {
	return project.Layout{Dir: StateDir(hostDir)}.WorktreesDir()
}

// DeniedThere are the directories of the project's state directory on a
// host (StateDir of hostDir) that no agent there may read, list nor
// write, each a child of it: the clones' worktrees (WorktreesThere: the
// other agents' uncommitted work), the outboxes (outbox.DirName) and
// state/ (the git lock, project.Layout.GitLock) — every directory
// batty keeps there but the clone repository (project.Layout.CloneRepo),
// left readable so that an agent's git works in its clone, whose
// repository it is. They are denied child by child, not the state
// directory whole: Codex cannot give a path inside a denied one back to
// read, only to write. A directory batty comes to keep there must be
// added here. Pure.
func DeniedThere(hostDir string) []string {
	return DeniedIn(project.Layout{Dir: StateDir(hostDir)})
}

// DeniedIn is DeniedThere of a host's state directory as l lays it out
// (with "~/" paths, or absolute on the host itself: the sandbox of a
// worktree's setup there). Pure.
func DeniedIn(l project.Layout) []string {
	return []string{l.WorktreesDir(), path.Join(l.Dir, outbox.DirName), l.StateDir()}
}

// CheckProjectDir refuses a host's project directory (hostDir, as the team
// file gives it) that holds the project's state directory there
// (StateDir): "~", "~/.local" and the like. The agents there that work in
// the project's checkout could then write their outboxes' neighbours, the
// clones and the state there, as they could here without
// project.CheckStateDir. An absolute directory is not judged: the home
// directory there is not known here. Pure.
func CheckProjectDir(hostName, hostDir string) error {
	if hostDir != "~" && !strings.HasPrefix(hostDir, "~/") {
		return nil
	}
	dir := path.Clean(hostDir)
	state := StateDir(hostDir)
	if state != dir && !strings.HasPrefix(state, dir+"/") {
		return nil
	}
	return fmt.Errorf("host %s: its project directory %s holds batty's state directory there (%s), which the agents working in the project there could then write: give the host a dir of the project itself (say ~/src/<project>)", hostName, hostDir, state)
}

// StateDir is, on a host, the state directory of the project there
// (hostDir): under the home directory there ("~/", which the shim
// expands), out of the writable roots of the agents there as the state
// directory here is out of those here. It holds the agents' outboxes. Pure.
func StateDir(hostDir string) string {
	return path.Join("~", project.HomeStateDir, project.ProjectsDir, project.StateKey(hostDir))
}
