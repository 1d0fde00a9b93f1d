package orchestrator

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
)

// The plan of the next probe: a printed minute is read as its end (by
// codex.ResetBy) plus jitter; a reset time already past is the smallest
// back-off, never "at once"; a probe that hits the limit again backs off
// doubling from one minute, capped; no reset time means a cool-down,
// doubling, capped. Times derive from an injected now.
func TestNextProbe(t *testing.T) {
	p := quotaPolicy{BackoffMin: time.Minute, BackoffMax: 30 * time.Minute, Cooldown: 15 * time.Minute, CooldownMax: 2 * time.Hour, Jitter: 15 * time.Second}
	now := time.Now().Truncate(time.Second)
	s := func(d time.Duration) time.Time { return now.Add(d) }
	cases := []struct {
		name    string
		resetBy time.Time
		failed  int
		jitter  time.Duration
		want    time.Time
	}{
		{"reset ahead: its time plus jitter", s(35 * time.Second), 0, 7 * time.Second, s(42 * time.Second)},
		{"reset ahead, no jitter", s(2 * time.Hour), 0, 0, s(2 * time.Hour)},
		{"reset just now: smallest back-off, not at once", s(0), 0, 0, s(time.Minute)},
		{"reset already past: smallest back-off", s(-40 * time.Second), 0, 3 * time.Second, s(time.Minute + 3*time.Second)},
		{"probe hit again, reset past: 1m", s(-time.Minute), 1, 0, s(time.Minute)},
		{"second failed probe: 2m", s(-time.Minute), 2, 0, s(2 * time.Minute)},
		{"third failed probe: 4m", s(-time.Minute), 3, 0, s(4 * time.Minute)},
		{"sixth failed probe: capped at 30m", s(-time.Minute), 6, 0, s(30 * time.Minute)},
		{"many failed probes: capped, no overflow", s(-time.Minute), 500, 0, s(30 * time.Minute)},
		{"probe hit again with a later reset: the reset wins", s(10 * time.Minute), 1, 0, s(10 * time.Minute)},
		{"probe hit again with a near reset: the back-off wins", s(10 * time.Second), 2, 0, s(2 * time.Minute)},
		{"no reset time: cool-down", time.Time{}, 0, 0, s(15 * time.Minute)},
		{"no reset time, one failed probe: 30m", time.Time{}, 1, 2 * time.Second, s(30*time.Minute + 2*time.Second)},
		{"no reset time, capped", time.Time{}, 5, 0, s(2 * time.Hour)},
		{"no reset time, no overflow", time.Time{}, 1000, 0, s(2 * time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := p.nextProbe(now, c.resetBy, c.failed, c.jitter); !got.Equal(c.want) {
				t.Fatalf("nextProbe = now%+v, want now%+v", got.Sub(now), c.want.Sub(now))
			}
		})
	}
}

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
