package fanout

import (
	"reflect"
	"testing"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

// TestHostFor checks how workers are spread over hosts: round robin by
// worker number, as a role's instances are.
func TestHostFor(t *testing.T) {
	tests := []struct {
		count int
		want  []int // hosts of workers 1, 2, ...
	}{
		{1, []int{0, 0, 0}},
		{2, []int{0, 1, 0, 1, 0}},
		{3, []int{0, 1, 2, 0, 1, 2, 0}},
	}
	for _, tt := range tests {
		for i, want := range tt.want {
			if got := HostFor(i+1, tt.count); got != want {
				t.Errorf("HostFor(%d, %d) = %d, want %d", i+1, tt.count, got, want)
			}
		}
	}
}

func TestHostConfig(t *testing.T) {
	c := shimconfig.Config{Agent: "fanout", CodexBin: "/home/ann/.local/bin/codex", Transcript: "/tmp/t",
		Exec: codex.ExecOptions{AddDirs: []string{"/work/p/data", "/etc"}, OutputSchema: "/work/p/schema.json"},
		Env:  []string{"CODEX_HOME=/home/ann/.codex", "OPENAI_API_KEY=sk-x", "BATTY_DIR=/work/p/.batty"}}
	on := func(dir string) host.Host {
		return &host.Remote{Host: team.Host{Name: "pod1", SSH: "pod1", Dir: dir}, Root: "/work/p", Home: "/home/ann"}
	}
	got := hostConfig(on("~/src/p"), c, "/work/p/sub")
	want := shimconfig.Config{Agent: "fanout", Cwd: "~/src/p/sub", CodexBin: "~/.local/bin/codex",
		Exec: codex.ExecOptions{AddDirs: []string{"~/src/p/data", "~/src/p"}, OutputSchema: "~/src/p/schema.json"},
		Env:  []string{"CODEX_HOME=~/.codex", "OPENAI_API_KEY=sk-x", "BATTY_DIR=" + hosts.StateDir("~/src/p")},
		// No transcript file there: a transcript here comes back as a
		// stream (which a worker does not read).
		TranscriptStream: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hostConfig =\n%+v\nwant\n%+v", got, want)
	}
	if c.Env[0] != "CODEX_HOME=/home/ann/.codex" || c.Exec.AddDirs[0] != "/work/p/data" {
		t.Error("hostConfig changed its argument")
	}
	// A cwd set in the configuration wins over the job's directory.
	c.Cwd = "/work/p/a"
	if got := hostConfig(on("/srv/p"), c, "/work/p/sub").Cwd; got != "/srv/p/a" {
		t.Errorf("Cwd = %q", got)
	}
}

func TestPreflightTarget(t *testing.T) {
	c := shimconfig.Config{CodexBin: "~/bin/codex", Cwd: "~/p", Env: []string{"CODEX_HOME=~/.codex", "K=v"},
		Exec: codex.ExecOptions{Config: []string{"model_provider=x", "a=b=c"}, ExtraArgs: []string{"--oss"}}}
	want := preflight.Target{Bin: "~/bin/codex", Home: "~/.codex", Env: []string{"K=v"}, Cwd: "~/p",
		Config: map[string]string{"model_provider": "x", "a": "b=c"}, Args: []string{"--oss"}}
	if got := preflightTarget(c); !reflect.DeepEqual(got, want) {
		t.Errorf("preflightTarget = %+v, want %+v", got, want)
	}
}
