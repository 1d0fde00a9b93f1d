package dispatch

import (
	"path/filepath"
	"testing"

	"github.com/battyhq/batty/team"
)

// An account is the effective CODEX_HOME, resolved the way the shim
// builds codex's environment, as a cleaned absolute path.
func TestEffectiveCodexHome(t *testing.T) {
	cases := []struct {
		name     string
		setting  string
		codexEnv map[string]string
		env      []string
		cwd      string
		want     string
	}{
		{"codex_home wins", "/a/home", map[string]string{"CODEX_HOME": "/b"}, []string{"CODEX_HOME=/c"}, "/w", "/a/home"},
		{"codex.env next", "", map[string]string{"CODEX_HOME": "/b/./x/"}, []string{"CODEX_HOME=/c"}, "/w", "/b/x"},
		{"daemon env next, last entry wins", "", nil, []string{"CODEX_HOME=/c", "CODEX_HOME=/d//e"}, "/w", "/d/e"},
		{"default under HOME", "", nil, []string{"HOME=/home/u"}, "/w", "/home/u/.codex"},
		{"relative from the agent's cwd", "", map[string]string{"CODEX_HOME": "acct/../h"}, nil, "/w", "/w/h"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := EffectiveCodexHome(c.setting, c.codexEnv, c.env, c.cwd); got != c.want {
				t.Fatalf("EffectiveCodexHome = %q, want %q", got, c.want)
			}
		})
	}
	if got := EffectiveCodexHome("", nil, nil, "/w"); !filepath.IsAbs(got) || filepath.Base(got) != ".codex" {
		t.Fatalf("fallback = %q", got)
	}
	for scope, want := range map[string]string{"account": "/h", "agent": "agent:eng-1", "team": "team"} {
		if got := AccountKey(scope, "eng-1", "/h"); got != want {
			t.Errorf("AccountKey(%s) = %q, want %q", scope, got, want)
		}
	}
}

func TestAgentHome(t *testing.T) {
	here := team.Agent{Name: "a", Cwd: "/p", Codex: team.CodexSettings{CodexHome: "/h/.codex"}}
	there := here
	there.Host = "build1"
	if got := AgentHome(here, nil); got != "/h/.codex" {
		t.Fatalf("here: %q", got)
	}
	if got := AgentHome(there, nil); got != "build1:/h/.codex" {
		t.Fatalf("on build1: %q", got)
	}
}
