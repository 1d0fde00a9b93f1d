package hosts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/project"
)

// TmuxSocketDirs are the directories where tmux servers of user uid keep
// their sockets: $TMUX_TMPDIR/tmux-<uid> (tmuxTmpdir, "" when unset), where
// batty's private server (cockpit.SocketName) and the user's own live, and
// /tmp/tmux-<uid>, tmux's default. Whoever may connect to a socket there
// runs commands as the user. Pure.
func TmuxSocketDirs(tmuxTmpdir string, uid int) []string {
	def := filepath.Join("/tmp", fmt.Sprintf("tmux-%d", uid))
	if tmuxTmpdir == "" || !filepath.IsAbs(tmuxTmpdir) {
		return []string{def}
	}
	dir := filepath.Join(tmuxTmpdir, fmt.Sprintf("tmux-%d", uid))
	if dir == def {
		return []string{def}
	}
	return []string{dir, def}
}

// EnsureSocketDir makes dir, one of TmuxSocketDirs, as tmux would make it
// (0700, its parent too) when it is missing, so that a profile can deny it
// before tmux runs (a missing path is left out of a profile:
// codex.Permissions.WithoutMissing). It removes an empty regular file
// there first: the placeholder a sandboxed command killed mid-run leaves
// where a denied path was missing, which tmux would refuse ("not a
// directory") for good. Anything else already there is left for tmux to
// judge. Idempotent.
func EnsureSocketDir(dir string) error {
	fi, err := os.Lstat(dir)
	switch {
	case err == nil && fi.Mode().IsRegular() && fi.Size() == 0:
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("remove the placeholder file at %s: %w", dir, err)
		}
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("look at %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("make %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make %s: %w", dir, err)
	}
	return nil
}

// MakeDeniedState makes the paths of deny that lie inside stateDir, the
// project's state directory on this host (absolute, as the shim there
// has it: DeniedThere expanded), as directories (0700, stateDir too)
// where missing, never through a symbolic link (project.Layout.OpenDir),
// so that a permission profile denies them before they exist (a missing
// path is left out of a profile, codex.Permissions.WithoutMissing, and
// one made later by `batty clone-host` or another agent's shim would be
// readable). Other paths are left alone. It errs naming a directory it
// could not make. Idempotent.
func MakeDeniedState(stateDir string, deny []string) error {
	if !filepath.IsAbs(stateDir) {
		return fmt.Errorf("the state directory %q is not an absolute path", stateDir)
	}
	l := project.Layout{Dir: filepath.Clean(stateDir)}
	for _, d := range deny {
		rel, err := filepath.Rel(l.Dir, d)
		if err != nil || !filepath.IsAbs(d) || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		dir, err := l.OpenDir(rel, true)
		if err != nil {
			return fmt.Errorf("make %s before it is denied: %w", d, err)
		}
		dir.Close()
	}
	return nil
}

// SocketDirs are the directories of a machine's sockets that act for its
// user uid whatever the network, which no sandboxed command of batty's may
// reach: ssh's shared connections to the hosts (ControlDirFor, from env's
// XDG_RUNTIME_DIR, HOME and TMPDIR) and tmux's sockets (TmuxSocketDirs,
// from env's TMUX_TMPDIR). env is that machine's environment. Pure.
func SocketDirs(env []string, uid int) []string {
	var dirs []string
	if c := ControlDirFor(agentenv.Lookup(env, "XDG_RUNTIME_DIR"), agentenv.Lookup(env, "HOME"), agentenv.Lookup(env, "TMPDIR")); c != "" {
		dirs = append(dirs, c)
	}
	return append(dirs, TmuxSocketDirs(agentenv.Lookup(env, "TMUX_TMPDIR"), uid)...)
}

// PermissionsHere is p, the permission profile the daemon made for an
// agent on a host (its workspace and outbox writable, the project's state
// directory there denied, "~/" the home directory there: see
// codex.Permissions.ValidateThere), completed on the host that runs it:
// "~" expanded to home, the user's sockets there denied (SocketDirs of
// env, the environment the agent's Codex starts with there, and uid), and
// with the network on the sockets env names denied and their variables
// hidden but those allow gives back (codex.Permissions.HideUserSockets,
// allow the role's codex.allow_sockets). It errs for a profile that is
// not then one Codex takes (codex.Permissions.Validate): a path under
// "~/" with no home known. nil stays nil. Pure; p is not changed.
func PermissionsHere(p *codex.Permissions, allow []string, home string, env []string, uid int) (*codex.Permissions, error) {
	if p == nil {
		return nil, nil
	}
	here := *p
	expand := func(list []string) []string {
		out := make([]string, 0, len(list))
		for _, d := range list {
			d = ExpandHome(d, home)
			if filepath.IsAbs(d) {
				d = filepath.Clean(d)
			}
			out = append(out, d)
		}
		return out
	}
	here.Write, here.Read, here.Deny = expand(p.Write), expand(p.Read), expand(p.Deny)
	here.HideEnv = slices.Clone(p.HideEnv)
	for _, d := range SocketDirs(env, uid) {
		if !slices.Contains(here.Deny, d) {
			here.Deny = append(here.Deny, d)
		}
	}
	if here.Network {
		here.HideUserSockets(env, allow)
	}
	if err := here.Validate(); err != nil {
		return nil, fmt.Errorf("the permission profile on this host: %w", err)
	}
	return &here, nil
}

// RosterThere is, on a host, the team's roster (team.Roster) of the
// project there (hostDir) that the agents' batty commands there read
// (agentenv.TeamFile): beside the project's state directory there
// (StateDir), which their permission profiles deny, out of every agent's
// writable paths. Pure.
func RosterThere(hostDir string) string {
	return path.Clean(StateDir(hostDir)) + ".team.yaml"
}
