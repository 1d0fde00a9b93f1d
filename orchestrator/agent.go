package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/recall"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// Agent states as shown by status, beyond the shim's own states.
const (
	agentSpawning   = "spawning"
	agentRestarting = "restarting" // waiting for the respawn backoff
	agentFailed     = "failed"     // crash loop: no more respawns
	// agentUnreachable: the agent's host cannot be reached; its shim is
	// started again with the back-off, which no crash counts.
	agentUnreachable = "unreachable"
	agentStopped     = control.AgentStopped
)

// agent supervises one shim and delivers its inbox one message at a time.
// run's goroutine owns everything but snap, which status reads under mu.
type agent struct {
	agentEnv
	def team.Agent
	box *inbox.Box
	log hclog.Logger

	kick chan struct{} // buffered(1): look at the inbox and the gate
	// ctl is the daemon's requests (agentCtl): put without blocking, taken
	// by run, answered through each request's answer; closed when run
	// returns, what is left answered as from a stopped agent.
	ctl  *mailbox[agentCtl]
	done chan struct{} // closed when run returns

	mu   sync.Mutex
	snap agentSnap

	// owned by run
	acct accountRoom
	supervision
	flight
	placement
	worktree
	st       project.AgentState
	p        Worker
	events   <-chan protocol.Message // p's events, nil once they ended
	stopping bool
	// step is the end of the git (or, for a clone on a host, ssh) step
	// running off run's goroutine, nil when none runs (see startStep);
	// deferred are the control requests that came meanwhile, applied in
	// order once it has ended (see takeCtl); finished ends run.
	step     chan func()
	deferred []agentCtl
	finished bool
	recalls  recall.Bucket // how often the agent may search (answerRecall)
	// recalling are the searches answerRecall started: run waits for
	// them before it returns.
	recalling sync.WaitGroup
}

// agentSnap is what status shows of an agent.
type agentSnap struct {
	state    string
	inflight string
	flightAt time.Time
	// ended: the turn of the message in flight has ended and its outcome
	// is being recorded (see endTurn); meaningless with no message in
	// flight.
	ended    bool
	backlog  int
	shimPID  int
	restarts int
	st       project.AgentState
	saveErr  string // the last failure to save st, "" once a save succeeds
	parked   *preflight.Problem
	health   *health // the agent's health (agent.health)
	account  string  // the agent's account key (agent.account)
	// netSince and netMessage: the turn in flight waits for the network
	// since netSince (zero: it does not), codex's notice.
	netSince   time.Time
	netMessage string
	// recording is set while an outcome cannot be written (see record).
	recording *control.RecordingStatus
	// workspace is the worktree's last known state (nil: shared checkout,
	// or not read yet).
	workspace *workspaces.State
	// pending names the control requests acknowledged and not applied
	// yet, in order (pendingWord): they wait for a git or ssh step of the agent.
	// Never changed in place: a snapshot keeps its own.
	pending []string
	// waiting is why the agent's last look at its inbox started no turn
	// (see dispatch), nil when nothing held it.
	waiting *control.WaitingStatus
}

// agentOp names what an agentCtl asks of the agent's goroutine.
type agentOp int

const (
	// opReset clears the agent's session (reason says why).
	opReset agentOp = iota + 1
	// opRetry ends a crash loop's cool-down now; answered with
	// errNotFailed when the agent was not failed.
	opRetry
	// opStop shuts the shim down within timeout; not answered: the agent's
	// done channel closes once the shim is gone.
	opStop
	// opCancel withdraws message id (see agent.cancel).
	opCancel
	// opEnd is the end of run's context, held like a request while a step
	// runs (see run); never sent by the daemon.
	opEnd
	// opSwitch makes another thread the agent's: an archived one restored,
	// or a fork (agentCtl.sw; see agent.switchThread).
	opSwitch
)

// agentCtl is a request from the daemon's goroutine to an agent's, put in
// its mailbox (agent.ctl). answer, nil for a stop, takes the agent's
// answer on the agent's goroutine; it must not block (the daemon's puts
// the answer in the daemon's own mailbox: see Daemon.askAgents).
type agentCtl struct {
	op      agentOp
	reason  string
	timeout time.Duration
	// opCancel's message and whether it may interrupt a turn.
	id        string
	interrupt bool
	// opSwitch's thread.
	sw     threadSwitch
	answer func(agentAnswer)
}

// agentAnswer is an agent's answer to an agentCtl.
type agentAnswer struct {
	// err is why a reset failed, errNotFailed for a retry of an agent
	// that was not failed, errAgentStopped when the agent had stopped.
	err error
	// cancel answers opCancel.
	cancel control.CancelResult
	// pending says that the request waits for a git or ssh step of the agent:
	// it is applied once the step has ended, and status shows it meanwhile.
	pending bool
}

// errAgentStopped answers a request to an agent whose goroutine has ended.
var errAgentStopped = errors.New("the agent is stopped")

func newAgent(d *Daemon, def team.Agent, box *inbox.Box) (*agent, error) {
	a := &agent{
		agentEnv: agentEnv{emit: d.events.Append, opts: &d.opts, cfg: d.cfg, layout: d.layout,
			gate: d.gate, budgets: d.budgets, ledger: d.ledger, store: d.store, journal: d.journal, crew: d},
		def: def, box: box, log: d.log.Named(def.Name),
		kick: make(chan struct{}, 1), ctl: newMailbox[agentCtl](), done: make(chan struct{}),
		supervision: supervision{backoff: d.opts.RespawnMin},
		placement:   placement{host: here{local: d.localHost}},
		acct: accountRoom{agent: def.Name, log: d.log.Named(def.Name), account: dispatch.AgentHome(def, d.shimEnviron()),
			env: accountEnv{quota: d.quota, net: &d.net, crew: d, emit: d.events.Append, log: d.log}},
	}
	a.worktree = worktree{agent: def.Name, log: a.log, events: d.events.Append, tell: a.tell}
	a.st.Name = def.Name
	if err := project.LoadJSON(d.layout, project.AgentStateName(def.Name), &a.st); err != nil {
		return nil, err
	}
	a.st.Name = def.Name
	a.snap = agentSnap{state: agentSpawning, st: a.st, account: a.acct.account}
	return a, nil
}

// poke asks the agent to look at its inbox; it never blocks.
func (a *agent) poke() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// snapshot returns the agent's status line.
func (a *agent) snapshot() agentSnap {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.snap
}

// showNet has status show n, the agent's wait for the network.
func (a *agent) showNet(n netShown) {
	a.setSnap(func(s *agentSnap) { s.netSince, s.netMessage = n.since, n.message })
}

func (a *agent) setSnap(f func(*agentSnap)) {
	a.mu.Lock()
	f(&a.snap)
	a.snap.st = a.st
	a.mu.Unlock()
}

// run supervises the agent until it is stopped. Before it returns, its shim
// has exited and no step of its runs.
//
// run never waits for git (or ssh, for a clone on a host): a step runs on
// a goroutine of its own (startStep), and while it runs, run looks only at
// its end, at the daemon's requests and at the end of ctx. A request is
// then acknowledged at once as pending and applied, in order, once the
// step has ended (takeCtl); the shim's events, timers and the inbox wait,
// as they would for git run here, so the order of what the agent does is
// the order it would have without the step.
func (a *agent) run(ctx context.Context) {
	defer close(a.done)
	defer a.recalling.Wait()
	defer a.publishWork()
	defer a.refuseLeft()
	defer a.crew.turnSlots().Leave(a.def.Name) // a slot held or asked for goes to the next
	a.recover()
	a.startShim()
	ping := time.NewTicker(a.opts.PingInterval)
	defer ping.Stop()
	ended := ctx.Done()
	for !a.finished || a.step != nil {
		a.publishWork()
		if a.step != nil {
			select {
			case apply := <-a.step:
				a.step = nil
				// The shim's pong, if any, waited unread meanwhile: the
				// next ping asks again.
				a.pongDue = nil
				apply()
			case <-a.ctl.ready():
				a.takeCtl()
			case <-ended:
				ended = nil
				a.deferred = append(a.deferred, agentCtl{op: opEnd})
			}
			continue
		}
		if len(a.deferred) > 0 {
			a.applyDeferred()
			continue
		}
		select {
		case <-a.kick:
			a.dispatch()
		case m, ok := <-a.events:
			if !ok {
				a.events = nil
				a.shimExited()
				continue
			}
			a.handle(m)
		case <-a.respawn:
			a.respawn = nil
			if a.failed {
				a.failed, a.probation, a.backoff = false, true, a.opts.RespawnMin
				a.log.Info("Retrying the failed agent", "failures", a.failures)
			}
			if !a.stopping {
				a.startShim()
			}
		case <-timerC(a.retry):
			a.retry = nil
			a.dispatch()
		case <-timerC(a.recordRetry):
			a.retryRecord()
		case p := <-a.prepDone:
			a.workspacePrepared(p)
		case <-ping.C:
			a.supervision.ping(a.p, a.opts.PongTimeout)
		case <-a.pongDue:
			a.pongDue = nil
			a.log.Error("Shim did not answer a ping, killing it", "timeout", a.opts.PongTimeout)
			a.emit(eventlog.Event{Type: eventlog.EvWedged, Agent: a.def.Name, Detail: fmt.Sprintf("no pong within %s", a.opts.PongTimeout)})
			if a.p != nil {
				go a.p.Kill()
			}
		case <-a.ctl.ready():
			a.takeCtl()
		case <-ended:
			ended = nil
			a.end()
		}
	}
}

// end stops the agent at the end of run's context: its shim is killed (run
// ends once it has exited), or, with none, what its worktree holds is
// committed and run ends.
func (a *agent) end() {
	if a.p != nil {
		a.stopping = true
		a.p.Send(protocol.Kill{})
		return
	}
	a.stopPreparing()
	a.commitWorkspace(nil, true, "work in progress when the team stopped", func() { a.finished = true })
}

// recover puts messages a previous daemon left in flight back in the
// queue; they are redelivered first, marked as redeliveries.
func (a *agent) recover() {
	msgs, errs := a.box.Recover()
	for _, err := range errs {
		a.warn("recover inbox", err)
	}
	for _, m := range msgs {
		if err := a.box.Requeue(m.ID); err != nil {
			a.warn("requeue "+m.ID, err)
			continue
		}
		a.emit(eventlog.Event{Type: eventlog.EvRequeued, Agent: a.def.Name, Message: m.ID, Detail: "in flight when the daemon stopped"})
	}
	a.reconcileTurns()
}

// reconcileTurns sets TurnsCompleted to the number of outcomes recorded as
// completed. The outcome is written before the state file, so a daemon
// killed between the two leaves a counter one short; the recorded outcomes
// are the truth.
func (a *agent) reconcileTurns() {
	n := 0
	if err := a.box.Outcomes(func(_ string, o inbox.Outcome) {
		if o.Status == inbox.StatusCompleted {
			n++
		}
	}); err != nil {
		a.warn("count recorded outcomes", err)
	}
	if n == a.st.TurnsCompleted {
		return
	}
	a.log.Info("Turns completed reconciled with the recorded outcomes", "state", a.st.TurnsCompleted, "outcomes", n)
	a.st.TurnsCompleted = n
	a.saveState()
	a.setSnap(func(*agentSnap) {})
}

// shimConfig is the agent's shim configuration. It errs when the agent's
// permission profile cannot be made (withPermissions).
func (a *agent) shimConfig() (shimconfig.Config, error) {
	c := CodexConfig(a.def)
	if a.def.Codex.Sandbox == codex.SandboxWorkspaceWrite {
		// `batty send` and `batty merge` from the agent's shell write
		// requests into its outbox, the one directory of batty's that its
		// sandbox may write (the inboxes and the state are the daemon's).
		c.Exec.AddDirs = []string{outbox.Path(a.layout.Dir, a.def.Name)}
	}
	// The shim makes the outbox and relays its requests, stamped as this
	// agent's.
	c.RelayInboxes = true
	// Its batty commands find the team file through agentenv.TeamFile,
	// not the state directory (on a host: the roster there).
	c.Env = append(c.Env, agentenv.Dir+"="+a.layout.Dir, agentenv.Project+"="+a.layout.Root(), agentenv.TeamFile+"="+a.cfg.Path)
	if a.acct.placed() {
		// The account the agent is placed on (followAccount), not the
		// role's first.
		c.Env = codex.WithHome(c.Env, a.acct.account)
	}
	if a.ws != nil {
		// Codex works in the agent's worktree: its working directory and
		// the writable root of its sandbox.
		c.Cwd = a.ws.repo.AgentDir(a.def.Name, a.def.Cwd)
		c.Branch, c.Base = workspaces.Branch(a.def.Name), a.ws.base
	}
	if a.st.ThreadID == "" && a.st.ForkFrom != "" {
		// A fork owed: the first turn makes it.
		c.ForkFrom = a.st.ForkFrom
	}
	if a.st.ThreadID != "" {
		u := a.st.ThreadUsage
		c.ThreadID = a.st.ThreadID
		c.ThreadUsage = codex.Usage{InputTokens: u.Input, CachedInputTokens: u.CachedInput, OutputTokens: u.Output, ReasoningOutputTokens: u.ReasoningOutput}
	}
	t := a.cfg.Timeouts
	c.Transcript, c.TranscriptRoot = a.layout.Transcript(a.def.Name), a.layout.StateRoot()
	c.TurnTimeout, c.IdleTimeout, c.NetworkWait = t.Turn, t.Idle, t.NetworkWait
	here := host.Rooms{Outbox: outbox.Path(a.layout.Dir, a.def.Name), Deny: a.crew.deniedDirs(),
		Env: append(slices.Clone(a.crew.shimEnviron()), c.Env...)}
	c, err := shimConfigOn(a.def, c, a.where(), here)
	if err != nil {
		return c, err
	}
	a.crew.placeShared(a.def, a.where(), &c)
	if p := c.Exec.Permissions; p != nil && c.AppServerSocket != "" {
		p.Deny = append(p.Deny, filepath.Dir(c.AppServerSocket))
	}
	return c, nil
}

// shimConfigOn is c, agent def's shim configuration here, for its shim on
// host on: as the host sees it (Host.ShimConfig), under the agent's
// permission profile (agentPermissions) made of its rooms there
// (Host.Rooms of here, its rooms here: its outbox, the directories of
// batty's, ssh's and tmux's denied, the environment its codex starts
// with) and finished as the host finishes it (Host.Permit). A
// workspace-write agent's workspace (c.Cwd) is writable; the role's config
// and extra arguments lose the sandbox settings the profile took over.
// It errs when the profile cannot be made. Pure.
func shimConfigOn(def team.Agent, c shimconfig.Config, on host.Host, here host.Rooms) (shimconfig.Config, error) {
	c = on.ShimConfig(c)
	r := on.Rooms(def.Name, here)
	cs := def.Codex
	p, config, args, err := agentPermissions(rooms{Cwd: c.Cwd, Outbox: r.Outbox, Deny: r.Deny, Codex: cs, Env: r.Env, There: r.There})
	if err != nil {
		return c, fmt.Errorf("agent %s's permission profile on host %s: %w", def.Name, cmp.Or(on.Name(), team.LocalHost), err)
	}
	if p == nil {
		return c, nil
	}
	cs.Config, cs.Args = config, args
	base := CodexConfig(team.Agent{Name: def.Name, Codex: cs})
	c.Exec.Config, c.Exec.ExtraArgs = base.Exec.Config, base.Exec.ExtraArgs
	on.Permit(&c, p, def.Codex.AllowSockets)
	return c, nil
}

// CodexConfig is how agent def runs codex, as the daemon gives it to the
// agent's shim: name, binary, working directory, model, effort, sandbox,
// approval policy, config, extra arguments, environment (CODEX_HOME
// included; sent in the handshake, never on a command line),
// instructions, context window and pressure threshold. It leaves out what
// belongs to a running team (thread, transcript, replies, inboxes, queue,
// timeouts). It is a pure function; `batty fanout --role` uses it too.
func CodexConfig(def team.Agent) shimconfig.Config {
	c := def.Codex
	exec := codex.ExecOptions{
		Model: c.Model, ReasoningEffort: c.ReasoningEffort, Sandbox: c.Sandbox, ApprovalPolicy: c.ApprovalPolicy,
		ExtraArgs: c.Args, SkipGitRepoCheck: true,
	}
	for _, k := range sortedKeys(c.Config) {
		exec.Config = append(exec.Config, k+"="+c.Config[k])
	}
	var env []string
	for _, k := range sortedKeys(c.Env) {
		env = append(env, k+"="+c.Env[k])
	}
	if c.CodexHome != "" {
		env = append(env, "CODEX_HOME="+c.CodexHome)
	}
	return shimconfig.Config{
		Agent: def.Name, Cwd: def.Cwd, CodexBin: c.Bin, Exec: exec, Env: env, Instructions: def.Instructions,
		ContextWindow: int64(c.Window()), PressurePct: float64(c.Handoff()), Runtime: c.Runtime,
		RuntimeIdle: c.RuntimeIdle,
	}
}

// spawnOptions is how the agent's shim starts: here, or on its host
// through the daemon's transport, with the batty installed there, the
// configuration as the host sees it and a handshake that allows for the
// connection. It errs for a host where batty is not installed (yet).
func (a *agent) spawnOptions() (shimclient.SpawnOptions, error) {
	o := shimclient.SpawnOptions{
		Path: a.opts.ShimCommand[0], Args: a.opts.ShimCommand[1:], Env: a.opts.ShimEnv,
		Stderr: a.opts.ShimLog, Reaper: a.crew.subreaper(),
	}
	var err error
	if o.Config, err = a.shimConfig(); err != nil {
		return o, err
	}
	return a.where().Spawn(context.Background(), o)
}

// where is the host the agent runs on, as the one Host interface.
func (a *agent) where() host.Host { return a.host.on() }

// spawn starts the shim; a failure counts as a crash. It starts off
// run's goroutine (a step, see startStep: here the handshake, on a host
// ssh too), attached as every worker is (reach.attach).
func (a *agent) spawn() {
	state := agentSpawning
	if a.host.isDown() {
		// A try at a host known to be down: it stays unreachable until a
		// shim starts there.
		state = agentUnreachable
	}
	a.setSnap(func(s *agentSnap) { s.state = state })
	a.followAccount()
	o, err := a.spawnOptions()
	if err != nil {
		a.spawned(nil, err)
		return
	}
	crew, at := a.crew, a.host
	transcript, root, log := a.layout.Transcript(a.def.Name), a.layout.StateRoot(), a.log
	a.startStep(func() func() {
		w, err := crew.startWorker(context.Background(), o)
		if err == nil {
			w = at.attach(w, transcript, root, log)
		}
		return func() { a.spawned(w, err) }
	})
}

// spawned applies the start of the shim: p, or the error it failed with.
func (a *agent) spawned(p Worker, err error) {
	if err != nil {
		a.log.Error("Shim did not start", "error", err)
		a.emit(eventlog.Event{Type: eventlog.EvShimExited, Agent: a.def.Name, Detail: "spawn failed: " + err.Error()})
		a.crashedOrUnreachable()
		return
	}
	// Events end at the first error of the channel: io.EOF once the shim
	// exited, or a broken channel (an undecodable frame, a frame cut
	// short), which closes it; either way the shim is then handled as gone
	// (shimExited).
	a.p, a.events, a.spawnedAt, a.ready = p, p.Events(), time.Now(), true
	a.log.Info("Shim started", "pid", p.Pid(), "thread", a.st.ThreadID)
	a.host.reached()
	a.setSnap(func(s *agentSnap) { s.shimPID = p.Pid(); s.state = string(protocol.StateStarting) })
	a.emit(eventlog.Event{Type: eventlog.EvShimStarted, Agent: a.def.Name, Data: eventlog.ShimStarted{PID: p.Pid(), ThreadID: a.st.ThreadID}})
	a.poke()
}

// shimExited handles the end of the shim's event stream; run ends once
// it is handled when the agent is stopping. A shim that broke the protocol is
// handled as one that crashed: its channel is closed (which makes a real
// shim stop), it gets 15 s to exit, and it is respawned. What the turn
// had edited is committed first (off run's goroutine), then the rest
// is done (shimGone).
func (a *agent) shimExited() {
	p := a.p
	a.p, a.ready, a.pongDue = nil, false, nil
	// Its turn, if any, ended with it.
	a.endTurn()
	// The channel is closed already (the client closes it when its events
	// end); Close releases the client once the shim has exited.
	defer p.Close()
	broken := ""
	if err := p.Err(); err != nil && !errors.Is(err, io.EOF) {
		broken = "control channel broken: " + err.Error()
		a.log.Error("Shim broke the control channel, handling it as crashed", "pid", p.Pid(), "error", err)
	}
	select {
	case <-p.Done():
	case <-time.After(15 * time.Second):
		// It closed its socket but does not exit (its own cleanup is bounded
		// by 5 s): it is wedged.
		a.log.Error("Shim closed its channel but did not exit, killing it", "pid", p.Pid())
		p.Kill()
	}
	code := p.ExitCode()
	if !a.stopping || code != 0 {
		// A shim cleans up after itself unless it was killed; then what
		// its codex's model detached is now the daemon's to kill.
		a.crew.killOrphans(a.def.Name + "'s shim exited")
	}
	// Whatever the turn had edited is kept before anything else happens.
	why := "work in progress when the shim exited"
	if a.stopping {
		why = "work in progress when the team stopped"
	}
	a.commitWorkspace(a.inflight, true, why, func() { a.shimGone(code, broken) })
}

// shimGone ends what shimExited began, once the worktree is committed:
// the message in flight back in the queue, and the shim started again
// unless the agent is stopping (then run ends).
func (a *agent) shimGone(code int, broken string) {
	if a.inflight != nil {
		// The shim died with our message: it goes back to the queue and is
		// redelivered (marked as such) to the next shim.
		a.requeueInflight("shim exited mid-turn")
	}
	a.showNet(a.acct.leaveNetHold())
	a.setSnap(func(s *agentSnap) { s.shimPID = 0 })
	if a.acct.switching && !a.stopping {
		// Stopped to move to another account: started again at once.
		a.acct.switching = false
		a.log.Info("Shim stopped for an account switch", "exit", code)
		a.startShim()
		return
	}
	a.acct.switching = false
	if a.stopping {
		a.log.Info("Shim stopped", "exit", code)
		a.setSnap(func(s *agentSnap) { s.state = agentStopped })
		a.finished = true
		return
	}
	a.log.Error("Shim exited unexpectedly", "exit", code)
	a.emit(eventlog.Event{Type: eventlog.EvShimExited, Agent: a.def.Name, Detail: broken, Data: eventlog.ShimExited{ExitCode: code}})
	// It ran for a while: whatever failed before is over.
	a.ranLong(a.opts.CrashWindow, a.opts.RespawnMin)
	a.crashedOrUnreachable()
}

// reset archives the current thread so the next message starts a fresh
// one, and gives then the result. With no turn in flight, what the
// worktree holds is committed first (a turn in flight commits its own
// work when it ends): then runs once that commit, off run's goroutine,
// has ended (see resetWaits).
func (a *agent) reset(reason string, then func(error)) {
	if a.inflight != nil {
		then(a.resetThread(reason))
		return
	}
	a.commitWorkspace(nil, true, "work in progress when the thread was reset", func() { then(a.resetThread(reason)) })
}

// resetWaits reports whether a reset now would wait for a commit of the
// worktree (see reset).
func (a *agent) resetWaits() bool { return a.inflight == nil && a.commits() }

// resetThread archives the current thread and tells the shim.
func (a *agent) resetThread(reason string) error {
	if reason == "" {
		reason = "reset by user"
	}
	old := a.st.ThreadID
	a.st.Archive(reason, time.Now().UTC())
	// A thread reset by hand starts clean: no handoff, no fork owed.
	a.st.Handoff, a.st.ContextRetry, a.st.ForkFrom = nil, nil, ""
	if a.failed {
		a.st.SetError("", "", time.Time{})
		a.retryNow()
	}
	// The human who asked for the reset hears of a refused save.
	err := a.writeState()
	a.stateSaved(err)
	if err != nil {
		return err
	}
	if a.p != nil {
		// The thread left is archived in Codex's store too, so that
		// Codex's own pickers agree.
		a.p.Send(protocol.SwitchThread{Archive: true, Reason: reason})
	}
	a.emit(eventlog.Event{Type: eventlog.EvThreadReset, Agent: a.def.Name, Detail: reason, Data: eventlog.ThreadReset{Archived: old}})
	return nil
}

// saveState writes the agent's state file and surfaces the outcome
// (stateSaved): a refused save is logged, recorded as a warning event and
// shown as the agent's last_error in status until a save succeeds, and
// the state stays in memory for the next save to retry. The caller goes
// on either way; one that must not go on after a refused save calls
// writeState and stateSaved itself.
func (a *agent) saveState() { a.stateSaved(a.writeState()) }

// writeState writes the agent's state file, stamped with the time now.
func (a *agent) writeState() error {
	a.st.UpdatedAt = time.Now().UTC()
	if err := project.SaveJSON(a.layout, project.AgentStateName(a.def.Name), a.st); err != nil {
		return fmt.Errorf("agent state not saved: %w", err)
	}
	return nil
}

// stateSaved surfaces the outcome of a save, err from writeState: a
// failure in the log, the event log and status (as last_error); a success
// clears the last_error of an earlier failure.
func (a *agent) stateSaved(err error) {
	saveErr := ""
	if err != nil {
		a.log.Error("Saving agent state failed", "error", err)
		a.emit(eventlog.Event{Type: eventlog.EvWarning, Agent: a.def.Name, Detail: err.Error()})
		saveErr = err.Error()
	}
	a.setSnap(func(s *agentSnap) { s.saveErr = saveErr })
}

func (a *agent) warn(what string, err error) {
	a.log.Warn("Inbox problem", "what", what, "error", err)
	a.emit(eventlog.Event{Type: eventlog.EvWarning, Agent: a.def.Name, Detail: what + ": " + err.Error()})
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
