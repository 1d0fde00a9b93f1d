package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/offline"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
)

func newStatusCmd(f *Factory) *cobra.Command {
	var teamFile string
	var asJSON, watch bool
	cmd := &cobra.Command{
		Use:   "status [--json | --watch]",
		Short: "Show the team: daemon, dispatch, and every agent's state, thread, backlog and usage",
		Long: `status asks the running daemon; with no daemon it reads the state files.
BACKLOG is an agent's messages not done yet: those waiting in its inbox
plus the one in flight (what backlog_limit bounds). The TOTAL row sums
the team.

--watch (-w) is a live view on the terminal: one line per agent (state,
the message in flight and its age, backlog, turns, tokens, context), the
team's totals and a line per account paused by a usage limit, redrawn on
every event of the team (and each second for the ages), more columns on a
wider terminal; Ctrl-C quits. When not on a terminal it prints one status
and exits.

--json prints the documented shape: team, daemon {pid, uptime_s}, dispatch
{paused, reason, resume_at}, agents [{name, role, state, thread_id, backlog,
in_flight, in_flight_age_s, turns_completed, input_tokens, output_tokens,
context_pct, last_error, shim_pid, restarts, parked, network, workspace,
account, pending, budget, slot, waiting, app_server}], queues
{role: waiting}, accounts [{account, name, codex_home, agents, paused, reason,
since, resume_at, probing, failed_probes, held, rate_limits}] (usage-limit
pauses per account; rate_limits is null, or {windows [{name, used_pct,
window_minutes, resets_at}], seen_at}: the last snapshot codex reported),
schedules [{name, to, every, state, runs_completed, runs_failed,
running, next_due, last_started, last_finished, last_error}] (the team
file's scheduled prompts; unknown times are left out), landings [{id, agent,
state, requested_at, by, commit, detail, review, tip, onto, approved}] (the
merge queue of batty merge; state review: verified, waiting for batty
approve or reject; state waiting_turn: waiting for the agent's turn to end
and its work to be committed).
An agent's workspace is null, or {path, branch, base, head, exists, ahead,
behind, dirty} for a role with workspace: worktree. An agent whose Codex cannot run is "parked": its "parked"
{kind, detail, fix} says why and how to fix it (null for the others), and
its messages wait until it runs. network is null, or {state, account, since, message} while the
agent's account cannot reach the API: "waiting" (its turn waits for the
network; the agent's state is waiting_for_network) or "held" (it starts no
new turn until the API answers). pending is null, or the requests the daemon
acknowledged for the agent while it is in a git or ssh step (a turn's
commit, a merge of the base, a step on its host), applied in order once
the step ends: "reset", "resume", "cancel <id>". budget is null, or
{budget, used_tokens, budget_tokens, until} while a reached token budget
(budgets in team.yaml) holds the agent: an idle one shows the state
budget_held and takes no new turn until the window rolls over at until,
or until batty resume lets it go on.
slot is left out when the
team has no limits; under them it is "held" while the agent's turn runs and
"waiting" while its next turn waits for a slot (limits.concurrent_turns, a
host's concurrent_turns, limits.min_free_memory): an idle agent is then
shown as waiting_for_slot. waiting is null, or {reason, detail} for an agent
with no turn in flight and a backlog: why it starts no turn (reason a stable
code: dispatch_paused, budget_held, quota_paused, network_held, parked,
retry_backoff, slot, …; detail the same in words); the table shows the code
after the state, as in idle (dispatch_paused). app_server is null, or {pid,
key, codex_home, socket, starts} for an agent on a shared app-server
(codex.app_server: per-account): the process its turns run on (pid 0 while
it is started again) and its broker's socket; the table adds [app <pid>]
to its state and lists each shared process below.`,
		Example: `  batty status
  batty status -w
  batty status --json | jq '.agents[] | {name, state}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, cfg, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			if asJSON && watch {
				return errors.New("--json and --watch do not go together: --json prints one status for a script")
			}
			client := f.Daemon(p)
			fetch := func() (control.Status, error) {
				resp, _, err := client.callOr(control.Request{Op: control.OpStatus}, 10*time.Second, func() (control.Response, error) {
					st, err := offline.Status(cfg, p.Layout)
					return control.Response{Status: &st}, err
				})
				if err != nil {
					return control.Status{}, err
				}
				if resp.Status == nil {
					return control.Status{}, errors.New("the daemon's answer to status has no status")
				}
				return *resp.Status, nil
			}
			if out := fileOf(f.IOStreams.Out); watch && out != nil && f.IOStreams.IsStdoutTTY() {
				// In raw mode for keys when it is a terminal.
				in := fileOf(f.IOStreams.In)
				if !f.IOStreams.IsStdinTTY() {
					in = nil
				}
				return watchStatus(cmd.Context(), in, out, p.Layout.EventsLog(), fetch)
			}
			st, err := fetch()
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			shown, stateRel := withProjectPaths(st, p.Layout.Root(), p.Layout.Dir)
			printStatus(cmd.OutOrStdout(), shown)
			if stateRel {
				fmt.Fprintf(cmd.OutOrStdout(), "\n(worktrees/ is in the state directory %s)\n", p.Layout.Dir)
			}
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "a live view, redrawn on every event (one status when not on a terminal)")
	return cmd
}

// printStatus writes the status table and what follows it. Every text that
// comes from outside — an agent's or a schedule's last error, a pause
// reason, codex's notices — is one line made safe by safetext.Line: an
// escape sequence or a bidirectional control in a model's error cannot
// drive the terminal.
func printStatus(w io.Writer, st control.Status) {
	fmt.Fprintln(w, statusHeadline(st))
	printTeamChanged(w, st)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tROLE\tSTATE\tTHREAD\tBACKLOG\tIN FLIGHT\tTURNS\tTOKENS IN/OUT\tCTX\tLAST ERROR")
	for _, a := range st.Agents {
		r := statusview.NewAgent(a)
		inflight := "-"
		if r.Busy {
			inflight = fmt.Sprintf("%s (%s)", r.InFlight, r.InFlightFor)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%d\t%s/%s\t%s\t%s\n", a.Name, a.Role, r.StateCell, r.Thread,
			r.Backlog, inflight, r.Turns, r.Input, r.Output, r.Context, or(safetext.Line(a.LastError, 60), "-"))
	}
	t := statusview.TeamTotals(st.Agents)
	fmt.Fprintf(tw, "TOTAL\t\t%s\t\t%d\t%s\t%d\t%s/%s\t\t\n", t.Summary(), t.Backlog, t.FlightCell(), t.Turns, t.Input, t.Output)
	tw.Flush()
	printAppServers(w, st.Agents)
	if st.Daemon.PID != 0 && hasParked(st) {
		fmt.Fprintln(w)
		printParked(w, "", st)
	}
	printNetwork(w, st.Agents)
	printBudgetHolds(w, st.Agents)
	printPending(w, st.Agents)
	for role, n := range st.Queues {
		if n > 0 {
			fmt.Fprintf(w, "\n%d message(s) wait in role queue %s for a free instance\n", n, role)
		}
	}
	printAccounts(w, st.Accounts)
	printSchedules(w, st.Schedules)
	printWorkspaces(w, st.Agents, st.Landings)
}

// printAppServers lists the shared app-servers, one line each with its
// agents ("shared app-server 41250 (key 3f2a9c1e0b7d, CODEX_HOME
// /home/u/.codex, started 1 time): eng-1, eng-2"); nothing when no agent
// runs on one.
func printAppServers(w io.Writer, agents []control.AgentStatus) {
	var keys []string
	byKey := map[string]*control.AppServerStatus{}
	names := map[string][]string{}
	for _, a := range agents {
		s := a.AppServer
		if s == nil {
			continue
		}
		if _, ok := byKey[s.Key]; !ok {
			keys = append(keys, s.Key)
			byKey[s.Key] = s
		}
		names[s.Key] = append(names[s.Key], a.Name)
	}
	if len(keys) == 0 {
		return
	}
	fmt.Fprintln(w)
	for _, k := range keys {
		s := byKey[k]
		pid := "starting"
		if s.PID > 0 {
			pid = fmt.Sprint(s.PID)
		}
		fmt.Fprintf(w, "shared app-server %s (key %s, CODEX_HOME %s, started %d time(s)): %s\n", pid, safetext.Line(k, 20),
			safetext.Line(s.CodexHome, 0), s.Starts, strings.Join(names[k], ", "))
	}
}

// printBudgetHolds says, one line per agent a reached token budget holds,
// which budget, how much of it was used and until when ("held by budget
// team/day: 1.2M of 1.0M tokens used; no new turn until 2030-03-07
// 00:00 (batty resume eng lets it go on)"); nothing when none is held.
func printBudgetHolds(w io.Writer, agents []control.AgentStatus) {
	first := true
	for _, a := range agents {
		b := a.Budget
		if b == nil {
			continue
		}
		if first {
			fmt.Fprintln(w)
			first = false
		}
		fmt.Fprintf(w, "%s: held by budget %s: %s of %s tokens used; no new turn until %s (`batty resume %s` lets it go on)\n",
			a.Name, safetext.Line(b.Budget, 80), statusview.Tokens(b.Used), statusview.Tokens(b.Tokens), b.Until.Local().Format("2006-01-02 15:04 MST"), a.Name)
	}
}

// printPending says, one line per agent, which requests wait for its git
// or ssh step ("engineer-1: pending: reset, cancel 1f2e3d4c"); nothing when
// none does.
func printPending(w io.Writer, agents []control.AgentStatus) {
	first := true
	for _, a := range agents {
		if len(a.Pending) == 0 {
			continue
		}
		if first {
			fmt.Fprintln(w)
			first = false
		}
		words := make([]string, len(a.Pending))
		for i, p := range a.Pending {
			if id, ok := strings.CutPrefix(p, control.PendingCancel+" "); ok {
				p = control.PendingCancel + " " + inbox.ShortID(id)
			}
			words[i] = safetext.Line(p, 40)
		}
		fmt.Fprintf(w, "%s: pending: %s (applied once its git or ssh step ends)\n", a.Name, strings.Join(words, ", "))
	}
}

// printWorkspaces lists the worktree agents' branches against the base
// (commits ahead and behind, uncommitted paths, where the worktree is) and
// the merge queue's unfinished and latest landings, each table within 80
// columns for the usual names: the branch names its agent, a landing's
// request is its short id and its detail goes on a line of its own.
func printWorkspaces(w io.Writer, agents []control.AgentStatus, landings []control.LandingStatus) {
	var rows []control.AgentStatus
	for _, a := range agents {
		if a.Workspace != nil {
			rows = append(rows, a)
		}
	}
	if len(rows) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "BRANCH\tBASE\tAHEAD\tBEHIND\tDIRTY\tPATH")
		for _, a := range rows {
			ws := a.Workspace
			branch, base := safetext.Line(ws.Branch, 0), safetext.Line(ws.Base, 0)
			if !ws.Exists {
				fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t(not made yet)\n", branch, base)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", branch, base, ws.Ahead, ws.Behind, ws.Dirty, safetext.Line(ws.Path, 0))
		}
		tw.Flush()
	}
	if len(landings) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LANDING\tAGENT\tSTATE\tBY\tREQUESTED\tCOMMIT")
	for _, l := range landings {
		r := statusview.NewLanding(l)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Short, r.Agent, r.State, or(r.By, "-"), r.RequestedAt.Local().Format("15:04:05"), or(r.Commit, "-"))
		if d := safetext.Line(r.Detail, 200); d != "" {
			// No tab: a trailing cell, which widens no column.
			fmt.Fprintf(tw, "  %s\n", d)
		}
	}
	tw.Flush()
}

// withProjectPaths returns st with every worktree's path made relative,
// for the table: to the project directory root when it is inside it (a
// worktree of the user's), else to the state directory state
// ("worktrees/engineer-1", where batty keeps the worktree agents'; stateRel
// then says so); other paths are kept. st is not changed. It is a pure
// function.
func withProjectPaths(st control.Status, root, state string) (_ control.Status, stateRel bool) {
	inside := func(dir, path string) (string, bool) {
		rel, err := filepath.Rel(dir, path)
		return rel, dir != "" && err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	agents := make([]control.AgentStatus, len(st.Agents))
	for i, a := range st.Agents {
		if a.Workspace != nil && filepath.IsAbs(a.Workspace.Path) {
			ws := *a.Workspace
			if rel, ok := inside(root, ws.Path); ok {
				ws.Path = rel
			} else if rel, ok := inside(state, ws.Path); ok {
				ws.Path, stateRel = rel, true
			}
			a.Workspace = &ws
		}
		agents[i] = a
	}
	st.Agents = agents
	return st, stateRel
}

// printSchedules lists the team file's schedules: state, runs, when the
// next is due, the last run and the last error.
func printSchedules(w io.Writer, schedules []control.ScheduleStatus) {
	if len(schedules) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULE	TO	EVERY	STATE	RUNS	FAILED	NEXT DUE	LAST STARTED	LAST FINISHED	LAST ERROR")
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Local().Format("2006-01-02 15:04:05")
	}
	for _, s := range schedules {
		state := s.State
		if s.Running != "" {
			state += " (" + safetext.Line(s.Running, 40) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", safetext.Line(s.Name, 0), safetext.Line(s.To, 0), safetext.Line(s.Every, 0),
			state, s.RunsCompleted, s.RunsFailed, when(s.NextDue), when(s.LastStarted), when(s.LastFinished), or(safetext.Line(s.LastError, 60), "-"))
	}
	tw.Flush()
}

// printAccounts lists the accounts: a table of each one's agents, state and
// rate-limit use when the team names accounts or codex reported a
// snapshot, then the accounts paused by a usage limit: who, why, until
// when, and how many messages wait.
func printAccounts(w io.Writer, accounts []control.AccountStatus) {
	if slices.ContainsFunc(accounts, func(a control.AccountStatus) bool { return a.Name != "" || a.RateLimits != nil }) {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ACCOUNT\tAGENTS\tSTATE\tRATE LIMITS USED")
		for _, a := range accounts {
			state := "open"
			if a.Paused {
				state = "usage limit, probing"
				if a.ResumeAt != nil {
					state = "usage limit until " + a.ResumeAt.Local().Format("01-02 15:04")
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", safetext.Line(or(a.Name, a.Account), 60), or(strings.Join(a.Agents, ", "), "-"), state, rateLimitsLine(a.RateLimits))
		}
		tw.Flush()
	}
	for _, a := range accounts {
		if !a.Paused {
			continue
		}
		until := "probing now (one turn; the others wait for it)"
		if a.ResumeAt != nil {
			until = "until " + a.ResumeAt.Local().Format("2006-01-02 15:04:05 MST") + ", then one probe turn"
		}
		if a.FailedProbes > 0 {
			until += fmt.Sprintf(" (%d probe(s) hit the limit again)", a.FailedProbes)
		}
		fmt.Fprintf(w, "\nQUOTA PAUSED account %s (%s): %s; %d message(s) held\n  %s\n",
			safetext.Line(or(a.Name, a.Account), 0), accountAgents(a), until, a.Held, safetext.Line(a.Reason, 200))
	}
}

// rateLimitsLine says how much of each rate-limit window is used and when
// it resets: "5h 42% (resets 11-27 20:15) · 7d 10% (resets 12-02 09:00)",
// or "-" before codex reported any. It is a pure function.
func rateLimitsLine(rl *control.RateLimitsStatus) string {
	if rl == nil || len(rl.Windows) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(rl.Windows))
	for _, win := range rl.Windows {
		label := safetext.Line(win.Name, 12)
		switch m := win.WindowMinutes; {
		case m > 0 && m%(24*60) == 0:
			label = fmt.Sprintf("%dd", m/(24*60))
		case m > 0 && m%60 == 0:
			label = fmt.Sprintf("%dh", m/60)
		case m > 0:
			label = fmt.Sprintf("%dm", m)
		}
		p := fmt.Sprintf("%s %.0f%%", label, win.UsedPct)
		if win.ResetsAt != nil {
			p += " (resets " + win.ResetsAt.Local().Format("01-02 15:04") + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " · ")
}

// statusHeadline is the first line of `batty status`: the team, the daemon
// and the dispatch gate. A stopped team dispatches nothing, so it says the
// daemon is not running (and shows only a pause that the next start keeps).
// It is a pure function.
func statusHeadline(st control.Status) string {
	pause := ""
	if st.Dispatch.Paused {
		pause = "PAUSED: " + safetext.Line(st.Dispatch.Reason, 200)
		if st.Dispatch.ResumeAt != nil {
			pause += fmt.Sprintf(" (resumes %s)", st.Dispatch.ResumeAt.Local().Format("2006-01-02 15:04 MST"))
		}
	}
	if st.Daemon.PID == 0 {
		s := fmt.Sprintf("team %s · daemon not running (`batty start` starts it)", st.Team)
		if pause != "" {
			s += " · dispatch " + pause + ", kept at the next start"
		}
		return s
	}
	dispatch := "running"
	if pause != "" {
		dispatch = pause
	}
	s := fmt.Sprintf("team %s · daemon pid %d, up %s · dispatch %s", st.Team, st.Daemon.PID,
		statusview.Duration(time.Duration(st.Daemon.UptimeS)*time.Second, time.Second), dispatch)
	for _, a := range st.Accounts {
		if a.Paused {
			s += " · " + accountPauseLine(a)
		}
	}
	return s
}

// accountPauseLine says in one line that account a is paused by a usage
// limit and until when: "usage limit: account /home/u/.codex paused until
// 2026-11-21 14:32 UTC (eng-1, eng-2)", or "… paused, probing now (…)". It is a pure
// function.
func accountPauseLine(a control.AccountStatus) string {
	until := ", probing now"
	if a.ResumeAt != nil {
		until = " until " + a.ResumeAt.Local().Format("2006-01-02 15:04 MST")
	}
	return fmt.Sprintf("usage limit: account %s paused%s (%s)", safetext.Line(or(a.Name, a.Account), 0), until, accountAgents(a))
}

// accountAgents lists the agents waiting on a paused account, or says
// that none does (they went on on other accounts). It is a pure function.
func accountAgents(a control.AccountStatus) string {
	if len(a.Agents) == 0 {
		return "no agent waits on it"
	}
	return safetext.Line(strings.Join(a.Agents, ", "), 0)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// printNetwork says, per account, which turn waits for the network since
// when, in codex's words, and which agents it holds.
func printNetwork(w io.Writer, agents []control.AgentStatus) {
	held := map[string][]string{}
	for _, a := range agents {
		if a.Network == nil {
			continue
		}
		n := a.Network
		if n.State == "waiting" {
			fmt.Fprintf(w, "\n%s: waiting for network since %s (account %s): %s", a.Name,
				n.Since.Local().Format("15:04:05"), safetext.Line(n.Account, 0), safetext.Line(n.Message, 120))
		} else {
			held[n.Account] = append(held[n.Account], a.Name)
		}
	}
	for account, names := range held {
		fmt.Fprintf(w, "\nheld until the API answers (account %s): %s", safetext.Line(account, 0), strings.Join(names, ", "))
	}
	if len(held) > 0 || hasWaiting(agents) {
		fmt.Fprintln(w)
	}
}

func hasWaiting(agents []control.AgentStatus) bool {
	for _, a := range agents {
		if a.Network != nil && a.Network.State == "waiting" {
			return true
		}
	}
	return false
}
