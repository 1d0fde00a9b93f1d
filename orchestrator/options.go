package orchestrator

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/retry"
	"github.com/battyhq/batty/schedule"
	"github.com/battyhq/batty/slots"
	"github.com/battyhq/batty/team"
)

// Options tune a Daemon; zero fields take the defaults.
type Options struct {
	// ShimCommand runs a shim: the executable and the arguments before the
	// shim flags (default: this executable, "shim").
	ShimCommand []string
	// StartWorker starts an agent's worker (default: a shim process run
	// as ShimCommand, in the team's cgroup when there is one); tests give
	// an in-process one. A worker on a host is started through it too,
	// with SpawnOptions.Remote set, and its events adapted (remoteWorker).
	StartWorker StartWorker
	// ShimEnv is the shims' environment (nil: the daemon's). The daemon
	// adds the project's mark (reap.MarkEnv) to it.
	ShimEnv []string
	// Logger receives the daemon's log (default: a discarding logger).
	Logger hclog.Logger
	// ShimLog receives the shims' own logs (default: discarded).
	ShimLog io.Writer
	// Rescan is the safety-net inbox rescan period (default 30s).
	Rescan time.Duration
	Supervision
	// AlertQueue is how many alerts may wait for the team's on_alert
	// command (default 64); beyond it the oldest are dropped, and counted
	// in the log.
	AlertQueue int
	CodexChecks
	Backoffs
	// OnEvent, if set, sees every event written to the event log, after it
	// was written (tests and benchmarks wait on it). It must not block.
	OnEvent func(eventlog.Event)
	// Console, if set, is where the team's console listens and its login
	// token, given to the human who asks (control.OpConsole, never to an
	// agent); nil: the team has no console.
	Console *control.ConsoleInfo
	Clocks
	// InboxGrace is how long a file in an inbox's new/ that is not a valid
	// message yet is left alone (it may still be being written) before it
	// is moved to bad/ (default inbox.DefaultGrace).
	InboxGrace time.Duration
	// Subreaper makes the daemon process a child subreaper for the life of
	// the process: what a shim that died abruptly (SIGKILL) leaves behind —
	// model commands in sessions of their own — is reparented to the
	// daemon, which kills and reaps it. Only for a daemon that owns its
	// process (`batty daemon`): it kills every child it did not start as a
	// shim.
	Subreaper bool
	// NoCgroup keeps the shims out of a cgroup of the team even where one
	// could be made: leftovers are then found by their mark alone (tests
	// of that path).
	NoCgroup bool
	Resources
	// HostBatty is the batty installed on the team's hosts for the agents
	// that run there (hosts.EnsureBatty); `batty daemon` gives
	// hosts.Self. Its zero value (no Path) parks every agent of a host,
	// saying batty cannot be installed there.
	HostBatty hosts.Binary
	// Transport reaches the team's hosts (nil: a zero hosts.Transport,
	// ssh from PATH with the user's ssh config).
	Transport *hosts.Transport
}

// Resources tunes how the daemon reads and keeps the machine's resources
// it needs: the memory a turn may start with, the disk a worktree may be
// made on. Zero fields take the defaults.
type Resources struct {
	// Memory reads the memory available here, for limits.min_free_memory
	// (default slots.ProcMemory: MemAvailable of /proc/meminfo); tests
	// give their own.
	Memory slots.Memory
	// MemoryRecheck is how often an agent held by low memory looks again
	// (default 5s).
	MemoryRecheck time.Duration
	// WorktreeMinFree is the free disk space below which no worktree is
	// made (0: workspaces.DefaultMinFree, 1 GiB).
	WorktreeMinFree uint64
}

// withDefaults fills r's zero fields with the defaults.
func (r *Resources) withDefaults() {
	orDefault(&r.MemoryRecheck, 5*time.Second)
	if r.Memory == nil {
		r.Memory = slots.ProcMemory
	}
}

// Supervision tunes how the daemon watches each agent's shim: the ping
// that finds a wedged one, the back-off of its respawns, and the crash
// loop that fails the agent for a cool-down. Zero fields take the
// defaults.
type Supervision struct {
	// PingInterval and PongTimeout detect a wedged shim (30s, 10s).
	PingInterval, PongTimeout time.Duration
	// RespawnMin and RespawnMax bound the respawn backoff (1s, 30s).
	RespawnMin, RespawnMax time.Duration
	// MaxCrashes within CrashWindow mark an agent failed (5 in 60s).
	MaxCrashes  int
	CrashWindow time.Duration
	// FailedRetryMin and FailedRetryMax bound the cool-down after which a
	// failed agent is tried again (1m doubling with each failure in a row,
	// at most 30m; see failedCooldown).
	FailedRetryMin, FailedRetryMax time.Duration
}

// withDefaults fills s's zero fields with the defaults.
func (s *Supervision) withDefaults() {
	orDefault(&s.PingInterval, 30*time.Second)
	orDefault(&s.PongTimeout, 10*time.Second)
	orDefault(&s.RespawnMin, time.Second)
	orDefault(&s.RespawnMax, 30*time.Second)
	orDefault(&s.CrashWindow, 60*time.Second)
	orDefault(&s.FailedRetryMin, time.Minute)
	orDefault(&s.FailedRetryMax, 30*time.Minute)
	if s.MaxCrashes <= 0 {
		s.MaxCrashes = 5
	}
}

// CodexChecks tunes the checks of whether the agents' Codex can run (the
// health that parks an agent). Zero fields take the defaults.
type CodexChecks struct {
	// RecheckMin and RecheckMax bound the back-off between checks of a
	// parked agent's Codex (5s, 5m); CheckTimeout bounds each codex run of
	// a check (preflight.DefaultTimeout).
	RecheckMin, RecheckMax, CheckTimeout time.Duration
}

// withDefaults fills c's zero fields with the defaults.
func (c *CodexChecks) withDefaults() {
	orDefault(&c.RecheckMin, 5*time.Second)
	orDefault(&c.RecheckMax, 5*time.Minute)
	orDefault(&c.CheckTimeout, preflight.DefaultTimeout)
}

// Backoffs tunes how long what failed in a way that may pass waits before
// it is tried again: a message's attempt, the write of an outcome, an
// account's probe of its usage limit. Zero fields take the defaults.
type Backoffs struct {
	// RetryBase and RetryMax bound the back-off between tries of a
	// message whose attempt failed in a way that may pass (10s doubling,
	// at most 5m, with jitter; see backoff).
	RetryBase, RetryMax time.Duration
	// RecordRetryMin and RecordRetryMax bound the back-off between tries
	// of writing an outcome (and the reply it owes) that could not be
	// written, e.g. on a full disk: min doubling to max (default 1 s to
	// 1 min).
	RecordRetryMin, RecordRetryMax time.Duration
	// Rand returns a random number in [0, 1) for the back-off's jitter
	// (default math/rand/v2's Float64).
	Rand func() float64
	// QuotaBackoffMin is the first back-off step of an account whose probe
	// hit the usage limit again, or whose reset time had already passed
	// (default 1m; it doubles up to the team's quota.backoff_max).
	QuotaBackoffMin time.Duration
	// QuotaJitter is the most jitter added to a planned probe (default
	// 15s; negative: none).
	QuotaJitter time.Duration
}

// withDefaults fills b's zero fields with the defaults.
func (b *Backoffs) withDefaults() {
	orDefault(&b.RetryBase, retry.DefaultBase)
	orDefault(&b.RetryMax, retry.DefaultMax)
	orDefault(&b.RecordRetryMin, time.Second)
	orDefault(&b.RecordRetryMax, time.Minute)
	if b.Rand == nil {
		b.Rand = rand.Float64
	}
	orDefault(&b.QuotaBackoffMin, retry.DefaultQuotaBackoffMin)
	if b.QuotaJitter == 0 {
		b.QuotaJitter = retry.DefaultQuotaJitter
	}
}

// quotaPolicy is the back-off of the accounts' probes under the team's
// quota settings q.
func (b Backoffs) quotaPolicy(q team.Quota) retry.QuotaPolicy {
	return retry.QuotaPolicy{BackoffMin: b.QuotaBackoffMin, BackoffMax: max(q.BackoffMax, b.QuotaBackoffMin),
		Cooldown: q.Cooldown, CooldownMax: max(q.CooldownMax, q.Cooldown), Jitter: max(b.QuotaJitter, 0)}
}

// quotaJitter draws the jitter of a planned probe.
func (b Backoffs) quotaJitter() time.Duration {
	if b.QuotaJitter <= 0 {
		return 0
	}
	return rand.N(b.QuotaJitter + 1)
}

// Clocks are the clocks of what the daemon does at given times: the
// schedules and the token budgets (tests give a fakeclock.Clock). Zero
// fields take the defaults.
type Clocks struct {
	// ScheduleClock is the clock of the schedules (default: the system
	// clock).
	ScheduleClock schedule.Clock
	// BudgetClock is the clock of the token budgets, and the time of each
	// turn in the usage ledger they count (default: the system clock);
	// BudgetLocation the time zone their calendar windows are aligned in
	// (default: the daemon's local zone, time.Local).
	BudgetClock    schedule.Clock
	BudgetLocation *time.Location
}

// withDefaults fills c's zero fields with the defaults.
func (c *Clocks) withDefaults() {
	if c.ScheduleClock == nil {
		c.ScheduleClock = schedule.SystemClock()
	}
	if c.BudgetClock == nil {
		c.BudgetClock = schedule.SystemClock()
	}
	if c.BudgetLocation == nil {
		c.BudgetLocation = time.Local
	}
}

// orDefault sets *d to v when it is not positive.
func orDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

func (o Options) withDefaults() (Options, error) {
	if len(o.ShimCommand) == 0 {
		// The daemon's own program, by its inode: a batty binary the
		// user built inside the project stays the program shims run
		// even if an agent replaces the file at that path.
		exe, err := hosts.RunningProgram()
		if err != nil {
			return o, fmt.Errorf("find the batty binary for shims: %w", err)
		}
		o.ShimCommand = []string{exe, "shim"}
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Transport == nil {
		o.Transport = &hosts.Transport{}
	}
	orDefault(&o.Rescan, 30*time.Second)
	o.Supervision.withDefaults()
	o.CodexChecks.withDefaults()
	o.Backoffs.withDefaults()
	o.Resources.withDefaults()
	o.Clocks.withDefaults()
	return o, nil
}
