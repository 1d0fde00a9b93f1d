// Package control is how batty's commands talk to a project's daemon: the
// control socket's protocol (Request, Response, the documented Status of
// `batty status --json`) with its client (Call, Stop) and its listening
// end (Serve, the judge of its peers). What the commands do while no
// daemon runs is package offline's.
package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/unixsock"
	"golang.org/x/sys/unix"
)

// Status is the documented, stable shape of `batty status --json`.
type Status struct {
	Team     string         `json:"team"`
	Daemon   DaemonStatus   `json:"daemon"`
	Dispatch DispatchStatus `json:"dispatch"`
	Agents   []AgentStatus  `json:"agents"`
	// Queues counts messages waiting in the queue of each role with several
	// instances, not yet given to an instance.
	Queues map[string]int `json:"queues"`
	// Accounts are the team's Codex accounts (by its quota scope) and
	// their usage-limit pauses.
	Accounts []AccountStatus `json:"accounts"`
	// Schedules are the team file's schedules and their runs.
	Schedules []ScheduleStatus `json:"schedules"`
	// TeamFileChanged says that the team file, or a prompt file it names,
	// is not what the daemon read when it started: `batty restart` applies
	// it. Always false for a stopped team.
	TeamFileChanged bool `json:"team_file_changed"`
	// Landings are the merge queue's requests (`batty merge`): every
	// unfinished one and the latest finished ones, oldest first; empty
	// when the team has no worktree agents.
	Landings []LandingStatus `json:"landings"`
	// Budgets are the team file's token budgets and their use in their
	// current windows, in the file's order; empty without budgets and for
	// a stopped team.
	Budgets []BudgetStatus `json:"budgets"`
}

// BudgetStatus is one token budget (team.yaml budgets) in its current
// window: its key ("<for>/<per>"), whom it covers, the tokens used and
// the budget, the use in percent, the percent it warns at and the window.
type BudgetStatus struct {
	Budget      string    `json:"budget"`
	For         string    `json:"for"`
	Per         string    `json:"per"`
	Used        int64     `json:"used_tokens"`
	Tokens      int64     `json:"budget_tokens"`
	UsedPct     float64   `json:"used_pct"`
	WarnAt      int       `json:"warn_at"`
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
}

// DaemonStatus describes the daemon process.
type DaemonStatus struct {
	PID     int   `json:"pid"`
	UptimeS int64 `json:"uptime_s"`
}

// DispatchStatus is the team-wide dispatch gate.
type DispatchStatus struct {
	Paused   bool       `json:"paused"`
	Reason   string     `json:"reason"`
	ResumeAt *time.Time `json:"resume_at"`
}

// AgentStatus is one agent's line of status.
type AgentStatus struct {
	Name           string  `json:"name"`
	Role           string  `json:"role"`
	State          string  `json:"state"`
	ThreadID       string  `json:"thread_id"`
	Backlog        int     `json:"backlog"`
	InFlight       *string `json:"in_flight"`
	InFlightAgeS   int64   `json:"in_flight_age_s"`
	TurnsCompleted int     `json:"turns_completed"`
	InputTokens    int64   `json:"input_tokens"`
	OutputTokens   int64   `json:"output_tokens"`
	ContextPct     float64 `json:"context_pct"`
	LastError      string  `json:"last_error"`
	ShimPID        int     `json:"shim_pid"`
	Restarts       int     `json:"restarts"`
	// Parked says why a parked agent's Codex cannot run and how to fix it;
	// null when the agent is not parked.
	Parked *ParkedStatus `json:"parked"`
	// Network is set while the agent's account cannot reach the API (see
	// NetworkStatus); null otherwise.
	Network *NetworkStatus `json:"network"`
	// NoAnswers counts the completed turns that ended without a final
	// answer (their asker got "(no answer …)").
	NoAnswers int `json:"no_answers"`
	// Recording is set while the agent's last outcome cannot be written
	// (a full disk): it takes no new message until it is; null otherwise.
	Recording *RecordingStatus `json:"recording"`
	// Workspace is the agent's git worktree (role `workspace: worktree`);
	// null for an agent working in the project's own checkout.
	Workspace *WorkspaceStatus `json:"workspace"`
	// Account is the account the agent runs on: its name in the team
	// file's accounts, else its CODEX_HOME ("" when the quota scope is not
	// per account).
	Account string `json:"account"`
	// Host is the team file's host the agent runs on, "" for this
	// machine.
	Host string `json:"host"`
	// Pending are the requests the daemon acknowledged for this agent
	// and has not applied yet, in order: they wait for a git or ssh step of
	// the agent (a turn's commit, a merge of the base, a step of its
	// clone on a host) and are applied once it has ended. Each is
	// PendingReset, PendingResume, or PendingCancel and the message's
	// id ("cancel <id>"); null when none waits, and for a stopped team.
	Pending []string `json:"pending"`
	// Budget is set while a reached token budget holds the agent (see
	// BudgetHoldStatus): it takes no new turn until Budget.Until; null
	// otherwise.
	Budget *BudgetHoldStatus `json:"budget"`
	// Slot is the agent's place under the team's cap on turns at once
	// (limits.concurrent_turns, a host's concurrent_turns,
	// limits.min_free_memory): SlotHeld while its turn runs, SlotWaiting
	// while its next turn waits for one (its State is then
	// AgentWaitingForSlot); "" otherwise, and when the team caps nothing.
	Slot string `json:"slot,omitempty"`
	// LimitPct is the highest used percent of the rate-limit windows of
	// the agent's account, as Codex last reported them (runtime
	// app-server); null before a report.
	LimitPct *float64 `json:"limit_pct"`
	// BudgetPct is the highest use, in percent, of the token budgets that
	// cover the agent, in their current windows; null when none does.
	BudgetPct *float64 `json:"budget_pct"`
	// Waiting says why an agent with no turn in flight and messages in
	// its backlog starts none now (see WaitingStatus); null when it has
	// a turn in flight, no backlog, or for a stopped team.
	Waiting *WaitingStatus `json:"waiting"`
	// AppServer is the shared app-server the agent's turns run on
	// (codex.app_server: per-account); null for an agent with a Codex
	// process of its own, and for a stopped team.
	AppServer *AppServerStatus `json:"app_server"`
}

// AppServerStatus is one shared `codex app-server` of the daemon and its
// broker, as an agent on it sees them.
type AppServerStatus struct {
	// PID is the process's pid; 0 while the broker starts it (again).
	PID int `json:"pid"`
	// Key names the process: one per codex binary, account, role's
	// codex.env and -c settings; the agents with the same key share it.
	Key string `json:"key"`
	// CodexHome is the account it runs on.
	CodexHome string `json:"codex_home"`
	// Socket is the broker's unix socket, which the agents' shims use.
	Socket string `json:"socket"`
	// Starts counts the times the broker started the process (1 until
	// it died once).
	Starts int `json:"starts"`
}

// WaitingStatus is why an idle agent with a backlog starts no turn, as its
// last look at its inbox found: Reason is one of the Wait* codes (stable,
// for scripts), Detail says it for a human (it may quote a pause reason or
// codex: untrusted text).
type WaitingStatus struct {
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// The values of WaitingStatus.Reason, by precedence: when several hold an
// agent, the first of these that does is shown.
const (
	WaitRecording      = "recording"        // its last outcome is not written yet (a full disk)
	WaitNoShim         = "no_shim"          // its shim is not running (spawning, restarting, failed)
	WaitShimNotReady   = "shim_not_ready"   // its shim has not said it is ready
	WaitTurnInFlight   = "turn_in_flight"   // its turn runs (never shown: it is not idle)
	WaitStopping       = "stopping"         // it is being stopped
	WaitGitStep        = "git_step"         // a git or ssh step of its workspace runs
	WaitRequests       = "requests_pending" // control requests wait to be applied (see Pending)
	WaitAccountSwitch  = "account_switch"   // its shim moves to another account
	WaitParked         = "parked"           // its Codex cannot run (see Parked)
	WaitCodexCheck     = "codex_check"      // the first check of its Codex has not answered
	WaitWorkspaceSync  = "workspace_sync"   // the base is merged into its worktree
	WaitDispatchPaused = "dispatch_paused"  // the team is paused (batty pause, a login)
	WaitNetworkHeld    = "network_held"     // its account cannot reach the API (see Network)
	WaitQuotaPaused    = "quota_paused"     // its account's usage-limit pause holds it
	WaitBudgetHeld     = "budget_held"      // a reached token budget holds it (see Budget)
	WaitNothingReady   = "nothing_ready"    // its messages are still being written
	WaitRetryBackoff   = "retry_backoff"    // its oldest message waits for its retry back-off
	WaitSlot           = "slot"             // no slot under the team's limits (see Slot)
	WaitQuotaProbe     = "quota_probe"      // its paused account's probe turn is another message
)

// The values of AgentStatus.Slot.
const (
	SlotHeld    = "held"
	SlotWaiting = "waiting"
)

// AgentWaitingForSlot is the state status shows for an agent with no
// turn in flight whose next turn waits for a slot under the team's cap on
// turns at once (or for free memory).
const AgentWaitingForSlot = "waiting_for_slot"

// What AgentStatus.Pending names.
const (
	PendingReset   = "reset"
	PendingResume  = "resume"
	PendingCancel  = "cancel"
	PendingRestore = "restore"
	PendingFork    = "fork"
)

// LandingStatus is one request of the merge queue (`batty merge`): the
// unfinished ones and the latest finished.
type LandingStatus struct {
	ID          string    `json:"id"`
	Agent       string    `json:"agent"`
	State       string    `json:"state"` // queued | landing | waiting | waiting_turn | review | landed | failed | nothing
	RequestedAt time.Time `json:"requested_at"`
	By          string    `json:"by"`     // who asked: "human" or the agent
	Commit      string    `json:"commit"` // the commit base was advanced to, "" until landed
	Detail      string    `json:"detail"` // why it waits or failed
	// Review says the request lands only once the human approves it
	// (workspace.review: human, or batty merge --review).
	Review bool `json:"review"`
	// Tip is the branch's commit the last attempt merged ("" before one):
	// in state review, the commit the approval is of.
	Tip string `json:"tip"`
	// Onto is base's commit the last attempt merged the branch onto ("" before one).
	Onto string `json:"onto"`
	// Approved is the branch's commit the human approved, "" when none.
	Approved string `json:"approved"`
	// Protected are protected paths the last attempt's merge changes (at
	// most landing.MaxProtected, as git names them: the agent's, to be
	// cleaned), which make it wait for review whatever Review says;
	// ProtectedTotal counts them all.
	Protected      []string `json:"protected,omitempty"`
	ProtectedTotal int      `json:"protected_total,omitempty"`
}

// WorkspaceStatus is an agent's git worktree as last seen by the daemon
// (after its preparation and after each of its commits).
type WorkspaceStatus struct {
	Path   string `json:"path"`   // the worktree, <state>/worktrees/<agent>
	Branch string `json:"branch"` // batty/<agent>
	Base   string `json:"base"`   // the team's base branch
	Head   string `json:"head"`   // the branch's commit, "" before the worktree exists
	Exists bool   `json:"exists"` // false until the worktree is made
	Ahead  int    `json:"ahead"`  // commits on the branch not on base
	Behind int    `json:"behind"` // commits on base not on the branch
	Dirty  int    `json:"dirty"`  // paths changed and not committed yet
	// DirtyAt is when head, ahead, behind and dirty were read: by a running
	// team when the worktree is made ready, after a turn's commit and after
	// a merge of the base, never while a turn runs, so a working agent's
	// edits since are not counted yet; by a stopped team's status, as it
	// answers; for an agent on a host, when the host last answered.
	DirtyAt time.Time `json:"dirty_at"`
}

// ParkedStatus is why an agent is parked: its Codex cannot run (see the
// preflight package). Its messages wait until it can.
type ParkedStatus struct {
	Kind   string `json:"kind"`   // codex_missing | codex_broken | codex_home | not_logged_in | login_check | codex_spawn
	Detail string `json:"detail"` // what is wrong
	Fix    string `json:"fix"`    // how to fix it
}

// NetworkStatus says that an agent's account cannot reach the API: its turn
// waits for the network (State "waiting"; the agent's State is then
// AgentWaitingForNetwork), or another turn of the account does and this
// agent starts no new turn until the API answers (State "held").
type NetworkStatus struct {
	State   string    `json:"state"`   // "waiting" | "held"
	Account string    `json:"account"` // the effective CODEX_HOME
	Since   time.Time `json:"since"`   // the wait began (held: the account's hold began)
	Message string    `json:"message"` // codex's latest notice, e.g. "Reconnecting... waiting for network (…)"
}

// AgentWaitingForNetwork is the state status shows for an agent whose turn
// waits for codex to reach the API.
const AgentWaitingForNetwork = "waiting_for_network"

// AgentQuotaPaused is the state status shows for an agent held by its
// account's usage-limit pause: it has no turn in flight and starts none
// until the pause ends (its messages wait).
const AgentQuotaPaused = "quota_paused"

// AgentBudgetHeld is the state status shows for an idle agent held by a
// reached token budget (team.yaml budgets): it starts no turn until the
// budget's window rolls over or `batty resume` (its messages wait).
const AgentBudgetHeld = "budget_held"

// BudgetHoldStatus is the token budget that holds an agent: its key
// ("<for>/<per>"), the tokens used in its window and the budget, and the
// end of the window (when the agent goes on). When several hold it, the
// one whose window ends last.
type BudgetHoldStatus struct {
	Budget string    `json:"budget"`
	Used   int64     `json:"used_tokens"`
	Tokens int64     `json:"budget_tokens"`
	Until  time.Time `json:"until"`
}

// AgentStopped is the state status shows for a stopped agent, and for
// every agent of a stopped team.
const AgentStopped = "stopped"

// AccountStatus is one account of `batty status`: the agents whose usage
// counts against one Codex account (by the team's quota scope) and its
// usage-limit pause.
type AccountStatus struct {
	// Account is the key: the CODEX_HOME path (scope account),
	// "agent:<name>" or "team".
	Account string `json:"account"`
	// Name is the account's name in the team file's accounts ("" when it
	// has none).
	Name      string   `json:"name"`
	CodexHome string   `json:"codex_home"`
	Agents    []string `json:"agents"`
	Paused    bool     `json:"paused"`
	// Reason is codex's message of the limit ("" when open).
	Reason string `json:"reason"`
	// Since is when the pause began; ResumeAt is when the next probe turn
	// may go (null while open, or while a probe is in flight).
	Since    *time.Time `json:"since"`
	ResumeAt *time.Time `json:"resume_at"`
	// Probing is true once ResumeAt has come: one probe turn goes, the
	// others wait for its outcome.
	Probing bool `json:"probing"`
	// FailedProbes counts the probes of this pause that hit the limit
	// again.
	FailedProbes int `json:"failed_probes"`
	// Held counts the messages the pause holds: the backlogs of its agents.
	Held int `json:"held"`
	// RateLimits is the account's last rate-limit snapshot, as codex
	// reported it (runtime app-server); null before one.
	RateLimits *RateLimitsStatus `json:"rate_limits"`
}

// RateLimitsStatus is an account's last rate-limit snapshot: how much of
// each window is used and when it resets.
type RateLimitsStatus struct {
	Windows []RateLimitWindowStatus `json:"windows"`
	SeenAt  time.Time               `json:"seen_at"`
}

// RateLimitWindowStatus is one rate-limit window of an account.
type RateLimitWindowStatus struct {
	Name          string     `json:"name"` // primary | secondary
	UsedPct       float64    `json:"used_pct"`
	WindowMinutes int64      `json:"window_minutes"`
	ResetsAt      *time.Time `json:"resets_at"`
}

// ScheduleStatus is one schedule's line of status. Unknown times are left
// out.
type ScheduleStatus struct {
	Name          string    `json:"name"`
	To            string    `json:"to"`
	Every         string    `json:"every"`
	State         string    `json:"state"` // waiting | running | stopped | failed
	RunsCompleted int       `json:"runs_completed"`
	RunsFailed    int       `json:"runs_failed"`
	Running       string    `json:"running"` // the message id of the run in flight, "" when none runs
	NextDue       time.Time `json:"next_due,omitzero"`
	LastStarted   time.Time `json:"last_started,omitzero"`
	LastFinished  time.Time `json:"last_finished,omitzero"`
	LastError     string    `json:"last_error"`
}

// RecordingStatus says that an agent's last outcome could not be written
// yet (e.g. the disk is full): the agent takes no new message until it is.
type RecordingStatus struct {
	Message string    `json:"message"` // the message whose outcome waits
	Since   time.Time `json:"since"`   // the first failed try
	Tries   int       `json:"tries"`   // failed tries so far
	Error   string    `json:"error"`   // the last failure
}

// Request is one control-socket request. Op is one of the Op* constants.
type Request struct {
	Op       string        `json:"op"`
	Agent    string        `json:"agent,omitempty"`
	Reason   string        `json:"reason,omitempty"`
	Timeout  time.Duration `json:"timeout,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	// IDs are the messages to cancel (OpCancel), full ids.
	IDs []string `json:"ids,omitempty"`
	// Interrupt lets OpCancel end the turn of a message in flight.
	Interrupt bool `json:"interrupt,omitempty"`
	// Landing names the landing request OpApprove and OpReject decide on:
	// an agent (its request waiting for review) or a request's id, its
	// short form or a prefix (landing.FindReview). OpReject's reason is
	// Reason.
	Landing string `json:"landing,omitempty"`
	// Thread is the thread OpRestore makes the agent's current one again,
	// or OpFork forks into a new thread of the agent; From is the agent
	// whose thread it is (OpFork).
	Thread string `json:"thread,omitempty"`
	From   string `json:"from,omitempty"`
}

// Control operations.
const (
	OpPing   = "ping"
	OpStatus = "status"
	OpStop   = "stop"
	OpPause  = "pause"
	OpResume = "resume"
	OpReset  = "reset"
	OpCancel = "cancel"
	// OpTrusted asks for the trusted settings of the team as the daemon
	// started it (Response.Trusted), which `batty restart` compares with
	// the team file as it is now.
	OpTrusted = "trusted"
	// OpApprove approves a landing waiting for review (Request.Landing);
	// OpReject rejects one, telling its agent Request.Reason. The
	// human's: an agent may make neither.
	OpApprove = "approve"
	OpReject  = "reject"
	// OpConsole asks where the console listens and its login token
	// (Response.Console). The human's: an agent may not ask it.
	OpConsole = "console"
	// OpRestore makes an archived thread of Request.Agent its current one
	// again; OpFork has the agent's next turn fork Request.Thread (of
	// Request.From) into a new thread. The human's: an agent may make
	// neither.
	OpRestore = "restore"
	OpFork    = "fork"
)

// ConsoleInfo answers OpConsole: the console's address and its login
// token, which only the human may learn.
type ConsoleInfo struct {
	// URL is the console's address, e.g. http://127.0.0.1:40123/.
	URL string `json:"url"`
	// Token logs a browser in: URL + "login?token=" + Token.
	Token string `json:"token"`
}

// Response answers a Request.
type Response struct {
	OK     bool    `json:"ok"`
	Error  string  `json:"error,omitempty"`
	Status *Status `json:"status,omitempty"`
	PID    int     `json:"pid,omitempty"`
	// Changed answers pause and resume: whether the dispatch gate changed
	// (false: it was already paused, or not paused).
	Changed bool `json:"changed,omitempty"`
	// Rechecked answers resume: the parked agents whose Codex it checks
	// again at once.
	Rechecked []string `json:"rechecked,omitempty"`
	// Retried answers resume: the failed agents (crash loop) it has tried
	// again at once, ending their cool-down.
	Retried []string `json:"retried,omitempty"`
	// Ended answers resume: the pauses it ended, each in words, e.g.
	// "usage-limit pause of account /home/u/.codex" or "dispatch pause
	// (manual: paused by user)"; empty when it ended none.
	Ended []string `json:"ended,omitempty"`
	// Schedules answers resume: the failed schedules it has put back to
	// waiting.
	Schedules []string `json:"schedules,omitempty"`
	// Cancels answers cancel: one result per id asked, in order.
	Cancels []CancelResult `json:"cancels,omitempty"`
	// Trusted answers trusted: team.TrustedSettings of the team as the
	// daemon read it when it started.
	Trusted []team.Setting `json:"trusted,omitempty"`
	// Pending answers reset and resume: the agents whose part of the
	// request waits for a git or ssh step of theirs. It is applied once the step
	// has ended; status lists it meanwhile (AgentStatus.Pending).
	Pending []string `json:"pending,omitempty"`
	// Landing answers approve and reject: the request as recorded after
	// it. An approval of a branch that moved since it was verified
	// answers OK with the request queued again unapproved and Requeued
	// saying why.
	Landing *LandingStatus `json:"landing,omitempty"`
	// Requeued answers approve: why the request was queued again instead
	// of approved ("" when it was approved).
	Requeued string `json:"requeued,omitempty"`
	// Console answers console: where the console listens and its login
	// token.
	Console *ConsoleInfo `json:"console,omitempty"`
}

// Results of cancelling one message (CancelResult.Result).
const (
	// CancelDone: the message waited and is now recorded as cancelled.
	CancelDone = "cancelled"
	// CancelInterrupting: the message was in flight; its turn is being
	// interrupted, and its outcome is recorded as cancelled when it ends.
	CancelInterrupting = "interrupting"
	// CancelNotFound: no queue of the team holds the message.
	CancelNotFound = "not_found"
	// CancelRefused: the message cannot be cancelled (in flight without
	// interrupt, finished already, …); Detail says why.
	CancelRefused = "refused"
	// CancelPending: the message's agent is in a git or ssh step; the cancel is
	// applied once the step has ended (status lists it as pending
	// meanwhile). A cancel that is refused then is a warning event.
	CancelPending = "pending"
)

// CancelResult is what became of one message of a cancel request.
type CancelResult struct {
	ID     string `json:"id"`
	Box    string `json:"box,omitempty"` // the agent or "@role" whose queue holds it
	Result string `json:"result"`        // one of the Cancel* constants
	Detail string `json:"detail,omitempty"`
}

// Cancelled reports whether the message is (or will be, once its turn
// ends) recorded as cancelled; a pending cancel is not yet known to be.
func (r CancelResult) Cancelled() bool {
	return r.Result == CancelDone || r.Result == CancelInterrupting
}

// ErrNotRunning is returned by Call when no daemon listens on the socket.
var ErrNotRunning = errors.New("daemon not running")

// Call sends one request to the daemon of layout l and waits for the answer
// (at most timeout; 0 = no limit, for stop). It returns ErrNotRunning
// (wrapped) when nothing listens.
func Call(l project.Layout, req Request, timeout time.Duration) (Response, error) {
	c, err := dial(l, timeout)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return Response{}, fmt.Errorf("%w (no daemon listens on %s; start it with `batty start`)", ErrNotRunning, l.Socket())
		}
		return Response{}, fmt.Errorf("connect to daemon %s: %w", l.Socket(), err)
	}
	defer c.Close()
	if timeout > 0 {
		c.SetDeadline(time.Now().Add(timeout))
	}
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return Response{}, fmt.Errorf("send %s to daemon: %w", req.Op, err)
	}
	var resp Response
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&resp); err != nil {
		return Response{}, fmt.Errorf("read daemon's answer to %s: %w", req.Op, err)
	}
	if !resp.OK {
		return resp, errors.New(resp.Error)
	}
	return resp, nil
}

// dial connects to the control socket of l, through the state
// directory's descriptor (see Layout.OpenDir and package unixsock),
// whatever the length of its path, within timeout (0: no limit).
func dial(l project.Layout, timeout time.Duration) (*net.UnixConn, error) {
	dir, err := l.OpenDir("", false)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return unixsock.DialIn(ctx, dir, project.SocketName)
}

// Listen listens on the project's control socket with mode 0600, bound
// through the state directory's descriptor (see Layout.OpenDir and package
// unixsock), never through a symbolic link, whatever the length of its
// path. A stale socket file (nothing listening) is replaced; the caller
// holds the daemon lock, so no live daemon owns it. Closing the listener
// removes the socket.
func Listen(l project.Layout) (*unixsock.Listener, error) {
	dir, err := l.OpenDir("", false)
	if err != nil {
		return nil, fmt.Errorf("listen on control socket %s: %w", l.Socket(), err)
	}
	defer dir.Close()
	ln, err := unixsock.Listen(dir, project.SocketName)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

// RemoveSocket removes the control socket file, without following links.
func RemoveSocket(l project.Layout) error {
	dir, err := l.OpenDir("", false)
	if err != nil {
		return fmt.Errorf("remove control socket %s: %w", l.Socket(), err)
	}
	defer dir.Close()
	if err := dir.Remove(project.SocketName); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove control socket %s: %w", l.Socket(), err)
	}
	return nil
}

// peer is the process at the other end of a control connection, as the
// kernel recorded it when it connected (SO_PEERCRED), pinned by a pidfd.
type peer struct {
	uid, pid int
	// pidfd is the peer's process (SO_PEERPIDFD, Linux ≥ 6.5: the very
	// process that connected; else pidfd_open of its pid at accept), -1
	// when the kernel has no pidfds.
	pidfd int
}

// peerOf returns the process at the other end of c.
func peerOf(c *net.UnixConn) (peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return peer{}, err
	}
	p := peer{pidfd: -1}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		if cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); serr != nil {
			return
		}
		p.uid, p.pid = int(cred.Uid), int(cred.Pid)
		if pidfd, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
			p.pidfd = pidfd
		}
	}); err != nil {
		return peer{}, err
	}
	if serr != nil {
		return peer{}, serr
	}
	if p.pidfd < 0 {
		// An older kernel: the process that has the pid now. One that
		// connected and exited before this moment is not caught.
		if pidfd, err := unix.PidfdOpen(p.pid, 0); err == nil {
			p.pidfd = pidfd
		}
	}
	return p, nil
}

// alive reports whether the peer's process has not been reaped: its pid
// has named it all along since it connected. Without a pidfd it cannot
// tell and says true.
func (p peer) alive() bool {
	return p.pidfd < 0 || unix.PidfdSendSignal(p.pidfd, 0, nil, 0) == nil
}

func (p peer) close() {
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
	}
}

// Judge decides whether the process pid runs inside an agent (see
// InsiderOf); the daemon gives one to Serve.
type Judge func(pid int) (Insider, error)

// Conn is one control request and where its response goes: an accepted
// control connection (Serve), or a caller in the daemon's own process
// (InProcess).
type Conn struct {
	Req   Request
	conn  *net.UnixConn
	reply func(Response)
}

// InProcess is request req of a caller in the daemon's own process (the
// console, serving the human): its response is given to reply, once, on
// the goroutine that answers it. No socket and no judge are involved: the
// caller vouches for who asks.
func InProcess(req Request, reply func(Response)) Conn {
	return Conn{Req: req, reply: reply}
}

// Reply writes the response and closes the connection (InProcess: gives
// it to its reply).
func (c Conn) Reply(r Response) {
	if c.reply != nil {
		c.reply(r)
		return
	}
	c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	json.NewEncoder(c.conn).Encode(r)
	c.conn.Close()
}

// Serve accepts connections until ln is closed, checks the peer's uid,
// reads one request each and hands it to out. A request an agent may not
// make (see AgentMay) is refused, with Refusal's words, unless judge finds
// the peer outside every agent: the peer's process is read at once (by
// pid, from SO_PEERCRED) and must still be the process that connected
// when judge is done (a pidfd), so a pid reused meanwhile cannot pass for
// it. A nil judge checks the uid only.
func Serve(ln *unixsock.Listener, out chan<- Conn, done <-chan struct{}, judge Judge) {
	uid := os.Getuid()
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		go serveConn(c, uid, out, done, judge)
	}
}

// serveConn serves one connection of Serve.
func serveConn(c *net.UnixConn, uid int, out chan<- Conn, done <-chan struct{}, judge Judge) {
	p, err := peerOf(c)
	defer p.close()
	if err != nil || p.uid != uid {
		json.NewEncoder(c).Encode(Response{Error: fmt.Sprintf("refused: peer uid %d is not the daemon's owner (%d)", p.uid, uid)})
		c.Close()
		return
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var req Request
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&req); err != nil {
		json.NewEncoder(c).Encode(Response{Error: "bad request: " + err.Error()})
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	if judge != nil && !AgentMay(req.Op) {
		in, err := judge(p.pid)
		if err == nil && !p.alive() {
			err = fmt.Errorf("process %d exited before it was looked at", p.pid)
		}
		if refusal := Refusal(req.Op, in, err); refusal != nil {
			json.NewEncoder(c).Encode(Response{Error: refusal.Error()})
			c.Close()
			return
		}
	}
	select {
	case out <- Conn{Req: req, conn: c}:
	case <-done:
		json.NewEncoder(c).Encode(Response{Error: "daemon is shutting down"})
		c.Close()
	}
}
