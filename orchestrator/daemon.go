// Package orchestrator is the batty daemon: it runs one shim per agent of a
// team.yaml, delivers each agent's durable inbox one message at a time,
// records every outcome durably, supervises the shims, gates dispatch on
// quota and auth problems, and answers the CLI on a control socket.
//
// Everything is event-driven: inboxes are watched with fsnotify (a slow
// rescan is only a safety net), shims report over their sockets, and timers
// drive respawn backoff, pings and quota resumption.
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/alerthook"
	"github.com/battyhq/batty/alerts"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/dispatch"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/schedule"
	"github.com/battyhq/batty/searchindex"
	"github.com/battyhq/batty/slots"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/telemetry"
	"github.com/battyhq/batty/usage"
	"github.com/battyhq/batty/workspaces"
	"github.com/battyhq/batty/writable"
)

// Daemon runs one team. Create it with New, then call Run once.
type Daemon struct {
	cfg    *team.Config
	layout project.Layout
	opts   Options
	log    hclog.Logger
	startStamp

	store    *inbox.Store
	humanBox *inbox.Box
	events   *eventlog.Log
	observe  func(eventlog.Event) // sees every event: the alerts' fan-out, Options.OnEvent, AddObserver's
	ledger   *usage.Ledger        // every finished turn's usage, the accounts' rate-limit windows
	journal  *searchindex.Keeper  // every finished turn's conversation (the turn journal) and its search index
	alerts   *alerts.Fanout       // every alert to every sink: on_alert's and AddAlertSink's
	hook     *alerthook.Hook      // the on_alert sink; nil without on_alert
	sched    *schedule.Runner     // nil without schedules
	tel      *telemetry.Telemetry // the metrics and traces; nil when off

	roster
	roleQueues
	turnHolds
	worktreeRepo

	pendingAsks
	ready chan struct{} // closed once the control socket accepts requests
	// local carries the control requests of the daemon's own process (the
	// console's: ask) to Run's goroutine; stopped is closed as Run returns.
	local   chan control.Conn
	stopped chan struct{}
	daemonProcs
}

// startStamp is what the daemon knew of its run as it started: when, and
// of its team's files, for status and `batty restart`.
type startStamp struct {
	started  time.Time
	teamHash string         // teamFingerprint of the team's files when the daemon started
	trusted  []team.Setting // team.TrustedSettings of cfg, for `batty restart`
}

// roster is the team's agents and where they run.
type roster struct {
	agents  []*agent // in the team file's order
	byName  map[string]*agent
	healths healthSet     // one per distinct way the agents run Codex
	hosts   []*remoteHost // the hosts agents run on, in file order
}

// daemonProcs are the daemon's hold on its project and on the processes
// of its team: nothing outlives the team.
type daemonProcs struct {
	lock   *os.File       // the project's lock (project.AcquireLock)
	reaper *reap.Reaper   // nil unless Options.Subreaper
	procs  *teamProcs     // set by Run before the first shim starts
	shared *sharedServers // set by Run before the first shim starts (codex.app_server: per-account)
}

// worktreeRepo is the repository of the team's worktree agents and its
// merge queue.
type worktreeRepo struct {
	// repo is the project's repository when the team has worktree agents
	// (nil otherwise), base the branch their worktrees start from; both
	// set by Run before the first agent runs.
	repo   *workspaces.Repo
	base   string
	lander *lander // the merge queue; nil without worktree agents
}

// turnHolds are what may hold the team's agents back from a new turn,
// each shared by the agents (decideGate reads them all).
type turnHolds struct {
	gate    *dispatch.Gate      // the team's dispatch gate (batty pause, a login)
	net     dispatch.NetHolds   // network holds per account (see dispatch.NetHolds)
	quota   *dispatch.QuotaBook // the accounts' usage-limit pauses and probes
	budgets *budgetBook         // the token budgets (team.yaml budgets)
	// slots caps the turns running at once (limits, a host's
	// concurrent_turns); nil when the team caps nothing.
	slots *slots.Pool
}

// New prepares a daemon for the team in cfg, with its state under layout.
// It takes the project's lock: a second daemon for the same project fails
// with an error saying where the first one runs.
func New(cfg *team.Config, layout project.Layout, opts Options) (*Daemon, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkBoundary(cfg, layout); err != nil {
		return nil, err
	}
	if err := layout.MkdirAll(); err != nil {
		return nil, err
	}
	lock, err := project.AcquireLock(layout)
	if err != nil {
		return nil, err
	}
	d := &Daemon{cfg: cfg, layout: layout, opts: opts, log: opts.Logger, ready: make(chan struct{}),
		local: make(chan control.Conn), stopped: make(chan struct{}),
		startStamp:  startStamp{started: time.Now(), teamHash: teamFingerprint(cfg), trusted: team.TrustedSettings(cfg)},
		roster:      roster{byName: map[string]*agent{}},
		roleQueues:  roleQueues{roles: map[string]*inbox.Box{}, routeKick: make(chan struct{}, 1)},
		pendingAsks: pendingAsks{answers: newMailbox[func()](), asking: map[*asking]struct{}{}},
		daemonProcs: daemonProcs{lock: lock}}
	if err := d.init(); err != nil {
		if d.events != nil {
			d.events.Close()
		}
		if d.ledger != nil {
			d.ledger.Close()
		}
		project.ReleaseLock(lock)
		return nil, err
	}
	return d, nil
}

// checkBoundary refuses a team whose state directory (layout.Dir, as
// written or with the links of the directory holding it resolved) lies where an agent may write
// (writable.Roots: the project, the roles' cwds, the worktrees, verify's
// and setup's caches, the workspace-write agents' writable roots, /tmp and
// $TMPDIR), or whose named programs an agent could replace
// (writable.CheckTeam).
func checkBoundary(cfg *team.Config, layout project.Layout) error {
	roots := writable.Dirs(writable.Resolve(writable.Roots(cfg, layout, writable.Env{TmpDir: os.Getenv("TMPDIR")})))
	if err := project.CheckStateDir(layout.Dir, roots); err != nil {
		return err
	}
	// The directory that holds it may be reached through links; a link at
	// the state directory itself is refused where it is opened.
	if real, err := project.RealPath(layout.StateRoot()); err == nil && real != layout.StateRoot() {
		real = filepath.Join(real, filepath.Base(layout.Dir))
		if err := project.CheckStateDir(real, roots); err != nil {
			return err
		}
	}
	for _, h := range cfg.Hosts {
		if err := hosts.CheckProjectDir(h.Name, h.ProjectDir(layout.Root())); err != nil {
			return fmt.Errorf("%s:%d: %w", cfg.Path, h.Line, err)
		}
	}
	return writable.CheckTeam(cfg, layout, os.Getenv)
}

func (d *Daemon) init() error {
	var err error
	if d.store, err = d.layout.OpenInboxes(); err != nil {
		return err
	}
	d.store.Grace = d.opts.InboxGrace
	if d.humanBox, err = d.store.Box(team.Human); err != nil {
		return err
	}
	if d.gate, err = dispatch.NewGate(d.layout); err != nil {
		return err
	}
	env := d.shimEnviron()
	if d.quota, err = dispatch.NewQuotaBook(d.cfg, d.layout, env, d.opts.quotaPolicy(d.cfg.Quota), d.opts.quotaJitter, false); err != nil {
		return err
	}
	if err := d.migrateQuotaGate(); err != nil {
		return err
	}
	if d.events, err = eventlog.Open(d.layout, func(err error) { d.log.Error("Event log", "error", err) }); err != nil {
		return err
	}
	d.observe = d.opts.OnEvent
	if d.ledger, err = usage.Open(d.layout); err != nil {
		return err
	}
	d.journal = searchindex.NewKeeper(d.layout, searchindex.KeeperOptions{OnSync: d.indexSynced})
	if d.budgets, err = newBudgetBook(d.cfg, d.layout, d.ledger.TakeOpened(), d.opts.BudgetClock, d.opts.BudgetLocation); err != nil {
		return err
	}
	d.alerts = alerts.NewFanout(d.cfg.Name, nil)
	if d.hook = d.newAlertHook(); d.hook != nil {
		d.alerts.Add(d.hook)
	}
	d.observe = eventlog.Chain(d.alerts.Event, d.opts.OnEvent)
	d.events.SetObserver(d.observe)
	if err := d.initTelemetry(); err != nil {
		return err
	}
	root, err := d.layout.OpenDir("", false)
	if err != nil {
		return err
	}
	err = root.WriteFile(project.TeamRefName, []byte(d.cfg.Path+"\n"), 0o600)
	root.Close()
	if err != nil {
		return err
	}
	for _, def := range d.cfg.Agents() {
		box, err := d.store.Box(def.Name)
		if err != nil {
			return err
		}
		box.Limit = d.cfg.BacklogLimit
		a, err := newAgent(d, def, box)
		if err != nil {
			return err
		}
		a.threadFromLedger()
		d.agents = append(d.agents, a)
		d.byName[def.Name] = a
	}
	d.slots = d.newSlots()
	d.initHosts()
	d.initMovedWorkspaces()
	d.initHealth()
	for _, r := range d.cfg.Roles {
		if r.Instances > 1 {
			box, err := d.store.Box("@" + r.Name)
			if err != nil {
				return err
			}
			box.Limit = d.cfg.BacklogLimit
			d.roles[r.Name] = box
		}
	}
	d.newScheduler()
	return nil
}

// AddAlertSink has s get the team's alerts (eventlog.AlertFor decides,
// once, which events are), besides on_alert, and closes it as Run returns.
// Call it before Run.
func (d *Daemon) AddAlertSink(s alerts.Sink) { d.alerts.Add(s) }

// AddObserver has f see every event written to the event log too, after
// the alerts' fan-out and Options.OnEvent, from the appending goroutine (f must
// not block). Call it before Run: the console, made once the daemon is,
// follows the team from its first event on.
func (d *Daemon) AddObserver(f func(eventlog.Event)) {
	d.observe = eventlog.Chain(d.observe, f)
	d.events.SetObserver(d.observe)
}

// Ready is closed once the daemon accepts control requests.
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

// Run runs the team until ctx ends or a stop request arrives, then stops
// every shim (letting turns finish for the team's shutdown timeout) and
// releases the lock. It returns when nothing it started is running.
func (d *Daemon) Run(ctx context.Context) error {
	defer close(d.stopped)
	defer project.ReleaseLock(d.lock)
	defer d.events.Close()
	defer d.ledger.Close()
	// The search index's one writer, until every agent has stopped (the
	// deferred calls run in reverse: this one after theirs).
	indexCtx, stopIndex := context.WithCancel(context.Background())
	indexed := make(chan struct{})
	go func() {
		defer close(indexed)
		if err := d.journal.Run(indexCtx); err != nil {
			d.log.Warn("Search index: not kept this run (`batty search` reads the turn journal)", "error", err)
		}
	}()
	defer func() { stopIndex(); <-indexed }()
	defer d.serveTelemetry()()
	owners := d.watchedInboxes()
	w, err := fsnotify.NewWatcher()
	if err == nil {
		defer w.Close()
		for dir := range owners {
			if err = w.Add(dir); err != nil {
				err = fmt.Errorf("watch inbox %s: %w", dir, err)
				break
			}
		}
	}
	var fileEvents <-chan fsnotify.Event
	var fileErrs <-chan error
	rescanEvery, warning := inboxWatch(err, d.opts.Rescan)
	if warning != "" {
		d.log.Warn("No file events for the inboxes", "error", err, "rescan", rescanEvery)
		d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Detail: warning})
	} else {
		fileEvents, fileErrs = w.Events, w.Errors
	}
	d.trackInboxes()
	ln, err := control.Listen(d.layout)
	if err != nil {
		return err
	}
	defer control.RemoveSocket(d.layout)
	if d.opts.Subreaper {
		if err := reap.BecomeSubreaper(); err != nil {
			ln.Close()
			return err
		}
		d.reaper = reap.New()
		reapCtx, stopReaping := context.WithCancel(context.Background())
		reaped := make(chan struct{})
		go func() { defer close(reaped); d.reaper.Run(reapCtx) }()
		defer func() {
			d.killOrphans("daemon exit")
			stopReaping()
			<-reaped
		}()
	}
	// Requests are served once the reaper is set up: the judge of who
	// asks reads it. A request that changes anything is refused to a
	// process inside an agent.
	ctl := make(chan control.Conn)
	done := make(chan struct{})
	var serveWG sync.WaitGroup
	serveWG.Add(1)
	go func() { defer serveWG.Done(); control.Serve(ln, ctl, done, d.insider) }()
	defer func() { ln.Close(); close(done); serveWG.Wait() }()
	// What an earlier run left (killed with its shims) goes before the
	// first shim starts; what this run leaves, once the last has exited.
	var stale int
	d.procs, stale = openTeamProcs(d.layout, d.log, d.opts.NoCgroup)
	if n := stale + d.procs.sweepMarked("daemon start"); n > 0 {
		d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Detail: fmt.Sprintf("killed %d processes an earlier run of the team left running", n)})
	}
	defer d.procs.stop()
	// Shared app-servers end after the last shim, before the sweep.
	d.shared = newSharedServers(d)
	defer d.closeShared()
	if d.hook != nil {
		// After the reaper: it starts the commands.
		d.hook.Start()
	}
	defer func() {
		// On the way out the alerts of the stop still go out, for at most
		// one time limit of on_alert, before the team's leftovers are
		// swept.
		ctx, cancel := context.WithTimeout(context.Background(), d.alertGrace())
		defer cancel()
		d.alerts.Close(ctx)
	}()
	// The worktree agents' repository, before any agent runs.
	if d.repo, d.base, err = d.openRepo(ctx); err != nil {
		return err
	}
	for _, a := range d.agents {
		a.ws = newAgentWorkspace(d, a)
		// What an earlier run left may still come, until the agent's
		// goroutine says otherwise (publishWork).
		a.workOpen = a.ws != nil
	}
	if d.repo != nil {
		if d.lander, err = d.newLander(); err != nil {
			return err
		}
		dir := filepath.Join(d.lander.box.Dir, "new")
		if fileEvents != nil {
			// Without file events (no watcher: inotify's limits) the
			// rescan pokes the queue.
			if err := w.Add(dir); err != nil {
				return fmt.Errorf("watch inbox %s: %w", dir, err)
			}
		}
		owners[dir] = func(string) { d.lander.poke() }
	}
	// Before any agent recovers its inbox or anything is routed.
	d.reconcile()
	if d.sched != nil {
		// After reconciling: a run left running is looked up in the
		// inboxes as they stay.
		if err := d.sched.Load(); err != nil {
			return err
		}
	}
	// batty on the hosts, then every agent's Codex, before the daemon
	// says it is ready, so `batty start` and the first status already show
	// a parked agent. The hosts' shared connections end once the last shim
	// has stopped.
	d.installHosts(ctx)
	defer d.closeHosts()
	d.checkAll(ctx)
	d.checkSpareAccounts(ctx)
	// The healths' goroutines end as Run returns, once the agents have
	// stopped.
	defer d.healths.start()()
	agentCtx, cancelAgents := context.WithCancel(context.Background())
	defer cancelAgents()
	// Every return below stops the agents first: what they answered last,
	// and what waits for an answer, is answered then.
	defer d.endAsking()
	var wg sync.WaitGroup
	for _, a := range d.agents {
		wg.Add(1)
		go func(a *agent) { defer wg.Done(); a.run(agentCtx) }(a)
	}
	d.log.Info("Daemon started", "team", d.cfg.Name, "agents", len(d.agents), "pid", os.Getpid())
	d.events.Append(eventlog.Event{Type: eventlog.EvDaemonStarted, Data: eventlog.DaemonStarted{PID: os.Getpid(), Team: d.cfg.Name}})
	close(d.ready)
	d.routeAll()
	if d.lander != nil {
		landCtx, stopLanding := context.WithCancel(context.Background())
		landDone := make(chan struct{})
		go func() { defer close(landDone); d.lander.run(landCtx) }()
		defer func() { stopLanding(); <-landDone }()
	}
	if d.sched != nil {
		schedCtx, stopSched := context.WithCancel(context.Background())
		schedDone := make(chan struct{})
		go func() {
			defer close(schedDone)
			if err := d.sched.Run(schedCtx); err != nil {
				d.log.Error("Schedules stopped", "error", err)
			}
		}()
		defer func() { stopSched(); <-schedDone }()
	}

	rescan := time.NewTicker(rescanEvery)
	defer rescan.Stop()
	quotaTimer := d.armQuota(nil)
	budgetTimer := d.armBudget(nil)
	defer func() {
		if budgetTimer != nil {
			budgetTimer.Stop()
		}
	}()
	for {
		select {
		case ev, ok := <-fileEvents:
			if !ok {
				d.stopAgents(d.cfg.Timeouts.Shutdown, &wg)
				return errors.New("inbox watcher closed unexpectedly; all agents were stopped")
			}
			if f, ok := owners[filepath.Dir(ev.Name)]; ok {
				f(filepath.Base(ev.Name))
			}
		case err := <-fileErrs:
			d.log.Warn("Inbox watcher error, rescanning", "error", err)
			d.rescan()
		case <-rescan.C:
			d.rescan()
		case <-d.routeKick:
			d.routeAll()
		case <-timerC(d.routeTimer):
			d.routeTimer = nil
			d.routeAll()
		case <-d.gate.Changed():
			if d.gate.Open() {
				d.pokeAll()
			}
		case <-d.quota.Changed():
			quotaTimer = d.armQuota(quotaTimer)
		case <-timerC(quotaTimer):
			quotaTimer = nil
			d.startProbes(time.Now())
			quotaTimer = d.armQuota(nil)
		case <-d.budgets.changed:
			budgetTimer = d.armBudget(budgetTimer)
		case <-budgetC(budgetTimer):
			// A reached budget's window rolled over: its agents go on.
			budgetTimer = nil
			d.pokeAll()
			budgetTimer = d.armBudget(nil)
		case <-d.answers.ready():
			d.takeAnswers()
		case c := <-ctl:
			if c.Req.Op == control.OpStop {
				timeout := c.Req.Timeout
				if timeout <= 0 {
					timeout = d.cfg.Timeouts.Shutdown
				}
				d.stopAgents(timeout, &wg)
				c.Reply(control.Response{OK: true, PID: os.Getpid()})
				d.events.Append(eventlog.Event{Type: eventlog.EvDaemonStopped})
				return nil
			}
			d.serve(c)
		case c := <-d.local:
			d.serve(c)
		case <-ctx.Done():
			d.stopAgents(d.cfg.Timeouts.Shutdown, &wg)
			d.events.Append(eventlog.Event{Type: eventlog.EvDaemonStopped})
			return nil
		}
	}
}

func timerC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

// stopAgents stops every agent, letting turns in flight run for timeout,
// and waits until all shims are gone (an agent in a git or ssh step stops once
// the step has ended).
func (d *Daemon) stopAgents(timeout time.Duration, wg *sync.WaitGroup) {
	d.log.Info("Stopping", "timeout", timeout)
	for _, a := range d.agents {
		// Refused only by an agent stopped already.
		a.ctl.put(agentCtl{op: opStop, timeout: timeout})
	}
	wg.Wait()
}

func (d *Daemon) pokeAll() {
	for _, a := range d.agents {
		a.poke()
	}
}

// inboxWatch decides how the daemon learns of new messages given err,
// what making the inboxes' file watcher gave: from its events, with the
// safety-net rescan every rescan; or, without it (inotify's limits of
// the user: fs.inotify.max_user_instances, max_user_watches), by looking
// at every inbox each second, with the warning that says so and how to
// lift the limit. It is a pure function.
func inboxWatch(err error, rescan time.Duration) (every time.Duration, warning string) {
	if err == nil {
		return rescan, ""
	}
	limit := "fs.inotify.max_user_instances"
	if errors.Is(err, syscall.ENOSPC) {
		limit = "fs.inotify.max_user_watches"
	}
	return min(rescan, time.Second), "no file events for the inboxes (" + err.Error() + "): they are looked at every second; raise " + limit + " (sysctl) and restart the team to have them"
}

func (d *Daemon) rescan() {
	if d.lander != nil {
		d.lander.poke()
	}
	d.resyncInboxes()
	d.pokeAll()
	d.routeAll()
}

func (d *Daemon) routeAll() {
	for role := range d.roles {
		d.route(role)
	}
}

// killOrphans kills and reaps the processes that shims which died left
// to the daemon (a subreaper); a no-op unless Options.Subreaper. It blocks
// until they are gone (at most 5 s). Safe from any goroutine.
func (d *Daemon) killOrphans(why string) {
	if d.reaper == nil {
		return
	}
	n, err := d.reaper.KillLeftovers(5 * time.Second)
	if n > 0 {
		d.log.Warn("Killed processes a shim left behind", "count", n, "after", why)
	}
	if err != nil {
		d.log.Error("Processes a shim left behind survived", "error", err)
	}
}

// pause closes the dispatch gate (safe from any goroutine). It returns
// whether the gate changed.
func (d *Daemon) pause(kind, reason string) bool {
	changed, err := d.gate.Pause(kind, reason)
	if err != nil {
		d.log.Error("Saving the dispatch state failed", "error", err)
	}
	if changed {
		d.log.Warn("Dispatch paused", "kind", kind, "reason", reason)
		d.events.Append(eventlog.Event{Type: eventlog.EvPaused, Detail: reason, Data: eventlog.Paused{Kind: kind}})
	}
	return changed
}

// resume opens the dispatch gate (safe from any goroutine). It returns
// whether it was closed.
func (d *Daemon) resume(why string) bool {
	changed, err := d.gate.Resume()
	if err != nil {
		d.log.Error("Saving the dispatch state failed", "error", err)
	}
	if changed {
		d.events.Append(eventlog.Event{Type: eventlog.EvResumed, Detail: why})
		d.pokeAll()
	}
	return changed
}

// Status returns the team's status, as `batty status` shows it. Safe from
// any goroutine, at any time after New.
func (d *Daemon) Status() control.Status { return d.status() }

// shimEnviron is the environment the shims get: Options.ShimEnv, else the
// daemon's own.
func (d *Daemon) shimEnviron() []string {
	if d.opts.ShimEnv == nil {
		return os.Environ()
	}
	return d.opts.ShimEnv
}

// alertGrace is how long the sinks may take to deliver the alerts they
// hold when the daemon stops: one time limit of on_alert.
func (d *Daemon) alertGrace() time.Duration {
	if d.hook != nil {
		return d.hook.Timeout()
	}
	return team.DefaultAlertTimeout
}

// newAlertHook returns the team's alert hook, nil when on_alert is not set.
func (d *Daemon) newAlertHook() *alerthook.Hook {
	if len(d.cfg.OnAlert) == 0 {
		return nil
	}
	return alerthook.New(alerthook.Config{
		Argv: d.cfg.OnAlert, Dir: d.cfg.Dir, Timeout: d.cfg.Timeouts.Alert, Replies: d.cfg.AlertOnReply,
		Env: append(os.Environ(), reap.MarkEnv+"="+d.layout.Dir), Log: d.log.Named("alerts"), Limit: d.opts.AlertQueue,
		Start: d.startChild, Release: d.releaseChild,
	})
}

// indexSynced logs a sync of the search index: what it indexed, what it
// skipped, and why it failed (tried again with the next).
func (d *Daemon) indexSynced(st searchindex.Stats, err error) {
	if err != nil {
		d.log.Warn("Search index", "error", err)
	}
	for _, s := range st.Skips {
		d.log.Warn("Turn journal: a line skipped", "where", s.String())
	}
	if st.Indexed+st.Reindexed > 0 {
		d.log.Debug("Search index synced", "indexed", st.Indexed, "reindexed", st.Reindexed)
	}
}
