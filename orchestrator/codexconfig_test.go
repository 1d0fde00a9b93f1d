package orchestrator

import (
	"testing"
	"time"

	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

// TestCodexConfigRuntime checks that the agent's codex runtime reaches the
// shim's configuration, and that the team's names are the shim's.
func TestCodexConfigRuntime(t *testing.T) {
	if team.RuntimeExec != shimconfig.RuntimeExec || team.RuntimeAppServer != shimconfig.RuntimeAppServer {
		t.Fatalf("team runtimes %q/%q differ from the shim's %q/%q",
			team.RuntimeExec, team.RuntimeAppServer, shimconfig.RuntimeExec, shimconfig.RuntimeAppServer)
	}
	for _, tc := range []struct {
		runtime string
		want    string
	}{
		{"", ""},
		{team.RuntimeExec, shimconfig.RuntimeExec},
		{team.RuntimeAppServer, shimconfig.RuntimeAppServer},
	} {
		def := team.Agent{Name: "eng", Role: "eng", Cwd: t.TempDir(), Codex: team.CodexSettings{
			Bin: "codex", Sandbox: "workspace-write", ApprovalPolicy: "never", Runtime: tc.runtime,
		}}
		cfg := CodexConfig(def)
		if cfg.Runtime != tc.want {
			t.Errorf("runtime %q: shimconfig.Config.Runtime = %q, want %q", tc.runtime, cfg.Runtime, tc.want)
		}
		// The setting crosses to the shim process on its command line.
		back, err := shimconfig.ParseArgs(cfg.Args())
		if err != nil {
			t.Fatalf("runtime %q: ParseArgs(Args()): %v", tc.runtime, err)
		}
		if back.Runtime != tc.want {
			t.Errorf("runtime %q: after Args/ParseArgs Runtime = %q, want %q", tc.runtime, back.Runtime, tc.want)
		}
	}
}

// TestCodexConfigRuntimeIdle checks that runtime_idle, 0 (never) included,
// reaches the shim process's configuration, and that both defaults agree.
func TestCodexConfigRuntimeIdle(t *testing.T) {
	if team.DefaultRuntimeIdle != shimconfig.DefaultRuntimeIdle {
		t.Fatalf("team default runtime_idle %s differs from the shim's %s", team.DefaultRuntimeIdle, shimconfig.DefaultRuntimeIdle)
	}
	for _, idle := range []time.Duration{0, 300 * time.Millisecond, team.DefaultRuntimeIdle} {
		def := team.Agent{Name: "eng", Role: "eng", Cwd: t.TempDir(), Codex: team.CodexSettings{
			Bin: "codex", Sandbox: "workspace-write", ApprovalPolicy: "never", Runtime: team.RuntimeAppServer, RuntimeIdle: idle,
		}}
		back, err := shimconfig.ParseArgs(CodexConfig(def).Args())
		if err != nil {
			t.Fatal(err)
		}
		if back.RuntimeIdle != idle {
			t.Errorf("runtime_idle %s reached the shim as %s", idle, back.RuntimeIdle)
		}
	}
}
