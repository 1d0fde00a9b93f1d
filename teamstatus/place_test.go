package teamstatus

import (
	"testing"

	"github.com/battyhq/batty/control"
)

// Place gives each agent its account's name and the highest used
// percent of that account's last rate-limit windows; an agent whose
// account reported none has no LimitPct.
func TestPlaceLimitPct(t *testing.T) {
	st := control.Status{
		Agents: []control.AgentStatus{{Name: "a"}, {Name: "b"}, {Name: "c"}},
		Accounts: []control.AccountStatus{
			{Name: "work", Agents: []string{"a", "b"}, RateLimits: &control.RateLimitsStatus{Windows: []control.RateLimitWindowStatus{{Name: "primary", UsedPct: 12}, {Name: "secondary", UsedPct: 64.5}}}},
			{CodexHome: "/h/other", Agents: []string{"c"}, RateLimits: &control.RateLimitsStatus{}},
		},
	}
	Place(&st)
	for _, c := range []struct {
		i       int
		account string
		pct     float64
		none    bool
	}{{0, "work", 64.5, false}, {1, "work", 64.5, false}, {2, "/h/other", 0, true}} {
		a := st.Agents[c.i]
		if a.Account != c.account || (a.LimitPct == nil) != c.none || (!c.none && *a.LimitPct != c.pct) {
			t.Errorf("agent %s: account %q, limit %v; want %q, %v (none %v)", a.Name, a.Account, a.LimitPct, c.account, c.pct, c.none)
		}
	}
}
