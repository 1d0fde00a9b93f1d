package telemetry

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/usage"
)

// Label values of the metrics.
const (
	RestartShim      = "shim"
	RestartAppServer = "app_server"

	LandingLanded   = "landed"
	LandingNothing  = "nothing"
	LandingConflict = "conflict"
	LandingFailed   = "failed" // verify was red
	LandingRejected = "rejected"
	LandingReview   = "review" // verified, waits for the human's review

	OutcomeCancelled = "cancelled"
	OutcomeRejected  = "rejected"
)

// The token kinds of batty_tokens_total, as usage.Tokens counts them.
const (
	KindInput           = "input"
	KindCachedInput     = "cached_input"
	KindOutput          = "output"
	KindReasoningOutput = "reasoning_output"
)

// metrics are the team's Prometheus metrics: the counters and histograms
// follow the event log and the usage ledger; the gauges are read from the
// daemon's status at each scrape (statusCollector). Every label is
// bounded by the team file (agents, roles, accounts, models, budgets) or
// by batty's own vocabulary (outcomes, kinds, states): never a message id.
type metrics struct {
	messages      *prometheus.CounterVec
	turns         *prometheus.CounterVec
	turnDuration  *prometheus.HistogramVec
	tokens        *prometheus.CounterVec
	slotWait      *prometheus.HistogramVec
	landings      *prometheus.CounterVec
	verify        prometheus.Histogram
	restarts      *prometheus.CounterVec
	alerts        *prometheus.CounterVec
	roleOf        func(agent string) string
	shimStartSeen map[string]bool // guarded by the caller's lock (Telemetry.mu)
}

// durationBuckets are the buckets of the turns' and the verifies'
// durations, in seconds: a second to an hour.
var durationBuckets = []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600}

// waitBuckets are the buckets of the waits for a slot, in seconds.
var waitBuckets = []float64{0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600}

// newMetrics registers the metrics in reg; roleOf names an agent's role
// ("" for none known).
func newMetrics(reg prometheus.Registerer, roleOf func(string) string) *metrics {
	m := &metrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "batty_messages_total",
			Help: "Messages that reached their final outcome (completed, failed, interrupted, timed_out, cancelled, rejected)."},
			[]string{"agent", "role", "outcome"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "batty_turns_total",
			Help: "Turns (attempts of a message) that ended, by their status; requeued: the message runs again."},
			[]string{"agent", "role", "outcome"}),
		turnDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "batty_turn_duration_seconds",
			Help: "How long the turns ran.", Buckets: durationBuckets}, []string{"agent", "role"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "batty_tokens_total",
			Help: "Tokens the turns used, as the usage ledger counts them (input includes cached_input, output includes reasoning_output)."},
			[]string{"agent", "role", "account", "model", "kind"}),
		slotWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "batty_slot_wait_seconds",
			Help: "How long a turn that waited for a slot under the team's limits waited.", Buckets: waitBuckets}, []string{"agent", "role"}),
		landings: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "batty_landings_total",
			Help: "Landings of the merge queue that ended, by result (landed, nothing, conflict, failed, rejected, review)."},
			[]string{"agent", "result"}),
		verify: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "batty_verify_duration_seconds",
			Help: "How long workspace.verify ran on a landing.", Buckets: durationBuckets}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "batty_worker_restarts_total",
			Help: "Workers started again: an agent's shim, or a shared app-server that died."},
			[]string{"agent", "role", "kind"}),
		alerts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "batty_alerts_total",
			Help: "Alerts raised, by kind (the event that raised it)."}, []string{"kind"}),
		roleOf:        roleOf,
		shimStartSeen: map[string]bool{},
	}
	reg.MustRegister(m.messages, m.turns, m.turnDuration, m.tokens, m.slotWait, m.landings, m.verify, m.restarts, m.alerts)
	return m
}

// event counts e. The caller holds the telemetry's lock.
func (m *metrics) event(e eventlog.Event) {
	role := m.roleOf(e.Agent)
	if a, ok := eventlog.AlertFor(e); ok && a.Kind != "" {
		m.alerts.WithLabelValues(a.Kind).Inc()
	}
	switch d := e.Data.(type) {
	case eventlog.TurnFinished:
		outcome := d.Status
		if d.Requeued {
			outcome = "requeued"
		}
		m.turns.WithLabelValues(e.Agent, role, label(outcome)).Inc()
		if d.DurationMS > 0 {
			m.turnDuration.WithLabelValues(e.Agent, role).Observe(float64(d.DurationMS) / 1000)
		}
		if !d.Requeued {
			final := d.Status
			if d.Cancelled {
				final = OutcomeCancelled
			}
			m.messages.WithLabelValues(e.Agent, role, label(final)).Inc()
		}
	case eventlog.Cancelled:
		if !d.Interrupted {
			// Withdrawn before a turn (an interrupted turn's end counts it).
			agent := e.Agent
			if agent == "" {
				agent = d.Queue
			}
			m.messages.WithLabelValues(agent, m.roleOf(agent), OutcomeCancelled).Inc()
		}
	case eventlog.SlotGranted:
		m.slotWait.WithLabelValues(e.Agent, role).Observe(float64(d.WaitedMS) / 1000)
	case eventlog.Landed:
		result := LandingLanded
		if d.Nothing {
			result = LandingNothing
		}
		m.landings.WithLabelValues(e.Agent, result).Inc()
		m.verified(d.Steps)
	case eventlog.LandingFailed:
		result := LandingFailed
		if len(d.Conflicts) > 0 {
			result = LandingConflict
		}
		m.landings.WithLabelValues(e.Agent, result).Inc()
		m.verified(d.Steps)
	case eventlog.ReviewWaiting:
		m.landings.WithLabelValues(e.Agent, LandingReview).Inc()
		m.verified(d.Steps)
	case eventlog.LandingRejected:
		m.landings.WithLabelValues(e.Agent, LandingRejected).Inc()
	case eventlog.ShimStarted:
		if m.shimStartSeen[e.Agent] {
			m.restarts.WithLabelValues(e.Agent, role, RestartShim).Inc()
		}
		m.shimStartSeen[e.Agent] = true
	case eventlog.AppServerDied:
		m.restarts.WithLabelValues("", "", RestartAppServer).Inc()
	}
	if e.Type == eventlog.EvRejected && !landingRequest(e) {
		m.messages.WithLabelValues(e.Agent, role, OutcomeRejected).Inc()
	}
}

// landingRequest reports whether e, an EvRejected, refused a landing
// request (of the merge queue's inbox), not a message to an agent.
func landingRequest(e eventlog.Event) bool { return strings.HasPrefix(e.Detail, "landing request:") }

// verified observes the verify of a landing's steps, if it ran.
func (m *metrics) verified(s eventlog.LandingSteps) {
	if !s.VerifyAt.IsZero() && !s.VerifyEndedAt.Before(s.VerifyAt) {
		m.verify.Observe(s.VerifyEndedAt.Sub(s.VerifyAt).Seconds())
	}
}

// turn counts the tokens of t, a turn the usage ledger added.
func (m *metrics) turn(t usage.Turn) {
	for _, k := range []struct {
		kind string
		n    int64
	}{{KindInput, t.Tokens.Input}, {KindCachedInput, t.Tokens.CachedInput}, {KindOutput, t.Tokens.Output}, {KindReasoningOutput, t.Tokens.ReasoningOutput}} {
		m.tokens.WithLabelValues(t.Agent, t.Role, t.Account, t.Model, k.kind).Add(float64(k.n))
	}
}

// label is s as a label value: "unknown" for none.
func label(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// statusCollector reads the gauges from the daemon's status at each
// scrape: nothing runs between scrapes.
type statusCollector struct {
	status                        func() control.Status
	backlog, state, budget, limit *prometheus.Desc
}

func newStatusCollector(status func() control.Status) *statusCollector {
	return &statusCollector{
		status: status,
		backlog: prometheus.NewDesc("batty_backlog_messages",
			"Messages waiting for an agent (pending and in flight), or in a role's queue (agent \"@role\").", []string{"agent", "role"}, nil),
		state: prometheus.NewDesc("batty_agent_state",
			"1 for the state each agent is in (as batty status shows it).", []string{"agent", "role", "state"}, nil),
		budget: prometheus.NewDesc("batty_budget_used_ratio",
			"The use of each token budget in its current window (1: reached).", []string{"budget", "for", "per"}, nil),
		limit: prometheus.NewDesc("batty_rate_limit_used_ratio",
			"The use of each rate-limit window of an account, as Codex last reported it (runtime app-server).", []string{"account", "window"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.backlog
	ch <- c.state
	ch <- c.budget
	ch <- c.limit
}

// Collect implements prometheus.Collector: one status of the daemon.
func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.status()
	for _, a := range st.Agents {
		ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, float64(a.Backlog), a.Name, a.Role)
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, 1, a.Name, a.Role, label(a.State))
	}
	for role, n := range st.Queues {
		ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, float64(n), "@"+role, role)
	}
	for _, b := range st.Budgets {
		ch <- prometheus.MustNewConstMetric(c.budget, prometheus.GaugeValue, b.UsedPct/100, b.Budget, b.For, b.Per)
	}
	for _, a := range st.Accounts {
		if a.RateLimits == nil {
			continue
		}
		name := a.Name
		if name == "" {
			name = a.Account
		}
		for _, w := range a.RateLimits.Windows {
			ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, w.UsedPct/100, name, w.Name)
		}
	}
}
