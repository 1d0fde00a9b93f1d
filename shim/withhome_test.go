package shim

import (
	"slices"
	"testing"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/shim/shimconfig"
)

func TestWithHome(t *testing.T) {
	c := shimconfig.Config{
		Agent: "a", Cwd: "~/proj/sub", CodexBin: "~/bin/codex", Transcript: "/abs/t",
		Exec: codex.ExecOptions{AddDirs: []string{"~/proj/.batty/inboxes", "/x"}, OutputSchema: "~bob/s"},
		Env:  []string{"CODEX_HOME=~/.codex-w", agentenv.Dir + "=~/proj/.batty", "OTHER=~/kept", "EMPTY="},
	}
	got := WithHome(c, "/home/u")
	want := shimconfig.Config{
		Agent: "a", Cwd: "/home/u/proj/sub", CodexBin: "/home/u/bin/codex", Transcript: "/abs/t",
		Exec: codex.ExecOptions{AddDirs: []string{"/home/u/proj/.batty/inboxes", "/x"}, OutputSchema: "~bob/s"},
		Env:  []string{"CODEX_HOME=/home/u/.codex-w", agentenv.Dir + "=/home/u/proj/.batty", "OTHER=~/kept", "EMPTY="},
	}
	if got.Cwd != want.Cwd || got.CodexBin != want.CodexBin || got.Transcript != want.Transcript ||
		!slices.Equal(got.Exec.AddDirs, want.Exec.AddDirs) || got.Exec.OutputSchema != want.Exec.OutputSchema || !slices.Equal(got.Env, want.Env) {
		t.Fatalf("WithHome:\n got %+v\nwant %+v", got, want)
	}
	if c.Cwd != "~/proj/sub" || c.Env[0] != "CODEX_HOME=~/.codex-w" || c.Exec.AddDirs[0] != "~/proj/.batty/inboxes" {
		t.Fatalf("WithHome changed its argument: %+v", c)
	}
	if u := WithHome(c, ""); u.Cwd != c.Cwd {
		t.Fatalf("WithHome without a home changed the config: %+v", u)
	}
}

// A shim on another host makes its configuration the host's: paths and
// the roster under "~/" expanded, the permission profile completed with
// the host's sockets and, the network on, the user's there but those
// allowed; a profile that cannot be completed (no home) is refused.
func TestOnHost(t *testing.T) {
	c := shimconfig.Config{
		Agent: "eng", Cwd: "~/src/p",
		Exec: codex.ExecOptions{Permissions: &codex.Permissions{Write: []string{"~/src/p", "~/.local/state/batty/projects/p-1/outboxes/eng"},
			Deny: []string{"~/.local/state/batty/projects/p-1"}, Network: true}},
		Env:          []string{agentenv.TeamFile + "=~/.local/state/batty/projects/p-1.team.yaml", "SSH_AUTH_SOCK=/tmp/ssh-z/agent.2"},
		AllowSockets: []string{codex.SocketDocker},
	}
	got, err := OnHost(c, "/home/u", []string{"HOME=/home/u", "XDG_RUNTIME_DIR=/run/user/9"}, 9)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Exec.Validate(); err != nil {
		t.Fatalf("the completed profile: %v", err)
	}
	fs := got.Exec.Permissions.Filesystem()
	for path, access := range map[string]string{"/home/u/src/p": "write", "/home/u/.local/state/batty/projects/p-1": "none",
		"/run/user/9": "none", "/tmp/tmux-9": "none", "/tmp/ssh-z": "none", "/home/u/.gnupg": "none", "/run/docker.sock": ""} {
		if fs[path] != access {
			t.Errorf("%s: %q, want %q (%v)", path, fs[path], access, fs)
		}
	}
	if got.Cwd != "/home/u/src/p" || got.Env[0] != agentenv.TeamFile+"=/home/u/.local/state/batty/projects/p-1.team.yaml" ||
		!slices.Contains(got.Exec.Permissions.HideEnv, "SSH_AUTH_SOCK") {
		t.Fatalf("OnHost = %+v", got)
	}
	if c.Exec.Permissions.Write[0] != "~/src/p" {
		t.Fatalf("OnHost changed its argument's profile: %+v", c.Exec.Permissions)
	}
	if _, err := OnHost(c, "", nil, 9); err == nil {
		t.Fatal("a profile under ~/ was completed without a home")
	}
}
