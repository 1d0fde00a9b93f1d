package orchestrator

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

func TestRemoteConfigs(t *testing.T) {
	l := project.LayoutIn("/home/me/.local/state/batty", "/work/p")
	r := &host.Remote{Host: team.Host{Name: "b", SSH: "b", Dir: "~/src/p"}, Root: "/work/p", Home: "/home/me"}
	c := shimconfig.Config{
		Agent: "eng", Cwd: "/work/p/svc", CodexBin: "/home/me/bin/codex",
		Exec: codex.ExecOptions{AddDirs: []string{l.Dir + "/outboxes/eng"}},
		Env: []string{"K=/home/me/k", "CODEX_HOME=/home/me/.codex-w", agentenv.Dir + "=" + l.Dir,
			agentenv.Project + "=/work/p", agentenv.TeamFile + "=/work/p/team.yaml"},
		Transcript: l.Dir + "/logs/eng.log", TranscriptRoot: l.StateRoot(), RelayInboxes: true,
	}
	there := hosts.StateDir("~/src/p")
	def := team.Agent{Name: "eng", Codex: team.CodexSettings{Sandbox: codex.SandboxDangerFullAccess}}
	got, err := shimConfigOn(def, c, r, host.Rooms{})
	if err != nil {
		t.Fatal(err)
	}
	// The state directory there is under the home there, the agent's
	// outbox in it, the roster beside it; the project's paths are the
	// project's there. An agent outside workspace-write has no profile.
	if got.Cwd != "~/src/p/svc" || got.CodexBin != "~/bin/codex" || !slices.Equal(got.Exec.AddDirs, []string{there + "/outboxes/eng"}) ||
		!slices.Equal(got.Env, []string{"K=/home/me/k", "CODEX_HOME=~/.codex-w", agentenv.Dir + "=" + there, agentenv.Project + "=~/src/p",
			agentenv.TeamFile + "=" + there + ".team.yaml"}) || got.Exec.Permissions != nil ||
		got.Transcript != "" || got.TranscriptRoot != "" || !got.TranscriptStream || !got.RelayInboxes {
		t.Fatalf("shimConfigOn = %+v", got)
	}
	if c.Env[1] != "CODEX_HOME=/home/me/.codex-w" || c.Exec.AddDirs[0] != l.Dir+"/outboxes/eng" {
		t.Fatalf("shimConfigOn changed its argument: %+v", c)
	}
	// A worktree agent's directory in its worktree here, in the state
	// directory: the same in its clone there, in the state directory
	// there, out of the project there.
	c.Cwd = l.WorktreesDir() + "/eng/svc"
	if got, _ := shimConfigOn(def, c, r, host.Rooms{}); got.Cwd != there+"/worktrees/eng/svc" {
		t.Fatalf("shimConfigOn of a worktree agent: Cwd %q", got.Cwd)
	}
	pt := r.Target(team.Agent{Name: "eng", Cwd: "/work/p/svc", Codex: team.CodexSettings{Bin: "/home/me/bin/codex", Env: map[string]string{"A": "1"}}}, "/home/me/.codex-w")
	if pt.Bin != "~/bin/codex" || pt.Home != "~/.codex-w" || pt.Cwd != "~/src/p/svc" || !slices.Equal(pt.Env, []string{"A=1"}) {
		t.Fatalf("Target = %+v", pt)
	}
}

// The log line about a host's clone left where an earlier batty kept it
// names both places, the branch the new one starts from, and what the
// user may remove.
func TestOldCloneNotice(t *testing.T) {
	got := oldCloneNotice("eng", "b", "/home/u/p/.batty/worktrees/eng", "b:~/.local/state/batty/projects/p-1/worktrees/eng")
	for _, want := range []string{"b:~/.local/state/batty/projects/p-1/worktrees/eng", "/home/u/p/.batty/worktrees/eng", "batty/eng here",
		"uncommitted", "remove it", "/home/u/p/.batty/repo once no old clone is left"} {
		if !strings.Contains(got, want) {
			t.Errorf("the notice lacks %q:\n%s", want, got)
		}
	}
}

// A workspace-write agent on a host gets its permission profile there:
// its workspace and outbox there writable, the state directory there
// denied child by child — the clones, the outboxes, state/ — but the
// clone repository, which its git reads, left readable and not writable
// (a worktree agent's clone, in the denied worktrees, is given back), the
// sandbox settings it took over out of the config and arguments, no
// --add-dir, "~/" left for the host to expand and the user's sockets
// there for the host to name: the allowed ones travel with the
// configuration. The host then completes it (hosts.PermissionsHere) into
// one Codex takes. A read-only agent there writes its outbox alone,
// under the same denials.
func TestRemoteShimConfigPermissions(t *testing.T) {
	l := project.LayoutIn("/home/me/.local/state/batty", "/work/p")
	r := &host.Remote{Host: team.Host{Name: "b", SSH: "b", Dir: "~/src/p"}, Root: "/work/p", Home: "/home/me"}
	there := hosts.StateDir("~/src/p")
	denied := map[string]string{there + "/worktrees": "none", there + "/outboxes": "none", there + "/state": "none",
		"/var/run/docker.sock": "none", "/run/docker.sock": "none"}
	with := func(rules map[string]string) map[string]string {
		m := maps.Clone(denied)
		maps.Copy(m, rules)
		return m
	}
	for _, tc := range []struct {
		name, sandbox, cwd, wantCwd string
		want                        map[string]string
	}{
		{"in the project there", codex.SandboxWorkspaceWrite, "/work/p/svc", "~/src/p/svc",
			with(map[string]string{"~/src/p/svc": "write", there + "/outboxes/eng": "write", "/opt/cache": "write"})},
		{"in its clone there", codex.SandboxWorkspaceWrite, l.WorktreesDir() + "/eng", there + "/worktrees/eng",
			with(map[string]string{there + "/worktrees/eng": "write", there + "/outboxes/eng": "write", "/opt/cache": "write"})},
		{"read-only in the project there", codex.SandboxReadOnly, "/work/p", "~/src/p",
			with(map[string]string{there + "/outboxes/eng": "write"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := team.Agent{Name: "eng", Codex: team.CodexSettings{Sandbox: tc.sandbox,
				Config:       map[string]string{"sandbox_workspace_write.network_access": "true", "model_verbosity": `"low"`},
				Args:         []string{"--add-dir", "/opt/cache", "--json"},
				AllowSockets: []string{team.SocketSSHAgent}}}
			c := CodexConfig(def)
			c.Cwd = tc.cwd
			c.Exec.AddDirs = []string{l.Dir + "/outboxes/eng"}
			c.Env = append(c.Env, agentenv.Dir+"="+l.Dir, agentenv.Project+"=/work/p", agentenv.TeamFile+"=/work/p/team.yaml")
			got, err := shimConfigOn(def, c, r, host.Rooms{})
			if err != nil {
				t.Fatal(err)
			}
			p := got.Exec.Permissions
			if p == nil || got.Cwd != tc.wantCwd {
				t.Fatalf("shimConfigOn: cwd %q, profile %+v", got.Cwd, p)
			}
			fs := p.Filesystem()
			if !maps.Equal(fs, tc.want) || !p.Network || !slices.Equal(p.HideEnv, []string{"DBUS_SESSION_BUS_ADDRESS", "GPG_AGENT_INFO"}) {
				t.Fatalf("the profile there: %v network %t hidden %v", fs, p.Network, p.HideEnv)
			}
			if got.Exec.AddDirs != nil || !slices.Equal(got.Exec.Config, []string{`model_verbosity="low"`}) || !slices.Equal(got.Exec.ExtraArgs, []string{"--json"}) ||
				!slices.Equal(got.AllowSockets, []string{team.SocketSSHAgent}) {
				t.Fatalf("shimConfigOn: add-dirs %v config %v args %v allow %v", got.Exec.AddDirs, got.Exec.Config, got.Exec.ExtraArgs, got.AllowSockets)
			}
			if err := p.Validate(); err == nil {
				t.Fatal("a profile with the home there unexpanded passes as complete")
			}
			// On the host: "~" expanded, its sockets denied, the user's
			// there found in its environment.
			env := []string{"HOME=/home/bob", "XDG_RUNTIME_DIR=/run/user/1001", "SSH_AUTH_SOCK=/tmp/ssh-y/agent.9"}
			hp, err := hosts.PermissionsHere(p, got.AllowSockets, "/home/bob", env, 1001)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(hp.HideEnv, []string{"DBUS_SESSION_BUS_ADDRESS", "GPG_AGENT_INFO"}) || hp.Validate() != nil {
				t.Fatalf("on the host: hidden %v, %v", hp.HideEnv, hp.Validate())
			}
			hfs := hp.Filesystem()
			state := hosts.ExpandHome(there, "/home/bob")
			// The state directory and its clone repository have no rule:
			// readable, as the rest of the disk, not writable.
			for path, access := range map[string]string{hosts.ExpandHome(tc.wantCwd, "/home/bob"): tc.want[tc.wantCwd], state + "/outboxes/eng": "write",
				state + "/worktrees": "none", state + "/outboxes": "none", state + "/state": "none", state: "", state + "/repo": "",
				"/run/user/1001": "none", "/tmp/tmux-1001": "none", "/home/bob/.gnupg": "none", "/tmp/ssh-y": "read"} {
				if hfs[path] != access {
					t.Errorf("on the host %s is %q, want %q (%v)", path, hfs[path], access, hfs)
				}
			}
		})
	}
}
