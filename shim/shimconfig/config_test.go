package shimconfig

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
)

// The orchestrator hands a Config to the shim as flags: every field but
// Env and Instructions (which travel in the Welcome) must survive Args →
// ParseArgs.
func TestConfigArgsRoundTrip(t *testing.T) {
	full := Config{
		Agent: "eng-1", Cwd: "/srv/work", Branch: "batty/eng-1", Base: "main", CodexBin: "/opt/codex",
		Exec: codex.ExecOptions{
			Model: "gpt-5.5", ReasoningEffort: "high", Sandbox: codex.SandboxWorkspaceWrite,
			ApprovalPolicy: codex.ApprovalNever, AddDirs: []string{"/srv/p/.batty/inboxes", "/srv/shared"},
			Config: []string{`a.b="x y"`, "c=1"}, OutputSchema: "/srv/p/schema.json", ExtraArgs: []string{"--ephemeral", "--oss"},
			SkipGitRepoCheck: true,
		},
		Env:          []string{"A=1", "B=two words"},
		Instructions: "You build.", Runtime: RuntimeExec, ThreadID: "01a1fe06-da19-7320-bb56-f999f5fa1a4a",
		ThreadUsage: codex.Usage{InputTokens: 19124, CachedInputTokens: 9000, CacheWriteInputTokens: 5, OutputTokens: 7, ReasoningOutputTokens: 2},
		Transcript:  "/srv/p/.batty/logs/eng-1.log", TranscriptRoot: "/srv/p", QueueDepth: 3,
		TurnTimeout: time.Hour, IdleTimeout: 5 * time.Minute, StopGrace: 2 * time.Second,
		ContextWindow: 400000, PressurePct: 75, RuntimeIdle: 3 * time.Minute,
		AllowSockets: []string{codex.SocketSSHAgent, codex.SocketDocker},
	}
	for _, c := range []Config{full, {Agent: "solo"}} {
		got, err := ParseArgs(c.Args())
		if err != nil {
			t.Fatalf("ParseArgs(%q): %v", c.Args(), err)
		}
		want := c.WithDefaults()
		want.Env, want.Instructions = nil, ""
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip:\n got  %+v\n want %+v", got, want)
		}
	}
}

func TestParseArgsRefusesBadThreadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--agent=a", "--thread-usage=input=5"}, // no thread
		{"--agent=a", "--thread-id=t", "--thread-usage=input=-5"},
		{"--agent=a", "--thread-id=t", "--thread-usage=input=5,input=6"},
		{"--agent=a", "--thread-id=t", "--thread-usage=tokens=5"},
		{"--agent=a", "--thread-id=t", "--thread-usage=input"},
		{"--agent=a", "--thread-id=t", "--thread-usage=output=1e3"},
	} {
		if _, err := ParseArgs(args); err == nil {
			t.Errorf("ParseArgs(%q) accepted it", args)
		}
	}
	c, err := ParseArgs([]string{"--agent=a", "--thread-id=t", "--thread-usage=output=3,input=5"})
	if err != nil || c.ThreadUsage != (codex.Usage{InputTokens: 5, OutputTokens: 3}) {
		t.Fatalf("ParseArgs = %+v, %v", c.ThreadUsage, err)
	}
}

func TestParseArgsRefusesBadCodexSettings(t *testing.T) {
	for _, args := range [][]string{
		{"--agent=a", "--sandbox=full"},
		{"--agent=a", "--approval-policy=always"},
		{"--agent=a", "--codex-config=novalue"},
		{"--agent=a", "--add-dir="},
	} {
		if _, err := ParseArgs(args); err == nil || !strings.HasPrefix(err.Error(), "shim: codex: ") {
			t.Errorf("ParseArgs(%q) = %v, want a codex settings error", args, err)
		}
	}
}

// Nothing of Env or Instructions reaches the shim's command line, which any
// local user can read.
func TestConfigArgsCarryNoSecrets(t *testing.T) {
	c := Config{Agent: "a", Env: []string{"OPENAI_API_KEY=sk-SECRET-VALUE"}, Instructions: "ROLE-PROMPT-TEXT"}
	args := strings.Join(c.Args(), " ")
	for _, secret := range []string{"OPENAI_API_KEY", "sk-SECRET-VALUE", "ROLE-PROMPT-TEXT", "--env", "instructions"} {
		if strings.Contains(args, secret) {
			t.Errorf("Args() holds %q: %s", secret, args)
		}
	}
}

func TestConfigValidateEnvAndInstructions(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want []string
	}{
		{Config{Agent: "a", Env: []string{"NOVALUE"}}, []string{`"NOVALUE" is not KEY=VALUE`}},
		{Config{Agent: "a", Env: []string{"=x"}}, []string{`"=x" is not KEY=VALUE`}},
		{Config{Agent: "a", Env: []string{"BIG=" + strings.Repeat("x", codex.MaxArgLen)}}, []string{"environment variable BIG is 131076 bytes", "131072", "MAX_ARG_STRLEN"}},
		{Config{Agent: "a", Instructions: strings.Repeat("x", codex.MaxArgLen)}, []string{"developer_instructions is 131097 bytes", "131072", "MAX_ARG_STRLEN"}},
	} {
		err := tc.c.WithDefaults().Validate()
		for _, want := range tc.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, want)
			}
		}
	}
}

// FuzzThreadUsageFlag: --thread-usage never panics, and what it accepts
// renders back to the same usage.
func FuzzThreadUsageFlag(f *testing.F) {
	for _, s := range []string{"", "input=1", "input=19124,cached_input=0,cache_write_input=0,output=7,reasoning_output=0", "input=-1", "x=1,", "input=9223372036854775808", ",,output=3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var u usageValue
		if u.Set(s) != nil {
			return
		}
		var back usageValue
		if err := back.Set(u.String()); err != nil || back != u {
			t.Fatalf("%q → %q → %+v, %v", s, u.String(), back, err)
		}
	})
}

func TestParseArgsRefusesUnknownRuntime(t *testing.T) {
	if _, err := ParseArgs([]string{"--agent=a", "--runtime=warp"}); err == nil || !strings.Contains(err.Error(), "warp") {
		t.Fatalf("ParseArgs with an unknown runtime: %v", err)
	}
	for _, rt := range []string{"", RuntimeExec} {
		if err := (Config{Agent: "a", Runtime: rt}).WithDefaults().Validate(); err != nil {
			t.Errorf("runtime %q refused: %v", rt, err)
		}
	}
}

func TestParseArgsKeepsTheAppServerRuntime(t *testing.T) {
	c, err := ParseArgs(Config{Agent: "a", Runtime: RuntimeAppServer}.Args())
	if err != nil || c.Runtime != RuntimeAppServer {
		t.Fatalf("ParseArgs: runtime %q, error %v", c.Runtime, err)
	}
}

// --runtime-idle defaults to DefaultRuntimeIdle when absent, keeps 0
// (never), and refuses a negative duration.
func TestParseArgsRuntimeIdle(t *testing.T) {
	if c, err := ParseArgs([]string{"--agent=a"}); err != nil || c.RuntimeIdle != DefaultRuntimeIdle {
		t.Fatalf("absent: %s, %v", c.RuntimeIdle, err)
	}
	if c, err := ParseArgs([]string{"--agent=a", "--runtime-idle=0"}); err != nil || c.RuntimeIdle != 0 {
		t.Fatalf("0: %s, %v", c.RuntimeIdle, err)
	}
	if _, err := ParseArgs([]string{"--agent=a", "--runtime-idle=-1s"}); err == nil || !strings.Contains(err.Error(), "--runtime-idle") {
		t.Fatalf("negative: %v", err)
	}
}

func TestConfigOverrides(t *testing.T) {
	cases := []struct {
		args, want []string
	}{
		{nil, nil},
		{[]string{"--oss", "-m", "x"}, nil},
		{[]string{"-c", "a=1", "--config", "b=2", "-c=d=4", "--config=e=5"}, []string{"a=1", "b=2", "d=4", "e=5"}},
		{[]string{"--oss", "-c"}, nil}, // a trailing -c has no value
	}
	for _, c := range cases {
		if got := configOverrides(c.args); !reflect.DeepEqual(got, c.want) {
			t.Errorf("configOverrides(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// A permission profile with paths under "~/" (a shim on another host's,
// which completes it there) is read by ParseArgsThere and refused by
// ParseArgs, as by Validate: Codex would get a relative path.
func TestParseArgsThereKeepsTheHomeForTheHost(t *testing.T) {
	c := Config{Agent: "eng", Exec: codex.ExecOptions{Permissions: &codex.Permissions{Write: []string{"~/src/p"}, Deny: []string{"~/.local/state/batty/projects/p-1"}}},
		AllowSockets: []string{codex.SocketSSHAgent}}
	got, err := ParseArgsThere(c.Args())
	if err != nil || got.Exec.Permissions == nil || got.Exec.Permissions.Write[0] != "~/src/p" || !reflect.DeepEqual(got.AllowSockets, c.AllowSockets) {
		t.Fatalf("ParseArgsThere = %+v, %v", got, err)
	}
	if _, err := ParseArgs(c.Args()); err == nil {
		t.Fatal("ParseArgs took a profile with paths under ~/")
	}
	if err := got.Validate(); err == nil {
		t.Fatal("Validate took a profile with paths under ~/")
	}
	for _, bad := range []string{"relative", "~bob/x", "~/a/../b"} {
		c.Exec.Permissions.Write = []string{bad}
		if _, err := ParseArgsThere(c.Args()); err == nil {
			t.Errorf("ParseArgsThere took the path %q", bad)
		}
	}
}
