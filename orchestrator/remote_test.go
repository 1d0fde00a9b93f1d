package orchestrator

import (
	"slices"
	"strings"
	"testing"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

func TestRemoteConfigs(t *testing.T) {
	l := project.LayoutIn("/home/me/.local/state/batty", "/work/p")
	r := &remoteHost{host: team.Host{Name: "b", SSH: "b"}, dir: "~/src/p"}
	c := shimconfig.Config{
		Agent: "eng", Cwd: "/work/p/svc", CodexBin: "/home/me/bin/codex",
		Exec: codex.ExecOptions{AddDirs: []string{l.Dir + "/outboxes/eng"}},
		Env: []string{"K=/home/me/k", "CODEX_HOME=/home/me/.codex-w", agentenv.Dir + "=" + l.Dir,
			agentenv.Project + "=/work/p"},
		Transcript: l.Dir + "/logs/eng.log", TranscriptRoot: l.StateRoot(), ReplyDir: l.Dir + "/replies/eng",
	}
	there := hosts.StateDir("~/src/p")
	got := remoteShimConfig(c, r, l, "/home/me")
	// The state directory there is under the home there, the agent's
	// outbox in it; the project's paths are the project's there.
	if got.Cwd != "~/src/p/svc" || got.CodexBin != "~/bin/codex" || !slices.Equal(got.Exec.AddDirs, []string{there + "/outboxes/eng"}) ||
		!slices.Equal(got.Env, []string{"K=/home/me/k", "CODEX_HOME=~/.codex-w", agentenv.Dir + "=" + there, agentenv.Project + "=~/src/p"}) ||
		got.Transcript != "" || got.TranscriptRoot != "" || got.ReplyDir != "" || !got.TranscriptStream || !got.RelayInboxes || !got.ReplyStream {
		t.Fatalf("remoteShimConfig = %+v", got)
	}
	if c.Env[1] != "CODEX_HOME=/home/me/.codex-w" || c.Exec.AddDirs[0] != l.Dir+"/outboxes/eng" {
		t.Fatalf("remoteShimConfig changed its argument: %+v", c)
	}
	// A worktree agent's directory in its worktree here, in the state
	// directory: the same in its clone there, in the state directory
	// there, out of the project there.
	c.Cwd = l.WorktreesDir() + "/eng/svc"
	if got := remoteShimConfig(c, r, l, "/home/me"); got.Cwd != there+"/worktrees/eng/svc" {
		t.Fatalf("remoteShimConfig of a worktree agent: Cwd %q", got.Cwd)
	}
	pt := remoteTarget(preflight.Target{Bin: "/home/me/bin/codex", Home: "/home/me/.codex-w", Cwd: "/work/p/svc", Env: []string{"A=1"}}, r, "/work/p", "/home/me")
	if pt.Bin != "~/bin/codex" || pt.Home != "~/.codex-w" || pt.Cwd != "~/src/p/svc" || !slices.Equal(pt.Env, []string{"A=1"}) {
		t.Fatalf("remoteTarget = %+v", pt)
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
