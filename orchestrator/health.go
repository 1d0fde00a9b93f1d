package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/team"
)

// settle is how long a watched file must stay quiet before it is checked:
// an install writes the binary in several steps.
const settle = 250 * time.Millisecond

// health tracks whether the Codex of one preflight target — agents with the
// same binary, CODEX_HOME, environment, directory and settings — can run.
// While it cannot, its agents are parked: they take no message, and their
// messages wait in their inboxes. The daemon checks it before the agents
// start; run checks it again with a back-off, when a watched file changes
// (the binary's directory, CODEX_HOME) and at once on recheck. A health
// made while the team runs (an agent moved to another account, see
// agent.followHealth) is checked first by run, and its agents take no
// message until then. problem, state, report, join, leave and members are
// safe from any goroutine; run's goroutine owns the rest.
type health struct {
	d      *Daemon
	target preflight.Target // paths as the host sees them for a host's target
	at     reach            // where the target's agents run
	kick   chan struct{}    // buffered(1): check now
	fail   chan struct{}    // buffered(1): a spawn failed; check, keep the failure if the check passes

	mu       sync.Mutex
	agents   []*agent           // the agents that run on the target now
	checked  bool               // a check has recorded its result
	prob     *preflight.Problem // nil: codex runs
	reported *preflight.Problem // a spawn failure not yet checked
	worked   bool               // a turn started since the last back-off step
	warned   string             // the untested codex version the log has warned of
}

// healthKey identifies the health of target t on host ("" for this
// machine; t as the host sees it): agents with equal keys share one. It is
// a pure function.
func healthKey(t preflight.Target, host string) string {
	return host + "\x00" + t.Key()
}

func newHealth(d *Daemon, t preflight.Target) *health {
	return &health{d: d, target: t, kick: make(chan struct{}, 1), fail: make(chan struct{}, 1)}
}

// problem returns why the target's Codex cannot run, nil when it can (or
// before its first check).
func (h *health) problem() *preflight.Problem {
	p, _ := h.state()
	return p
}

// state returns why the target's Codex cannot run (nil when it can), and
// whether a check has answered yet: before that, p is nil and says
// nothing.
func (h *health) state() (p *preflight.Problem, checked bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.prob, h.checked
}

// join adds a to the agents that run on the target; leave removes it.
func (h *health) join(a *agent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.agents = append(h.agents, a)
}

func (h *health) leave(a *agent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.agents = slices.DeleteFunc(h.agents, func(b *agent) bool { return b == a })
}

// members returns the agents that run on the target now.
func (h *health) members() []*agent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.agents)
}

// recheck asks run to check now; it never blocks.
func (h *health) recheck() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// report says that a turn of an agent could not start codex (detail is the
// shim's error). The target is parked at once; run checks it, and when the
// check finds nothing wrong the failure stands until the next check after
// the back-off, so an error the check cannot see does not turn into a
// loop of failed spawns. It never blocks.
func (h *health) report(detail string) {
	p := &preflight.Problem{Kind: preflight.KindSpawn, Detail: "codex could not be started: " + detail,
		Fix: "fix it and run `batty resume` (batty also tries again by itself)"}
	h.mu.Lock()
	if h.prob == nil {
		h.prob = p
	}
	h.reported = p
	h.mu.Unlock()
	select {
	case h.fail <- struct{}{}:
	default:
	}
	h.pokeAgents()
}

// started says a turn of one of the target's agents started codex: the
// back-off starts over.
func (h *health) started() {
	h.mu.Lock()
	h.worked = true
	h.mu.Unlock()
}

// check runs the preflight checks once and records the result; it blocks
// for them (see preflight.Checker.Check). It reports whether the result
// changed.
func (h *health) check(ctx context.Context) bool {
	// On a host, batty is installed there first (again if it was not);
	// a host that cannot be reached, or where batty cannot be installed
	// or run, is a KindHost problem.
	on := h.at.on()
	r, err := on.Check(ctx, h.target)
	if err != nil {
		r = preflight.Report{Problem: on.Unreachable(err, "then `batty resume`")}
	}
	if ctx.Err() != nil {
		return false
	}
	p := r.Problem
	h.mu.Lock()
	warn := codex.VersionWarning(r.Version)
	if warn != "" && r.Version == h.warned {
		warn = "" // said once for this version
	} else if warn != "" {
		h.warned = r.Version
	}
	if p == nil && h.reported != nil {
		// The check sees nothing wrong, but a spawn failed: that failure
		// stands until the next check.
		p = h.reported
	}
	h.reported = nil
	old := h.prob
	h.prob, h.checked = p, true
	h.mu.Unlock()
	if warn != "" {
		h.d.log.Warn("Codex of an untested version", "bin", h.target.Bin, "host", h.at.on().Name(), "version", r.Version, "warning", warn)
	}
	changed := (old == nil) != (p == nil) || (old != nil && old.String() != p.String())
	if changed {
		if p != nil {
			h.d.log.Warn("Codex cannot run; its agents are parked", "bin", h.target.Bin, "problem", p.String())
		} else {
			h.d.log.Info("Codex runs again; its agents take messages", "bin", h.target.Bin)
		}
	}
	return changed
}

// pokeAgents has the target's agents (and the role queues) look at the
// health again; it never blocks.
func (h *health) pokeAgents() {
	for _, a := range h.members() {
		a.poke()
	}
	select {
	case h.d.routeKick <- struct{}{}:
	default:
	}
}

// run re-checks a parked target until ctx ends: after a back-off
// (RecheckMin doubling to RecheckMax), on a change of a watched file, and at
// once on recheck. A target not checked yet is checked first, and its
// agents, which wait for that, are told.
func (h *health) run(ctx context.Context) {
	if _, checked := h.state(); !checked {
		h.check(ctx)
		h.pokeAgents()
	}
	backoff := h.d.opts.RecheckMin
	var timer *time.Timer
	var w *fsnotify.Watcher
	var settleC <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if w != nil {
			w.Close()
		}
	}()
	// arm (re)arms the back-off timer and the watches for the current state.
	arm := func() {
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		if h.problem() == nil {
			if w != nil {
				w.Close()
				w = nil
			}
			return
		}
		timer = time.NewTimer(backoff)
		if w == nil {
			w = h.watch()
		}
	}
	arm()
	for {
		var timerC <-chan time.Time
		if timer != nil {
			timerC = timer.C
		}
		var events <-chan fsnotify.Event
		var errs <-chan error
		if w != nil {
			events, errs = w.Events, w.Errors
		}
		now := false
		select {
		case <-ctx.Done():
			return
		case <-h.kick:
			now = true
		case <-h.fail:
			h.mu.Lock()
			if h.worked {
				backoff, h.worked = h.d.opts.RecheckMin, false
			}
			h.mu.Unlock()
			now = true
		case <-timerC:
			timer = nil
			now = true
			backoff = min(backoff*2, h.d.opts.RecheckMax)
		case ev, ok := <-events:
			if ok && h.watched(ev.Name) {
				settleC = time.After(settle)
			}
		case err, ok := <-errs:
			if ok {
				h.d.log.Debug("Watching for codex failed", "error", err)
			}
		case <-settleC:
			settleC = nil
			now = true
		}
		if !now {
			continue
		}
		if h.check(ctx) {
			h.pokeAgents()
		}
		arm()
	}
}

// watch watches where a fix shows up (Host.WatchDirs): here the
// directory of a binary configured by path, or every directory on PATH
// for a name, and CODEX_HOME (or its parent while it does not exist). It
// returns nil when nothing can be watched (the back-off still runs).
func (h *health) watch() *fsnotify.Watcher {
	dirs := h.at.on().WatchDirs(h.target, h.home())
	if len(dirs) == 0 {
		return nil // nothing here to watch (a host's): the back-off checks it
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		h.d.log.Debug("Cannot watch for codex", "error", err)
		return nil
	}
	n := 0
	for _, dir := range dirs {
		if err := w.Add(dir); err == nil {
			n++
		}
	}
	if n == 0 {
		w.Close()
		return nil
	}
	return w
}

// home is the agent's CODEX_HOME when set ("" = the default, not watched).
func (h *health) home() string {
	if h.target.Home != "" {
		return h.target.Home
	}
	for i := len(h.target.Env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(h.target.Env[i], "CODEX_HOME="); ok {
			return v
		}
	}
	return os.Getenv("CODEX_HOME")
}

// watched reports whether a change of name can fix the target: the binary,
// CODEX_HOME itself, or its auth.json or config.toml.
func (h *health) watched(name string) bool {
	base := filepath.Base(name)
	bin := h.target.Bin
	if bin == "" {
		bin = "codex"
	}
	if base == filepath.Base(bin) && (!strings.ContainsRune(bin, '/') || name == bin) {
		return true
	}
	home := h.home()
	return home != "" && (name == home || (filepath.Dir(name) == home && (base == "auth.json" || base == "config.toml")))
}

// healthSet is the daemon's healths, one per target and host (healthKey):
// initHealth makes the ones the agents start on, get the one of an account
// an agent moves to, when it is first needed. start runs every health's
// goroutine (health.run), also the ones made later, until its stop. Safe
// for concurrent use; the zero value is empty.
type healthSet struct {
	mu    sync.Mutex
	byKey map[string]*health
	all   []*health       // in the order made
	ctx   context.Context // the goroutines' context, set by start; nil before
	wg    sync.WaitGroup
}

// get returns the health of key, made by made (and run, once the set is
// started) when there is none.
func (s *healthSet) get(key string, made func() *health) *health {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.byKey[key]; ok {
		return h
	}
	if s.byKey == nil {
		s.byKey = map[string]*health{}
	}
	h := made()
	s.byKey[key] = h
	s.all = append(s.all, h)
	s.goLocked(h)
	return h
}

// list returns every health, in the order made.
func (s *healthSet) list() []*health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.all)
}

// start runs the goroutine of every health, and of every one made later,
// until stop, which returns once they have all returned; a health made
// after stop is not run. It is called once.
func (s *healthSet) start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.ctx = ctx
	for _, h := range s.all {
		s.goLocked(h)
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		cancel() // under mu: no goroutine starts after it
		s.mu.Unlock()
		s.wg.Wait()
	}
}

// goLocked runs h's goroutine when the set is started and not stopped;
// s.mu is held.
func (s *healthSet) goLocked(h *health) {
	if s.ctx == nil || s.ctx.Err() != nil {
		return
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); h.run(s.ctx) }()
}

// has reports whether the set has the health of key.
func (s *healthSet) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.byKey[key]
	return ok
}

// healthTarget is how agent def runs Codex on host on with CODEX_HOME
// home, as the host sees it (host.Host.Target), and the key of its
// health. Pure.
func healthTarget(def team.Agent, on host.Host, home string) (preflight.Target, string) {
	t := on.Target(def, home)
	return t, healthKey(t, on.Name())
}

// healthFor is the health of agent def where it runs (at) with
// CODEX_HOME home, made when there is none.
func (d *Daemon) healthFor(def team.Agent, at reach, home string) *health {
	t, key := healthTarget(def, at.on(), home)
	return d.healths.get(key, func() *health {
		h := newHealth(d, t)
		h.at = at
		return h
	})
}

// initHealth groups the daemon's agents by preflight target: each on the
// account the quota book places it on.
func (d *Daemon) initHealth() {
	for _, a := range d.agents {
		home, _ := d.quota.HomeOf(a.def.Name)
		h := d.healthFor(a.def, a.host, home)
		h.join(a)
		a.health = h
		a.snap.health = h
	}
}

// checkAll runs every target's first check, in parallel, and waits for
// them.
func (d *Daemon) checkAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, h := range d.healths.list() {
		wg.Add(1)
		go func(h *health) { defer wg.Done(); h.check(ctx) }(h)
	}
	wg.Wait()
}

// recheckAll asks every parked target to check again now, and returns the
// names of the agents it concerns.
func (d *Daemon) recheckAll() []string {
	var names []string
	for _, h := range d.healths.list() {
		if h.problem() != nil {
			h.recheck()
			for _, a := range h.members() {
				names = append(names, a.def.Name)
			}
		}
	}
	return names
}
