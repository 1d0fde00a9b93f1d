// Package teamstatus builds the parts of control.Status from the state of
// the team's pieces — accounts, schedules, workspaces, landings — for the
// daemon's status and for the status of a stopped team alike. Its
// functions are pure.
package teamstatus

import (
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/schedule"
	"github.com/battyhq/batty/team"
)

// Accounts returns the accounts of status; backlog gives an agent's
// backlog.
func Accounts(views []dispatch.AccountView, backlog func(agent string) int) []control.AccountStatus {
	out := make([]control.AccountStatus, 0, len(views))
	for _, v := range views {
		as := control.AccountStatus{Account: v.Key, Name: v.Name, CodexHome: v.Home, Agents: v.Agents}
		if u := v.Usage; u != nil {
			rl := &control.RateLimitsStatus{SeenAt: u.SeenAt, Windows: []control.RateLimitWindowStatus{}}
			for _, w := range u.Windows {
				ws := control.RateLimitWindowStatus{Name: w.Name, UsedPct: w.UsedPct, WindowMinutes: w.WindowMinutes}
				if !w.ResetsAt.IsZero() {
					at := w.ResetsAt
					ws.ResetsAt = &at
				}
				rl.Windows = append(rl.Windows, ws)
			}
			as.RateLimits = rl
		}
		if p := v.Pause; p != nil {
			as.Paused, as.Reason, as.Probing, as.FailedProbes = true, p.Reason, v.Probing, p.Probes
			since := p.Since
			as.Since = &since
			if !v.Probing {
				at := p.ProbeAt
				as.ResumeAt = &at
			}
			for _, n := range v.Agents {
				as.Held += backlog(n)
			}
		}
		out = append(out, as)
	}
	return out
}

// Place sets each agent's Account from the accounts of st: the account's
// name, else its CODEX_HOME; and its LimitPct, the highest used percent of
// that account's last rate-limit windows (left nil without any).
func Place(st *control.Status) {
	on := map[string]string{}
	limit := map[string]float64{}
	for _, acc := range st.Accounts {
		name := acc.Name
		if name == "" {
			name = acc.CodexHome
		}
		for _, n := range acc.Agents {
			on[n] = name
			if acc.RateLimits != nil && len(acc.RateLimits.Windows) > 0 {
				for _, w := range acc.RateLimits.Windows {
					limit[n] = max(limit[n], w.UsedPct)
				}
			}
		}
	}
	for i := range st.Agents {
		a := &st.Agents[i]
		a.Account = on[a.Name]
		if pct, ok := limit[a.Name]; ok {
			a.LimitPct = &pct
		}
	}
}

// Schedules joins the team file's schedules with their states.
func Schedules(cfg *team.Config, states []schedule.State) []control.ScheduleStatus {
	by := map[string]schedule.State{}
	for _, st := range states {
		by[st.Name] = st
	}
	out := []control.ScheduleStatus{}
	for _, s := range cfg.Schedules {
		st, ok := by[s.Name]
		if !ok {
			st = schedule.State{State: schedule.Waiting}
		}
		out = append(out, control.ScheduleStatus{Name: s.Name, To: s.To, Every: s.Every.String(), State: st.State,
			RunsCompleted: st.RunsCompleted, RunsFailed: st.RunsFailed, Running: st.RunID, NextDue: st.NextDue,
			LastStarted: st.LastStarted, LastFinished: st.LastFinished, LastError: st.LastError})
	}
	return out
}
