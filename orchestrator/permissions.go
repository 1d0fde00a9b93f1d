package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/team"
)

// rooms is what an agent's permission profile is made of: where it
// works, what of batty's it may write, what it must not see, and the
// environment its commands would inherit.
type rooms struct {
	// Cwd is its workspace: the project's checkout, its worktree, or
	// the role's cwd. Writable.
	Cwd string
	// Outbox is its outbox (package outbox). Writable.
	Outbox string
	// Deny are the directories it may not read, list nor connect to a
	// socket in: the state directory, the worktrees, the sockets'
	// directories (batty's, the shared app-server's, tmux's). Cwd and
	// Outbox stay writable inside them.
	Deny []string
	// Codex is the role's codex settings.
	Codex team.CodexSettings
	// Env is the environment its Codex starts with (XDG_RUNTIME_DIR,
	// SSH_AUTH_SOCK, HOME are read from it).
	Env []string
	// There says the agent runs on another host: its paths may be under
	// "~/", the home directory there, and the host completes the profile
	// (hosts.PermissionsHere: codex.Permissions.ValidateThere).
	There bool
}

// agentPermissions is the permission profile of an agent in r, with the
// role's codex config and extra arguments left once the profile has taken
// over their sandbox_workspace_write settings (network_access → the
// network, writable_roots and --add-dir → writable paths,
// exclude_slash_tmp and exclude_tmpdir_env_var → /tmp and $TMPDIR
// read-only). It is nil (config and args as they are) unless the role's
// sandbox is workspace-write or read-only: danger-full-access keeps its
// meaning.
//
// A read-only agent's profile extends Codex's :read-only: it writes its
// outbox and nothing else (so `batty send` and `batty merge` work), reads
// all else, its workspace included, but the same denials as a
// workspace-write agent's.
// The writable roots and temporary-directory settings are the
// workspace-write sandbox's and give it nothing (as under Codex's own
// read-only sandbox); network_access still turns its network on.
//
// With the network on, the user's sockets are denied too — the
// directories of $XDG_RUNTIME_DIR and $SSH_AUTH_SOCK, ~/.gnupg, the
// Docker sockets — and SSH_AUTH_SOCK, GPG_AGENT_INFO and
// DBUS_SESSION_BUS_ADDRESS hidden from its commands, but those the role's
// allow_sockets gives back. The settings are read by
// codex.ReadSandboxSettings; it errs for one it cannot map: a sandbox
// mode in codex.config or codex.args (-s, sandbox_mode, --full-auto,
// --yolo: Codex would take it over the profile), a value that does not
// read (a boolean that is not one, writable roots that are not absolute
// paths), a key of sandbox_workspace_write Codex does not have. Pure.
func agentPermissions(r rooms) (p *codex.Permissions, config map[string]string, args []string, err error) {
	c := r.Codex
	readOnly := c.Sandbox == codex.SandboxReadOnly
	if c.Sandbox != codex.SandboxWorkspaceWrite && !readOnly {
		return nil, c.Config, c.Args, nil
	}
	p = &codex.Permissions{}
	for _, w := range []string{r.Cwd, r.Outbox} {
		if w != "" {
			p.Write = append(p.Write, w)
		}
	}
	for _, d := range r.Deny {
		if d != "" {
			p.Deny = append(p.Deny, filepath.Clean(d))
		}
	}
	ss, err := codex.ReadSandboxSettings(c.Sandbox, c.Config, c.Args)
	switch {
	case err != nil:
		return nil, nil, nil, err
	case ss.ModeSetBy != "":
		return nil, nil, nil, fmt.Errorf("%s: set the sandbox with codex.sandbox", ss.ModeSetBy)
	}
	for _, d := range ss.WritableRoots {
		if !filepath.IsAbs(d) {
			return nil, nil, nil, fmt.Errorf("sandbox_workspace_write.writable_roots: %q is not an absolute path", d)
		}
	}
	p.Network, p.ReadOnlySlashTmp, p.ReadOnlyTmpdir = ss.Network, ss.ExcludeSlashTmp, ss.ExcludeTmpdirEnvVar
	p.Write = append(p.Write, ss.WritableRoots...)
	p.Write = append(p.Write, ss.AddDirs...)
	config, args = ss.Config, ss.Args
	if readOnly {
		// Its outbox its one writable path. Its workspace is readable
		// as all is but the denials (a read-only role has no worktree:
		// a path denied cannot be read again below, team.Load).
		p.Extends, p.Write, p.ReadOnlySlashTmp, p.ReadOnlyTmpdir = codex.ExtendsReadOnly, nil, false, false
		if r.Outbox != "" {
			p.Write = append(p.Write, r.Outbox)
		}
	}
	if p.Network {
		p.HideUserSockets(r.Env, c.AllowSockets)
	}
	for i, w := range p.Write {
		if w != "" {
			p.Write[i] = filepath.Clean(w)
		}
	}
	check := p.Validate
	if r.There {
		check = p.ValidateThere
	}
	if err := check(); err != nil {
		return nil, nil, nil, err
	}
	return p, config, args, nil
}

// deniedDirs are the directories of batty's here that no sandboxed
// command may read (an agent's, verify, setup): the state directory with
// the worktrees, the directories of batty's control socket, of ssh's
// shared connections to the hosts and of tmux's sockets. A command's own
// rooms are given back inside them.
//
// tmux's socket directories are made (0700, as tmux makes them) when
// missing: they lie where agents may write, and a directory an agent made
// first would not be denied (a missing path is left out of a profile,
// codex.Permissions.WithoutMissing). One that cannot be made is logged
// and left to that rule.
func (d *Daemon) deniedDirs() []string {
	deny := []string{d.layout.Dir, filepath.Dir(d.layout.Socket()), d.layout.WorktreesDir()}
	for _, dir := range hosts.TmuxSocketDirs(os.Getenv("TMUX_TMPDIR"), os.Getuid()) {
		if err := hosts.EnsureSocketDir(dir); err != nil {
			d.log.Warn("tmux's socket directory could not be made before the agents start", "dir", dir, "error", err)
		}
	}
	return append(deny, hosts.SocketDirs(os.Environ(), os.Getuid())...)
}
