package orchestrator

import (
	"slices"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/team"
)

// quotaPolicy says when an account that hit a usage limit is probed again.
// The zero value is not useful; see defaultQuotaPolicy.
type quotaPolicy struct {
	// BackoffMin is the first back-off step after a probe hit the limit
	// again, or after a reset time that had already passed (1m); it
	// doubles per probe up to BackoffMax (30m).
	BackoffMin, BackoffMax time.Duration
	// Cooldown is the wait before the first probe when codex named no
	// reset time (15m); it doubles per probe up to CooldownMax (2h).
	Cooldown, CooldownMax time.Duration
	// Jitter is the most added to every planned probe (15s), so agents
	// of several teams on one account do not all come back at once.
	Jitter time.Duration
}

// grow returns base doubled n times, at most limit. It never overflows.
func grow(base time.Duration, n int, limit time.Duration) time.Duration {
	d := base
	for range n {
		if d >= limit/2 {
			return limit
		}
		d *= 2
	}
	return min(d, limit)
}

// nextProbe returns when to send the next probe turn of an account that
// hit a usage limit. It is a pure function.
//
//   - resetBy is the instant by which codex says the limit has reset (the
//     end of the printed minute, see codex.ResetBy); zero when it named
//     none.
//   - failed counts the probes of this pause that hit the limit again (0
//     when the pause begins).
//   - jitter is drawn by the caller in [0, Jitter].
//
// With a reset time, the probe goes at resetBy+jitter — never sooner than
// the back-off after a failed probe (BackoffMin doubling per failed probe,
// capped), and never at once: a reset time already past counts as the
// smallest back-off. Without one, it goes after the cool-down, doubling per
// failed probe, capped.
func (p quotaPolicy) nextProbe(now, resetBy time.Time, failed int, jitter time.Duration) time.Time {
	if resetBy.IsZero() {
		return now.Add(grow(p.Cooldown, failed, p.CooldownMax) + jitter)
	}
	backoff := now.Add(grow(p.BackoffMin, max(failed-1, 0), p.BackoffMax) + jitter)
	at := resetBy.Add(jitter)
	if failed > 0 && at.Before(backoff) {
		at = backoff
	}
	if !at.After(now) {
		at = backoff
	}
	return at
}

// accountKey names the account an agent's usage counts against, by scope:
// the agent's effective CODEX_HOME (account), the agent itself (agent), or
// one key for the whole team (team). It is a pure function.
func accountKey(scope, agent, codexHome string) string {
	switch scope {
	case team.QuotaScopeAgent:
		return "agent:" + agent
	case team.QuotaScopeTeam:
		return "team"
	}
	return codexHome
}

// effectiveCodexHome returns the CODEX_HOME an agent's codex runs with, as
// a cleaned absolute path, following the order in which the shim builds
// codex's environment: the team's codex_home wins, then CODEX_HOME in
// codex.env, then the shims' environment (env); see codex.Home for the
// rest. A relative value is taken from the agent's working directory.
func effectiveCodexHome(setting string, codexEnv map[string]string, env []string, cwd string) string {
	env = slices.Clip(env)
	if h := codexEnv["CODEX_HOME"]; h != "" {
		env = append(env, "CODEX_HOME="+h)
	}
	if setting != "" {
		env = append(env, "CODEX_HOME="+setting)
	}
	return codex.Home(env, cwd)
}
