package orchestrator

import (
	"path/filepath"
	"testing"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
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
			if got := effectiveCodexHome(c.setting, c.codexEnv, c.env, c.cwd); got != c.want {
				t.Fatalf("effectiveCodexHome = %q, want %q", got, c.want)
			}
		})
	}
	if got := effectiveCodexHome("", nil, nil, "/w"); !filepath.IsAbs(got) || filepath.Base(got) != ".codex" {
		t.Fatalf("fallback = %q", got)
	}
	for scope, want := range map[string]string{"account": "/h", "agent": "agent:eng-1", "team": "team"} {
		if got := accountKey(scope, "eng-1", "/h"); got != want {
			t.Errorf("accountKey(%s) = %q, want %q", scope, got, want)
		}
	}
}

// The header note of a message put back after a usage limit or a failed
// login says the earlier copy was not answered; other requeues add none
// (the shim's header then says the delivery was cut off).
func TestLimitRetryNote(t *testing.T) {
	cases := []struct {
		retry string
		want  string
	}{
		{retryQuota, "retried after a usage limit, attempt 2; your earlier copy of this message was not answered"},
		{retryAuth, "retried after a login failure, attempt 2; your earlier copy of this message was not answered"},
		{"", ""},
		{"other", ""},
	}
	for _, c := range cases {
		if got := limitRetryNote(inbox.Message{Attempt: 2, Retry: c.retry}); got != c.want {
			t.Errorf("limitRetryNote(%q) = %q, want %q", c.retry, got, c.want)
		}
	}
	if retryOf(protocol.FailQuota) != retryQuota || retryOf(protocol.FailAuth) != retryAuth || retryOf(protocol.FailContextWindow) != "" {
		t.Error("retryOf maps the wrong failures")
	}
}
