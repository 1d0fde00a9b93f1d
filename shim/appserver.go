package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/appserver"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/ptylog"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/telemetry/traceid"
	"github.com/battyhq/batty/textclip"
	"github.com/battyhq/batty/unixsock"
)

// appServerRuntime is the app-server runtime: one `codex app-server`
// process (started on the first turn, restarted on the next turn after it
// died, was killed or was stopped for being idle) and the thread it has
// loaded. Only the turn goroutine in flight calls run, one turn at a time,
// and close is called once no turn runs. The one other goroutine is the
// idle stop's timer (shimconfig.Config.RuntimeIdle), armed between turns: mu guards
// what it touches (client, loaded, busy, idle, closed).
//
// When the app-server cannot run at all (appServerUnusable: no such
// subcommand, no session opened, a protocol this client does not speak),
// the runtime falls back to exec for the rest of the shim's life, with one
// warning; the turn in flight then runs on exec.
//
// Known differences from the exec runtime: at a turn's end what the turn
// left running is killed only when it is outside the app-server (detached
// or orphaned), what still runs below the server is killed with it;
// the ExtraArgs that are not config overrides are not applied; and the
// PID in TurnStarted is the app-server's. ExecOptions.OutputSchema goes
// with each turn (turn/start's outputSchema).
type appServerRuntime struct {
	s *server

	mu     sync.Mutex
	client *appserver.Client
	loaded string      // the thread loaded in client ("" = none)
	busy   bool        // a turn runs: the idle stop leaves the server alone
	idle   *time.Timer // the idle stop, armed between turns (nil = none)
	closed bool

	// Only the turn goroutine touches these.
	started  bool   // an app-server opened a session in this shim once
	fallback string // why the app-server cannot run ("" = it can): turns run on exec

	limits rateLimitsMemo
}

// rateLimitsMemo keeps the last rate-limit snapshot that named a window.
// Safe for concurrent use (the client's reader goroutine sets it).
type rateLimitsMemo struct {
	mu   sync.Mutex
	last appserver.RateLimits
}

func (m *rateLimitsMemo) set(rl appserver.RateLimits) {
	m.mu.Lock()
	m.last = rl
	m.mu.Unlock()
}

func (m *rateLimitsMemo) get() appserver.RateLimits {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// exhaustedReset returns when the latest-resetting window of rl that is
// used up (100%) resets, if that is after now; the zero time when no window
// is used up or none says when it resets. Pure.
func exhaustedReset(rl appserver.RateLimits, now time.Time) time.Time {
	var at time.Time
	for _, w := range []*appserver.RateLimitWindow{rl.Primary, rl.Secondary} {
		if w == nil || w.UsedPercent < 100 {
			continue
		}
		if r := w.Reset(); r.After(now) && r.After(at) {
			at = r
		}
	}
	return at
}

// unusableError says the app-server cannot be used at all (see
// appServerUnusable): the runtime falls back to exec.
type unusableError struct{ reason string }

func (e *unusableError) Error() string { return e.reason }

// Stages at which appServerUnusable judges an error.
const (
	stageInitialize = "initialize" // starting the server and opening its session
	stageCall       = "call"       // thread/start, thread/resume, turn/start
)

// appServerUnusable decides whether err, met at stage, means that this
// codex has no app-server batty can use — as opposed to a server that
// worked and failed (a crash, restarted on the next turn) or a refusal of
// one request. Opening the session fails for good only when no server of
// this shim ever opened one (startedBefore false): no `app-server`
// subcommand (it exits at once), a server that exits, hangs or refuses
// initialize. A call fails for good when the server does not know the
// method or a value batty sends: JSON-RPC "method not found" (-32601) or
// serde's "unknown variant". Pure.
func appServerUnusable(stage string, err error, startedBefore bool) bool {
	if err == nil {
		return false
	}
	switch stage {
	case stageInitialize:
		return !startedBefore
	case stageCall:
		var rpc *appserver.RPCError
		if !errors.As(err, &rpc) {
			return false
		}
		return rpc.Code == -32601 || strings.Contains(strings.ToLower(rpc.Message), "unknown variant")
	}
	return false
}

// fallbackWarning is the one warning of a fall back to exec. Pure.
func fallbackWarning(reason string) string {
	return fmt.Sprintf("the app-server runtime cannot run here (%s): this agent's turns run on the exec runtime (one `codex exec` per turn) until its shim restarts. "+
		"To fix it, use a Codex CLI whose `codex app-server` batty supports (batty is tested with %s), or set `runtime: exec` under `codex:` in team.yaml",
		reason, codex.Version)
}

// fallBack switches the runtime to exec for good: it ends the server, if
// any, and warns once.
func (r *appServerRuntime) fallBack(t *turn, reason string) {
	r.fallback = reason
	r.drop()
	r.s.log.Warn("App-server unusable, falling back to exec", "reason", reason)
	r.s.warn(t.msg.ID, fallbackWarning(reason))
}

// begin marks a turn as running and disarms the idle stop.
func (r *appServerRuntime) begin() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.busy = true
	r.disarmLocked()
}

// disarmLocked stops the idle timer, if armed; r.mu is held.
func (r *appServerRuntime) disarmLocked() {
	if r.idle != nil {
		r.idle.Stop()
		r.idle = nil
	}
}

// end marks the turn as over and arms the idle stop for the server that
// runs, when shimconfig.Config.RuntimeIdle is set.
func (r *appServerRuntime) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.busy = false
	if r.client == nil || r.closed || r.s.cfg.RuntimeIdle <= 0 || r.shared() {
		// A shared process is the daemon's: an idle connection costs
		// nothing worth stopping.
		return
	}
	c := r.client
	r.idle = time.AfterFunc(r.s.cfg.RuntimeIdle, func() { r.idleStop(c) })
}

// idleStop ends server c after shimconfig.Config.RuntimeIdle without a turn, unless a
// turn began meanwhile or c is no longer the runtime's server. It runs on
// the timer's goroutine and returns once the server's process group is
// gone.
func (r *appServerRuntime) idleStop(c *appserver.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy || r.closed || r.client != c {
		return
	}
	r.idle = nil
	r.s.log.Info("App-server idle, stopping it; the next turn starts another", "pid", c.Pid(), "idle", r.s.cfg.RuntimeIdle)
	r.dropLocked()
}

// connect returns the running client, starting and initializing a new
// app-server when there is none or the last one has ended. The server is
// started through the shim's reaper, which then never reaps it itself. An
// error wrapping *unusableError means the app-server cannot run at all.
func (r *appServerRuntime) connect() (*appserver.Client, error) {
	if r.client != nil {
		select {
		case <-r.client.Done():
			r.drop()
		default:
			return r.client, nil
		}
	}
	s := r.s
	if r.shared() {
		return r.dial()
	}
	opts := appserver.Options{
		Bin: s.bin.Path, Args: appServerArgs(s.execOpts), Env: s.env, Cwd: s.cfg.Cwd, ClientName: "batty",
		// Called from the client's reader goroutine; emit is safe for
		// concurrent use and a socket send returns quickly.
		OnRateLimits: func(rl appserver.RateLimits) {
			if ev, ok := rateLimitsEvent(rl, time.Now()); ok {
				r.limits.set(rl)
				s.emit(ev)
			}
		},
	}
	if s.reaper != nil {
		// Started as a managed child: the reaper's orphan scans leave it
		// to the client, which reaps it.
		opts.Starter = s.reaper
	}
	c, err := appserver.Start(context.Background(), opts)
	if err != nil {
		return nil, fmt.Errorf("start app-server: %w", err)
	}
	ictx, cancel := context.WithTimeout(context.Background(), s.cfg.IdleTimeout)
	defer cancel()
	if _, err := c.Initialize(ictx); err != nil {
		stderr := c.Stderr()
		if cerr := c.Close(); cerr != nil {
			s.log.Debug("Closing the app-server that failed to initialize", "error", cerr)
		}
		err = fmt.Errorf("initialize app-server: %w%s", err, stderrSuffix(stderr))
		if appServerUnusable(stageInitialize, err, r.started) {
			return nil, &unusableError{reason: "`codex app-server` did not open a session: " + textclip.Bytes(err.Error(), 1024, textclip.Truncated)}
		}
		return nil, err
	}
	s.log.Info("App-server started", "pid", c.Pid())
	r.started = true
	r.mu.Lock()
	r.client, r.loaded = c, ""
	r.mu.Unlock()
	go r.watch(c)
	return c, nil
}

// shared reports whether the runtime runs on the daemon's shared
// app-server (shimconfig.Config.AppServerSocket) rather than a process of its own.
func (r *appServerRuntime) shared() bool { return r.s.cfg.AppServerSocket != "" }

// dial connects to the shared app-server's broker and opens a session:
// the per-account runtime. The connection is the shim's own; the process
// is the daemon's, which restarts it when it dies. Failing to connect is
// an error of this turn, never a fall back to exec (the process may be
// restarting).
func (r *appServerRuntime) dial() (*appserver.Client, error) {
	s := r.s
	dctx, dcancel := context.WithTimeout(context.Background(), s.cfg.IdleTimeout)
	nc, err := unixsock.Dial(dctx, s.cfg.AppServerSocket)
	dcancel()
	if err != nil {
		return nil, fmt.Errorf("connect to the shared app-server: %w", err)
	}
	c, err := appserver.Dial(context.Background(), nc, appserver.Options{ClientName: "batty",
		OnRateLimits: func(rl appserver.RateLimits) {
			if ev, ok := rateLimitsEvent(rl, time.Now()); ok {
				r.limits.set(rl)
				s.emit(ev)
			}
		}})
	if err != nil {
		return nil, fmt.Errorf("connect to the shared app-server: %w", err)
	}
	ictx, cancel := context.WithTimeout(context.Background(), s.cfg.IdleTimeout)
	defer cancel()
	if _, err := c.Initialize(ictx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("open a session on the shared app-server: %w", err)
	}
	s.log.Info("Connected to the shared app-server", "socket", s.cfg.AppServerSocket)
	r.started = true
	r.mu.Lock()
	r.client, r.loaded = c, ""
	r.mu.Unlock()
	go r.watch(c)
	return c, nil
}

// agentMark is the value of agentenv.AgentMark for this shim's agent: the
// project's mark and the agent's name, or, outside a team, the shim's
// pid. Pure but for the pid.
func agentMark(env []string, agent string) string {
	if m := agentenv.Lookup(env, reap.MarkEnv); m != "" {
		return m + "/" + agent
	}
	return fmt.Sprintf("shim-%d/%s", os.Getpid(), agent)
}

// sharedThreadConfig is the thread/start (and thread/resume) config that
// gives an agent's thread on a shared app-server what its own process
// would have had: the reasoning effort, the added directories as the
// workspace-write sandbox's writable roots, and the environment batty
// gives the agent's commands (env's BATTY_* variables and PATH, and the
// agent's mark). The role's codex.env is not among them: it is the
// process's environment, which only agents with the same one share. Pure.
func sharedThreadConfig(o codex.ExecOptions, env []string, mark string) map[string]any {
	set := map[string]string{agentenv.AgentMark: mark}
	for _, k := range []string{agentenv.Agent, agentenv.Dir, agentenv.Project, agentenv.TeamFile, EnvBatty, "PATH"} {
		if v := agentenv.Lookup(env, k); v != "" {
			set[k] = v
		}
	}
	cfg := map[string]any{"shell_environment_policy.set": set}
	if o.ReasoningEffort != "" {
		cfg["model_reasoning_effort"] = o.ReasoningEffort
	}
	if len(o.AddDirs) > 0 && o.Permissions == nil {
		cfg["sandbox_workspace_write.writable_roots"] = append([]string(nil), o.AddDirs...)
	}
	return cfg
}

// killMarked kills what the turn of message id left running on the
// shared app-server: every process carrying this agent's mark. Only that
// agent's commands carry it (each thread's environment is its own), so no
// other agent's process is touched. It blocks until they are gone or a 5s
// bound passes, and logs what it did.
func (r *appServerRuntime) killMarked(id string) {
	s := r.s
	n, err := reap.SweepMarked(agentenv.AgentMark, agentMark(s.env, s.cfg.Agent), nil, 5*time.Second)
	if err != nil {
		s.log.Error("Processes left by the turn survived", "message", id, "error", err)
	} else if n > 0 {
		s.log.Info("Killed processes left by the turn on the shared app-server", "message", id, "count", n)
	}
}

// watch notices server c's death when it happens: once c's connection
// ends while no turn runs and c is still the runtime's server (the
// runtime did not end it), c is dropped with a warning saying how it
// ended, and the next turn starts another server. A death during a turn
// is the turn's to report (a turn cut off: FailKilled). It runs on its
// own goroutine, one per server, and returns when c's connection ends.
func (r *appServerRuntime) watch(c *appserver.Client) {
	<-c.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy || r.closed || r.client != c {
		return
	}
	how := "its connection ended"
	if ps := c.Died(); ps != nil {
		how = ps.String()
	}
	r.disarmLocked()
	if r.shared() {
		// The daemon's broker restarts the process and alerts once for
		// every agent on it.
		r.s.log.Info("Shared app-server connection ended between turns; the next turn connects again", "how", how)
		r.dropLocked()
		return
	}
	r.s.log.Warn("App-server died between turns; the next turn starts another", "pid", c.Pid(), "how", how)
	r.s.warn("", fmt.Sprintf("the app-server (pid %d) died between turns (%s); the next turn starts another and resumes the thread", c.Pid(), how))
	r.dropLocked()
}

// noteDeath records in res how the server died under the call or turn
// that failed with err, when err says it did (an *appserver.ClosedError
// whose server's end ended the connection), from that error alone, never
// from asking the client afterwards: the turn was cut off (res.killed,
// FailKilled, which the daemon retries) when the process was killed by a
// signal, when a connection to the shared app-server ended without the
// shim closing it (its process died, the broker then ends every
// connection, or the daemon is going), or when the process's end is not
// known; else res.exitCode is the process's exit status. Any other error
// (a refusal, a timeout, the shim's own close) leaves res alone. Pure.
func noteDeath(err error, res *turnResult) {
	var end *appserver.ClosedError
	if !errors.As(err, &end) || !end.ByPeer {
		return
	}
	if end.Died == nil || signaled(end.Died) {
		res.killed = true
		return
	}
	res.exitCode = end.Died.ExitCode()
}

// drop closes the client, if any, and forgets it and its loaded thread.
func (r *appServerRuntime) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked()
}

// dropLocked is drop with mu held.
func (r *appServerRuntime) dropLocked() {
	if r.client == nil {
		return
	}
	if err := r.client.Close(); err != nil {
		r.s.log.Debug("App-server closed", "reason", err)
	}
	r.client, r.loaded = nil, ""
}

// close ends the app-server, if one runs, and disarms the idle stop.
// Idempotent.
func (r *appServerRuntime) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.disarmLocked()
	r.dropLocked()
	return nil
}

// appServerArgs are the app-server's -c overrides for the settings that
// thread/start does not take: the reasoning effort, the added directories
// (ExecOptions.AddDirs) as the workspace-write sandbox's writable roots,
// the shimconfig.Config overrides, and the config overrides among ExtraArgs (the
// other extra arguments are flags of codex exec, which the app-server does
// not take). Pure.
func appServerArgs(o codex.ExecOptions) []string {
	var a []string
	if o.ReasoningEffort != "" {
		a = append(a, "-c", "model_reasoning_effort="+codex.TOMLString(o.ReasoningEffort))
	}
	if len(o.AddDirs) > 0 && o.Permissions == nil {
		roots := make([]string, len(o.AddDirs))
		for i, d := range o.AddDirs {
			roots[i] = codex.TOMLString(d)
		}
		a = append(a, "-c", "sandbox_workspace_write.writable_roots=["+strings.Join(roots, ",")+"]")
	}
	return append(a, shimconfig.SharedServerArgs(o)...)
}

// threadOptions are the thread settings of the codex options. With a
// permission profile the thread names no sandbox mode: Codex would take
// it over the profile (which the thread's config carries, see thread).
func threadOptions(o codex.ExecOptions, cwd string) appserver.ThreadOptions {
	sandbox := o.Sandbox
	if o.Permissions != nil {
		sandbox = ""
	}
	return appserver.ThreadOptions{Cwd: cwd, Model: o.Model, Sandbox: sandbox, ApprovalPolicy: o.ApprovalPolicy,
		DeveloperInstructions: o.DeveloperInstructions}
}

func stderrSuffix(stderr string) string {
	stderr = strings.TrimSpace(stderr)
	if stderr == "" {
		return ""
	}
	return "; stderr: " + textclip.Bytes(stderr, 2048, textclip.Truncated)
}

// appTurnDone is RunTurn's answer.
type appTurnDone struct {
	tr  appserver.TurnResult
	err error
}

// run runs t on the app-server: thread start or resume as needed, then
// turn/start, following the turn's notifications until it ends. A stop
// request interrupts the turn (turn/interrupt); an app-server that does not
// end the turn within shimconfig.Config.StopGrace is killed. A turn that fails for
// a full context window gets its thread compacted before run returns. When
// the app-server turns out to be unusable before the turn started, the
// turn runs on exec instead, as every later one (see fallBack).
func (r *appServerRuntime) run(t *turn) turnResult {
	if r.fallback != "" || (t.fork != "" && r.shared()) {
		// A shared server's broker forwards no fork (it would hand one
		// agent's thread to another): the fork's turn runs on exec, and
		// the next one resumes the new thread on the server.
		return r.s.execTurn(t)
	}
	r.begin()
	res, unusable := r.runApp(t)
	r.end()
	if unusable != "" {
		r.fallBack(t, unusable)
		return r.s.execTurn(t)
	}
	return res
}

// runApp is run on the app-server. unusable is set, and the result
// meaningless, when the app-server cannot run at all and the turn has not
// started (appServerUnusable).
func (r *appServerRuntime) runApp(t *turn) (res turnResult, unusable string) {
	s := r.s
	res = turnResult{exitCode: -1}
	if err := s.recheckBinary(); err != nil {
		res.spawnErr = err
		return res, ""
	}
	schema, err := appOutputSchema(s.execOpts.OutputSchema)
	if err != nil {
		res.spawnErr = err
		return res, ""
	}
	c, err := r.connect()
	var ue *unusableError
	if errors.As(err, &ue) {
		return res, ue.reason
	}
	if err != nil {
		res.spawnErr = err
		return res, ""
	}
	t.pid = c.Pid()
	s.log.Debug("Turn on the app-server", "pid", t.pid, "message", t.msg.ID, "resume", t.threadID)
	s.emit(protocol.TurnStarted{MessageID: t.msg.ID, ThreadID: t.threadID, Resume: t.threadID != "", PID: t.pid})

	tctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Stop requests are read once the turn runs: starting or loading the
	// thread is bounded by the idle timeout instead.
	thctx, thcancel := context.WithTimeout(tctx, s.cfg.IdleTimeout)
	threadID, ok, err := r.thread(thctx, c, t, &res)
	thcancel()
	if appServerUnusable(stageCall, err, true) {
		return res, "the app-server refused " + textclip.Bytes(err.Error(), 1024, textclip.Truncated)
	}
	if !ok {
		return res, ""
	}

	done := make(chan appTurnDone, 1)
	activity := make(chan appSignal)
	n := &appNotes{s: s, t: t, res: &res, open: map[string]bool{}, activity: activity}
	go func() {
		// The turn carries the W3C context of batty's span of this
		// attempt (derived from the message, see package traceid): the
		// spans Codex exports of it are its children.
		traced := appserver.WithTraceParent(tctx, traceid.TurnParent(t.msg.ID, t.msg.Attempt))
		tr, err := c.RunTurnWith(traced, threadID, FormatPrompt(t.msg), appserver.TurnOptions{OutputSchema: schema}, n.handle)
		done <- appTurnDone{tr: tr, err: err}
	}()

	turnTimer := time.NewTimer(s.cfg.TurnTimeout)
	defer turnTimer.Stop()
	idleTimer := time.NewTimer(s.cfg.IdleTimeout)
	defer idleTimer.Stop()
	var graceTimer <-chan time.Time
	net := &netWait{limit: s.cfg.NetworkWait}
	defer net.stop()
	stop := func(reason stopReason, detail string) {
		if graceTimer != nil {
			return
		}
		res.stop, res.stopDetail = reason, detail
		graceTimer = time.After(s.cfg.StopGrace)
		ictx, icancel := context.WithTimeout(context.Background(), s.cfg.StopGrace)
		defer icancel()
		if err := c.Interrupt(ictx, threadID); err != nil {
			// Not started yet, or the request failed: RunTurn interrupts
			// the turn itself once its context ends.
			s.log.Debug("Interrupt refused; cancelling the turn", "message", t.msg.ID, "error", err)
			cancel()
		}
	}
	var d appTurnDone
wait:
	for {
		select {
		case d = <-done:
			break wait
		case sig := <-activity:
			if sig.network != "" {
				s.networkNotice(t, net, sig.network, idleTimer)
				continue
			}
			if waited, ok := net.end(time.Now()); ok {
				s.tlog.Notice(fmt.Sprintf("the API answered again after %s without it", waited.Round(time.Second)))
				s.emit(protocol.NetworkWait{MessageID: t.msg.ID, Waiting: false, Since: time.Now().Add(-waited)})
			}
			if sig.busy {
				idleTimer.Stop()
			} else {
				resetTimer(idleTimer, s.cfg.IdleTimeout)
			}
		case reason := <-t.stopCh:
			stop(reason, "")
		case <-turnTimer.C:
			stop(limitStop(limitTurn, s.cfg, net))
		case <-idleTimer.C:
			stop(limitStop(limitIdle, s.cfg, net))
		case <-net.C():
			stop(limitStop(limitNetwork, s.cfg, net))
			net.stop()
		case <-graceTimer:
			s.log.Warn("The app-server did not end the turn, killing it", "pid", t.pid, "grace", s.cfg.StopGrace)
			r.drop()
		}
	}
	if d.tr.TurnID == "" && res.stop == stopNone && appServerUnusable(stageCall, d.err, true) {
		// turn/start refused as unknown: nothing of the turn ran.
		return res, "the app-server refused " + textclip.Bytes(d.err.Error(), 1024, textclip.Truncated)
	}
	applyAppTurn(&res, d.tr, d.err)
	if !res.completed {
		// A usage limit's message may name no reset time; the last
		// snapshot codex reported does.
		res.limitReset = exhaustedReset(r.limits.get(), time.Now())
	}
	if d.err != nil {
		res.stderrTail = c.Stderr()
		if res.stop == stopNone {
			noteDeath(d.err, &res)
		}
		select {
		case <-c.Done():
			r.drop()
		default:
		}
	}
	if _, kind, _ := outcome(res); kind == protocol.FailContextWindow && res.stop == stopNone && r.client == c {
		r.compact(c, threadID, t, &res)
	}
	// As with exec: what the turn left running outside the app-server
	// (detached into its own session, or orphaned when its shell ended and
	// so reparented to the shim) is killed before the loop hears of the
	// end. The app-server and what still runs below it are managed, and
	// spared. A turn that completed having only talked (no command, no
	// tool: mayHaveLeft) started nothing to leave, and the scans of every
	// process are spared.
	if mayHaveLeft(n.spawned, d.err, d.tr.Status) {
		s.killLeftovers(t.msg.ID)
		if r.shared() {
			r.killMarked(t.msg.ID)
		}
	}
	return res, ""
}

// mayHaveLeft reports whether a turn may have left processes running:
// unless it completed (no error, status completed) without an item that
// may start one (spawned). Pure.
func mayHaveLeft(spawned bool, err error, status string) bool {
	return spawned || err != nil || status != appserver.StatusCompleted
}

// talkItems are the item types that start no process: the turn's words.
var talkItems = map[string]bool{"userMessage": true, "hookPrompt": true, "agentMessage": true, "reasoning": true, "plan": true}

// compact has the app-server compact thread threadID after t failed for a
// full context window, so that the turn retried on it (the daemon's retry
// on the same thread) starts from a compacted history. It waits for the
// compaction, bounded by shimconfig.Config.IdleTimeout and cut short by a stop
// request; the thread's running total after it becomes res.usage (the
// baseline of the next turn's usage). A failure is logged and noted in the
// transcript: codex then compacts the thread itself on the next turn.
func (r *appServerRuntime) compact(c *appserver.Client, threadID string, t *turn, res *turnResult) {
	s := r.s
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.IdleTimeout)
	defer cancel()
	done := make(chan appTurnDone, 1)
	go func() {
		tr, err := c.Compact(ctx, threadID)
		done <- appTurnDone{tr: tr, err: err}
	}()
	var d appTurnDone
	select {
	case d = <-done:
	case reason := <-t.stopCh:
		s.log.Info("Stop requested while compacting the thread", "message", t.msg.ID, "reason", reason)
		cancel()
		d = <-done
	}
	if d.err == nil && d.tr.Status == appserver.StatusCompleted {
		if u := d.tr.Usage; u != nil {
			res.usage = codex.Usage{InputTokens: u.Total.InputTokens, CachedInputTokens: u.Total.CachedInputTokens,
				CacheWriteInputTokens: u.Total.CacheWriteInputTokens, OutputTokens: u.Total.OutputTokens, ReasoningOutputTokens: u.Total.ReasoningOutputTokens}
		}
		s.log.Info("Thread compacted after its context window filled", "thread", threadID, "duration", d.tr.Duration)
		s.tlog.Notice("thread " + threadID + " compacted: its context window was full")
		return
	}
	why := "compaction " + d.tr.Status
	if d.err != nil {
		why = d.err.Error()
	} else if d.tr.Error != nil {
		why = d.tr.Error.Error()
	}
	s.log.Warn("Compacting the thread failed", "thread", threadID, "error", why)
	s.tlog.Notice("compacting thread " + threadID + " failed (" + textclip.Bytes(why, 512, textclip.Truncated) + "); codex compacts it on its next turn")
	select {
	case <-c.Done():
		r.drop()
	default:
	}
}

// store archives (or unarchives) thread id in Codex's store through the
// runtime's own app-server (thread/archive, thread/unarchive); a shared
// server's broker forwards neither, so the CLI does it there, as it does
// once the runtime fell back to exec. A thread archived is no longer the
// loaded one.
func (r *appServerRuntime) store(ctx context.Context, archive bool, id string) error {
	if r.fallback != "" || r.shared() {
		return r.s.storeCLI(ctx, archive, id)
	}
	r.begin()
	defer r.end()
	c, err := r.connect()
	if err != nil {
		return err
	}
	if err := c.ArchiveThread(ctx, id, archive); err != nil {
		return err
	}
	r.mu.Lock()
	if archive && r.loaded == id {
		r.loaded = ""
	}
	r.mu.Unlock()
	return nil
}

// thread makes t's thread the loaded one: a new thread when t has none,
// a resume when another is loaded. It announces a new thread to the loop.
// On failure it fills res and reports false.
// The error is the refusal or failure, if any.
func (r *appServerRuntime) thread(ctx context.Context, c *appserver.Client, t *turn, res *turnResult) (string, bool, error) {
	s := r.s
	opts := threadOptions(s.execOpts, s.cfg.Cwd)
	if r.shared() {
		opts.Config = sharedThreadConfig(s.execOpts, s.env, agentMark(s.env, s.cfg.Agent))
	}
	if p := s.execOpts.Permissions; p != nil {
		// The agent's permission profile goes with its thread, on its own
		// app-server or a shared one alike.
		if opts.Config == nil {
			opts.Config = map[string]any{}
		}
		maps.Copy(opts.Config, p.ThreadConfig())
	}
	var th appserver.Thread
	var err error
	switch {
	case t.threadID != "" && t.threadID == r.loaded:
		return t.threadID, true, nil
	case t.threadID != "":
		th, err = c.ResumeThread(ctx, t.threadID, opts)
	case t.fork != "":
		th, err = c.ForkThread(ctx, t.fork, opts)
	default:
		opts.Ephemeral = s.cfg.EphemeralThreads
		th, err = c.StartThread(ctx, opts)
	}
	if err != nil {
		var rpc *appserver.RPCError
		msg := textclip.Bytes(err.Error(), protocol.MaxText, textclip.Truncated)
		if errors.As(err, &rpc) {
			// Refused (an unknown thread): classified like codex exec's
			// stderr for the same refusal, so a missing thread is retried
			// on a fresh one.
			res.failedMsg, res.stderrTail = msg, msg
		} else {
			res.stderrTail = msg + stderrSuffix(c.Stderr())
			noteDeath(err, res)
			r.drop()
		}
		return "", false, err
	}
	r.mu.Lock()
	r.loaded = th.ID
	r.mu.Unlock()
	res.threadID = th.ID
	ack := make(chan struct{})
	s.progress <- threadSeen{t: t, id: th.ID, ack: ack}
	<-ack
	return th.ID, true, nil
}

// applyAppTurn records how RunTurn ended in res. It is pure: a completed
// turn carries the thread's usage, a failed one codex's message and the
// class of its typed error code (codeFailure; outcome classifies the
// message like exec's turn.failed when the code says nothing), an
// interrupted one that the
// shim did not stop counts as interrupted; an error (connection ended,
// turn/start refused) leaves the exit to outcome, with the error as the
// failure text when turn/start was refused.
func applyAppTurn(res *turnResult, tr appserver.TurnResult, err error) {
	if tr.Usage != nil {
		u := tr.Usage.Total
		res.usage = codex.Usage{InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens,
			CacheWriteInputTokens: u.CacheWriteInputTokens, OutputTokens: u.OutputTokens, ReasoningOutputTokens: u.ReasoningOutputTokens}
	}
	if tr.FinalMessage != "" {
		res.reply = tr.FinalMessage
	}
	if err != nil {
		var rpc *appserver.RPCError
		if res.stop == stopNone && errors.As(err, &rpc) {
			res.failedMsg = textclip.Bytes(err.Error(), protocol.MaxText, textclip.Truncated)
		}
		return
	}
	switch tr.Status {
	case appserver.StatusCompleted:
		res.completed = true
	case appserver.StatusFailed:
		msg := "turn failed"
		if tr.Error != nil {
			if tr.Error.Message != "" {
				msg = tr.Error.Message
			}
			res.failKind = codeFailure(tr.Error.Code, tr.Error.HTTPStatus)
		}
		res.failedMsg = textclip.Bytes(msg, protocol.MaxText, textclip.Truncated)
	case appserver.StatusInterrupted:
		if res.stop == stopNone {
			res.stop = stopInterrupt
		}
	}
}

// appNotes follows one turn's notifications on RunTurn's goroutine: the
// transcript, warnings, the items and requests counted, and the idle timer
// and network wait (through activity, which the turn's loop reads until
// RunTurn returns).
type appNotes struct {
	s        *server
	t        *turn
	res      *turnResult // only items, requests, commands and reply
	open     map[string]bool
	activity chan<- appSignal
	// spawned is set by an item that may have started a process (any but
	// talkItems); read once RunTurn has returned.
	spawned bool
}

// appSignal is what one notification means for the turn's timers: a
// network-wait notice (network, codex's message), or real output (with
// busy true while a command runs).
type appSignal struct {
	busy    bool
	network string
}

// appNoteClass classifies an error notification like exec's error
// events (classifyEvent): a retry notice that waits for the network, any
// other retry notice, or (not retrying) output. Pure.
func appNoteClass(p appNote) eventClass {
	switch {
	case p.Error == nil || !p.WillRetry:
		return classOutput
	case codex.IsNetworkWait(p.Error.Message):
		return classNetworkWait
	}
	return classRetryNotice
}

// appItem is the part of a thread item the shim reads.
type appItem struct {
	Type             string `json:"type"`
	ID               string `json:"id"`
	Text             string `json:"text"`
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregatedOutput"`
	ExitCode         *int   `json:"exitCode"`
	Status           string `json:"status"`
	Changes          []struct {
		Path string `json:"path"`
		Kind struct {
			Type string `json:"type"`
		} `json:"kind"`
	} `json:"changes"`
	Summary []string `json:"summary"`
	Query   string   `json:"query"`
}

// appNote is the part of a turn notification the shim reads.
type appNote struct {
	Item      *appItem `json:"item"`
	WillRetry bool     `json:"willRetry"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// decodeAppNote reads a notification's params; malformed params read as
// empty. It never panics.
func decodeAppNote(params json.RawMessage) appNote {
	var p appNote
	if json.Unmarshal(params, &p) != nil {
		return appNote{}
	}
	return p
}

// handle applies one notification.
func (n *appNotes) handle(note appserver.Notification) {
	tl := n.s.tlog
	switch note.Method {
	case appserver.NotifyError, appserver.NotifyItemStarted, appserver.NotifyItemCompleted:
	default:
		// Deltas and the like: activity only, their params unread.
		n.activity <- appSignal{busy: len(n.open) > 0}
		return
	}
	p := decodeAppNote(note.Params)
	switch note.Method {
	case appserver.NotifyError:
		// Retry notices are not activity: they keep coming while codex
		// cannot get an answer, and must not keep a hung turn alive.
		switch appNoteClass(p) {
		case classNetworkWait:
			n.activity <- appSignal{network: p.Error.Message}
		case classRetryNotice:
			n.s.warn(n.t.msg.ID, "codex retries: "+p.Error.Message)
		}
		return
	}
	it := p.Item
	if it == nil {
		return
	}
	done := note.Method == appserver.NotifyItemCompleted
	if !talkItems[it.Type] {
		n.spawned = true
	}
	switch it.Type {
	case "userMessage", "hookPrompt":
		return
	case "agentMessage":
		if done {
			n.res.reply = it.Text
			tl.AgentMessage(it.Text)
		}
	case "reasoning":
		if done && len(it.Summary) > 0 {
			tl.Reasoning(strings.Join(it.Summary, "\n"))
		}
	case "commandExecution":
		if !done {
			n.open[it.ID] = true
			tl.CommandStarted(it.Command)
		} else {
			delete(n.open, it.ID)
			n.res.requests++
			tl.CommandFinished(it.Command, it.ExitCode, it.Status, it.AggregatedOutput)
			n.res.ranCommand(it.Command, it.AggregatedOutput, it.ExitCode)
		}
	case "fileChange":
		if done {
			n.res.requests++
			ch := make([]ptylog.FileChange, 0, len(it.Changes))
			for _, c := range it.Changes {
				ch = append(ch, ptylog.FileChange{Path: c.Path, Kind: c.Kind.Type})
			}
			tl.FileChanges(ch)
		}
	case "webSearch":
		if done {
			tl.WebSearch(it.Query)
		}
	case "plan":
	default:
		if done && it.Type != "" {
			n.res.requests++
		}
	}
	if done && it.Type != "reasoning" && it.Type != "plan" {
		n.res.items++
	}
	n.activity <- appSignal{busy: len(n.open) > 0}
}

// rateLimitsEvent converts codex's rate-limit snapshot, seen at seen, to a
// RateLimits event. ok is false when the snapshot names no window (nothing
// to report).
func rateLimitsEvent(rl appserver.RateLimits, seen time.Time) (protocol.RateLimits, bool) {
	ev := protocol.RateLimits{SeenAt: seen}
	for _, w := range []struct {
		name string
		win  *appserver.RateLimitWindow
	}{{"primary", rl.Primary}, {"secondary", rl.Secondary}} {
		if w.win == nil {
			continue
		}
		ev.Windows = append(ev.Windows, protocol.RateLimitWindow{
			Name: w.name, UsedPct: w.win.UsedPercent, WindowMinutes: w.win.WindowMinutes, ResetsAt: w.win.Reset(),
		})
	}
	return ev, len(ev.Windows) > 0
}
