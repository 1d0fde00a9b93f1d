package main

import (
	"fmt"
	"testing"

	"github.com/battyhq/batty/shim/shimconfig"
)

// TestFanoutRuntimeChoice: the shared app-server unless a worker may run
// on another host or codex gets arguments only codex exec takes.
func TestFanoutRuntimeChoice(t *testing.T) {
	for _, c := range []struct {
		remote, execOnly bool
		want             string
	}{
		{false, false, shimconfig.RuntimeAppServer},
		{true, false, shimconfig.RuntimeExec},
		{false, true, shimconfig.RuntimeExec},
	} {
		if got := defaultFanoutRuntime(c.remote, c.execOnly); got != c.want {
			t.Errorf("defaultFanoutRuntime(%v, %v) = %q, want %q", c.remote, c.execOnly, got, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "[]"},
		{[]string{"-c", "a=1", "--config", "b=2", "-c=c=3", "--config=d=4"}, "[]"},
		{[]string{"--skip-git-repo-check", "-c", "a=1", "--color", "never"}, "[--skip-git-repo-check --color never]"},
		{[]string{"-c"}, "[-c]"},
	} {
		if got := fmt.Sprint(execOnlyArgs(c.args)); got != c.want {
			t.Errorf("execOnlyArgs(%q) = %s, want %s", c.args, got, c.want)
		}
	}
}
