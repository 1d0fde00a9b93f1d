package orchestrator

import (
	"maps"
	"slices"
	"testing"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/team"
)

func TestAgentPermissions(t *testing.T) {
	env := []string{"XDG_RUNTIME_DIR=/run/user/7", "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1", "HOME=/home/u"}
	base := rooms{Cwd: "/p", Outbox: "/s/outboxes/a", Deny: []string{"/s", "/p/.batty/worktrees", "/tmp/tmux-7"}, Env: env}
	ww := func(config map[string]string, args []string, allow ...string) team.CodexSettings {
		return team.CodexSettings{Sandbox: codex.SandboxWorkspaceWrite, Config: config, Args: args, AllowSockets: allow}
	}
	ro := func(config map[string]string, args []string) team.CodexSettings {
		return team.CodexSettings{Sandbox: codex.SandboxReadOnly, Config: config, Args: args}
	}
	closed := map[string]string{"/p": "write", "/s/outboxes/a": "write", "/s": "none", "/p/.batty/worktrees": "none", "/tmp/tmux-7": "none"}
	roClosed := maps.Clone(closed)
	delete(roClosed, "/p")
	withNet := func(extra map[string]string) map[string]string {
		m := maps.Clone(closed)
		maps.Copy(m, map[string]string{"/run/user/7": "none", "/tmp/ssh-x": "none", "/home/u/.gnupg": "none",
			"/var/run/docker.sock": "none", "/run/docker.sock": "none"})
		for k, v := range extra {
			if v == "" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	allHidden := []string{"DBUS_SESSION_BUS_ADDRESS", "GPG_AGENT_INFO", "SSH_AUTH_SOCK"}
	for _, tc := range []struct {
		name      string
		env       []string
		codex     team.CodexSettings
		fs        map[string]string
		network   bool
		hidden    []string
		config    map[string]string
		args      []string
		noProfile bool
		readOnly  bool
		wantErr   bool
	}{
		{name: "read-only writes its outbox alone", codex: ro(map[string]string{"model_verbosity": `"low"`}, nil),
			fs: roClosed, config: map[string]string{"model_verbosity": `"low"`}, readOnly: true},
		{name: "read-only takes no writable roots nor temporary directories",
			codex: ro(map[string]string{"sandbox_workspace_write.writable_roots": `["/cache"]`, "sandbox_workspace_write.exclude_slash_tmp": "false"},
				[]string{"--add-dir", "/more", "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true", "--json"}),
			fs: roClosed, config: map[string]string{}, args: []string{"--json"}, readOnly: true},
		{name: "read-only with the network asked for denies the user's sockets", codex: ro(map[string]string{"sandbox_workspace_write.network_access": "true"}, nil),
			fs: func() map[string]string {
				m := withNet(nil)
				delete(m, "/p")
				return m
			}(), network: true, hidden: allHidden, config: map[string]string{}, readOnly: true},
		{name: "read-only with a sandbox mode in args is refused", codex: ro(nil, []string{"-s", "workspace-write"}), wantErr: true},
		{name: "full access keeps its meaning", codex: team.CodexSettings{Sandbox: codex.SandboxDangerFullAccess}, noProfile: true},
		{name: "workspace-write without network", codex: ww(map[string]string{"model_verbosity": `"low"`}, nil), fs: closed,
			config: map[string]string{"model_verbosity": `"low"`}},
		{name: "network on denies the user's sockets", codex: ww(map[string]string{"sandbox_workspace_write.network_access": "true"}, nil),
			fs: withNet(nil), network: true, hidden: allHidden, config: map[string]string{}},
		{name: "ssh-agent given back", codex: ww(map[string]string{"sandbox_workspace_write.network_access": "true"}, nil, team.SocketSSHAgent),
			fs: withNet(map[string]string{"/tmp/ssh-x": "read"}), network: true, hidden: []string{"DBUS_SESSION_BUS_ADDRESS", "GPG_AGENT_INFO"}, config: map[string]string{}},
		{name: "docker and the runtime directory given back", codex: ww(map[string]string{"sandbox_workspace_write.network_access": "true"}, nil, team.SocketDocker, team.SocketRuntimeDir),
			fs: withNet(map[string]string{"/var/run/docker.sock": "", "/run/docker.sock": "", "/run/user/7": ""}), network: true, hidden: allHidden, config: map[string]string{}},
		{name: "temporary directories and roots from config and args",
			codex: ww(map[string]string{"sandbox_workspace_write.exclude_slash_tmp": "true", "sandbox_workspace_write.exclude_tmpdir_env_var": "true"},
				[]string{"-c", `sandbox_workspace_write.writable_roots=["/cache"]`, "--add-dir", "/more", "--json"}),
			fs: func() map[string]string {
				m := maps.Clone(closed)
				maps.Copy(m, map[string]string{"/cache": "write", "/more": "write", codex.SlashTmp: "read", codex.Tmpdir: "read"})
				return m
			}(), config: map[string]string{}, args: []string{"--json"}},
		{name: "an ssh-agent inside the runtime directory given back", env: []string{"XDG_RUNTIME_DIR=/run/user/7", "SSH_AUTH_SOCK=/run/user/7/keyring/ssh", "HOME=/home/u"},
			codex: ww(map[string]string{"sandbox_workspace_write.network_access": "true"}, nil, team.SocketSSHAgent),
			fs: withNet(map[string]string{"/run/user/7": "", "/tmp/ssh-x": "", "/run/user/7/keyring": "read", "/run/user/7/bus": "none",
				"/run/user/7/gnupg": "none", "/run/user/7/docker.sock": "none"}),
			network: true, hidden: []string{"DBUS_SESSION_BUS_ADDRESS", "GPG_AGENT_INFO"}, config: map[string]string{}},
		{name: "a sandbox mode in args is refused", codex: ww(nil, []string{"-c", `sandbox_mode="read-only"`}), wantErr: true},
		{name: "unreadable writable roots are refused", codex: ww(nil, []string{"-c", "sandbox_workspace_write.writable_roots=[1]"}), wantErr: true},
		{name: "relative writable roots are refused", codex: ww(map[string]string{"sandbox_workspace_write.writable_roots": `["rel"]`}, nil), wantErr: true},
		{name: "a boolean that is not one is refused", codex: ww(map[string]string{"sandbox_workspace_write.network_access": `"true"`}, nil), wantErr: true},
		{name: "a key of the workspace-write sandbox Codex does not have is refused, in config too",
			codex: ww(map[string]string{"sandbox_workspace_write.network": "true"}, nil), wantErr: true},
		{name: "a sandbox mode in config is refused", codex: ww(map[string]string{"sandbox_mode": `"workspace-write"`}, nil), wantErr: true},
		{name: "--yolo is refused", codex: ww(nil, []string{"--yolo"}), wantErr: true},
		{name: "--full-auto is refused", codex: ro(nil, []string{"--full-auto"}), wantErr: true},
		{name: "single-quoted roots, a comment and an inline table, as TOML reads them",
			codex: ww(map[string]string{"sandbox_workspace_write.exclude_slash_tmp": "true # no /tmp"},
				[]string{"-c", "sandbox_workspace_write.writable_roots=['/x'] # cache", "-c", `sandbox_workspace_write={network_access=false, exclude_tmpdir_env_var=true}`, "--json"}),
			fs: func() map[string]string {
				m := maps.Clone(closed)
				maps.Copy(m, map[string]string{"/x": "write", codex.SlashTmp: "read", codex.Tmpdir: "read"})
				return m
			}(), config: map[string]string{}, args: []string{"--json"}},
		{name: "one string in config is one root", codex: ww(map[string]string{"sandbox_workspace_write.writable_roots": `"/one"`}, nil),
			fs: func() map[string]string {
				m := maps.Clone(closed)
				m["/one"] = "write"
				return m
			}(), config: map[string]string{}},
	} {
		r := base
		r.Codex = tc.codex
		if tc.env != nil {
			r.Env = tc.env
		}
		p, config, args, err := agentPermissions(r)
		switch {
		case tc.wantErr:
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
			continue
		case tc.noProfile:
			if p != nil {
				t.Errorf("%s: a profile %+v", tc.name, p)
			}
			continue
		}
		if want := map[bool]string{true: codex.ExtendsReadOnly, false: codex.ExtendsWorkspace}[tc.readOnly]; p.Base() != want {
			t.Errorf("%s: extends %s, want %s", tc.name, p.Base(), want)
		}
		if got := p.Filesystem(); !maps.Equal(got, tc.fs) {
			t.Errorf("%s: filesystem\n got %v\nwant %v", tc.name, got, tc.fs)
		}
		if p.Network != tc.network || !slices.Equal(p.HideEnv, tc.hidden) {
			t.Errorf("%s: network %t hidden %v, want %t %v", tc.name, p.Network, p.HideEnv, tc.network, tc.hidden)
		}
		if !maps.Equal(config, tc.config) || !slices.Equal(args, tc.args) {
			t.Errorf("%s: config %v args %q, want %v %q", tc.name, config, args, tc.config, tc.args)
		}
	}
}
