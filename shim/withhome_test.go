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
		Agent: "a", Cwd: "~/proj/sub", CodexBin: "~/bin/codex", Transcript: "/abs/t", ReplyDir: "~",
		Exec: codex.ExecOptions{AddDirs: []string{"~/proj/.batty/inboxes", "/x"}, OutputSchema: "~bob/s"},
		Env:  []string{"CODEX_HOME=~/.codex-w", agentenv.Dir + "=~/proj/.batty", "OTHER=~/kept", "EMPTY="},
	}
	got := WithHome(c, "/home/u")
	want := shimconfig.Config{
		Agent: "a", Cwd: "/home/u/proj/sub", CodexBin: "/home/u/bin/codex", Transcript: "/abs/t", ReplyDir: "/home/u",
		Exec: codex.ExecOptions{AddDirs: []string{"/home/u/proj/.batty/inboxes", "/x"}, OutputSchema: "~bob/s"},
		Env:  []string{"CODEX_HOME=/home/u/.codex-w", agentenv.Dir + "=/home/u/proj/.batty", "OTHER=~/kept", "EMPTY="},
	}
	if got.Cwd != want.Cwd || got.CodexBin != want.CodexBin || got.Transcript != want.Transcript || got.ReplyDir != want.ReplyDir ||
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
