package telemetry

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/telemetry/traceid"
	"github.com/battyhq/batty/usage"
)

const msg = "20261121T125100.123456789Z-1f2e3d4c"

// journeyEvents are the events of a message to dev that waits for a slot,
// runs twice (the first attempt retried), commits, replies, and asks for
// a landing that lands; and the usage ledger's turns, in order. t0 is
// when it was sent.
func journeyEvents(t0 time.Time) (events []any) {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	return []any{
		eventlog.Event{Time: at(2), Type: eventlog.EvSlotGranted, Agent: "dev", Data: eventlog.SlotGranted{WaitedMS: 1000}},
		eventlog.Event{Time: at(2.1), Type: eventlog.EvDelivered, Agent: "dev", Message: msg, Data: eventlog.Delivered{From: "human", Attempt: 1, SentAt: t0}},
		usage.Turn{At: at(5), Agent: "dev", Role: "developer", Account: "work", Model: "gpt-x", Message: msg, Attempt: 1,
			Tokens: usage.Tokens{Input: 100, CachedInput: 10, Output: 20, ReasoningOutput: 5}, Status: "failed", Again: true},
		eventlog.Event{Time: at(5.1), Type: eventlog.EvRetryScheduled, Agent: "dev", Message: msg},
		eventlog.Event{Time: at(5.2), Type: eventlog.EvTurnFinished, Agent: "dev", Message: msg,
			Data: eventlog.TurnFinished{Status: "failed", Failure: "server_error", InputTokens: 100, OutputTokens: 20, DurationMS: 2900, Attempt: 1, Requeued: true}},
		eventlog.Event{Time: at(7), Type: eventlog.EvDelivered, Agent: "dev", Message: msg, Data: eventlog.Delivered{From: "human", Attempt: 2, SentAt: t0}},
		eventlog.Event{Time: at(8), Type: eventlog.EvLandingQueued, Agent: "dev", Message: "landing-msg", Data: eventlog.LandingQueued{Request: "r1", By: "dev", Branch: "batty/dev"}},
		usage.Turn{At: at(10), Agent: "dev", Role: "developer", Account: "work", Model: "gpt-x", Message: msg, Attempt: 2,
			Tokens: usage.Tokens{Input: 200, CachedInput: 50, Output: 30, ReasoningOutput: 7}, Status: "completed"},
		eventlog.Event{Time: at(11), Type: eventlog.EvWorkspaceCommitted, Agent: "dev", Message: msg, Data: eventlog.WorkspaceCommitted{Commit: "abc"}},
		eventlog.Event{Time: at(12), Type: eventlog.EvReply, Agent: "dev", Message: "reply-1",
			Data: eventlog.Reply{To: "human", InReplyTo: msg, Preview: "SECRET REPLY TEXT", Outcome: "completed"}},
		eventlog.Event{Time: at(12.5), Type: eventlog.EvTurnFinished, Agent: "dev", Message: msg,
			Data: eventlog.TurnFinished{Status: "completed", InputTokens: 200, OutputTokens: 30, DurationMS: 3000, Attempt: 2}},
		eventlog.Event{Time: at(20), Type: eventlog.EvLanded, Agent: "dev",
			Data: eventlog.Landed{Request: "r1", Commit: "def", Base: "main", Branch: "batty/dev",
				Steps: eventlog.LandingSteps{MergeAt: at(14), VerifyAt: at(15), VerifyEndedAt: at(19)}}},
	}
}

func feed(tel *Telemetry, events []any) {
	for _, x := range events {
		switch v := x.(type) {
		case eventlog.Event:
			tel.Event(v)
		case usage.Turn:
			tel.Turn(v)
		}
	}
}

func spansOf(t *testing.T, text bool) (tracetest.SpanStubs, time.Time) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), Options{Team: "t", Config: team.Telemetry{IncludeText: text}, Roles: map[string]string{"dev": "developer"},
		Getenv: func(string) string { return "" }, Exporter: exp,
		MessageText: func(agent, id string) string { return "SECRET PROMPT of " + agent + " " + id }})
	if err != nil || !tel.TracesOn() || tel.MetricsOn() {
		t.Fatalf("telemetry %v, %v", tel, err)
	}
	t0 := time.Date(2026, 11, 21, 12, 51, 0, 0, time.UTC)
	feed(tel, journeyEvents(t0))
	// The exporter forgets its spans once shut down.
	if err := tel.tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return exp.GetSpans(), t0
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// One trace per message: the queue, the slot, each attempt, the commit,
// the reply and the root, with the ids traceid derives (the turn's is the
// one the shim hands Codex), and the landing the turn asked for under the
// message, with its merge, verify and land.
func TestJourneyTrace(t *testing.T) {
	spans, t0 := spansOf(t, false)
	byName := map[string]tracetest.SpanStub{}
	var names []string
	for _, s := range spans {
		byName[s.Name] = s
		names = append(names, s.Name)
	}
	for _, want := range []string{"wait_slot 1", "queued 1", "turn 1", "queued 2", "turn 2", "commit", "reply", "message", "landing", "merge", "verify", "land"} {
		if _, ok := byName[want]; !ok {
			t.Fatalf("no span %q in %v", want, names)
		}
	}
	root := byName["message"]
	tid := traceid.Trace(msg)
	for _, s := range spans {
		if [16]byte(s.SpanContext.TraceID()) != tid {
			t.Fatalf("span %s in trace %s", s.Name, s.SpanContext.TraceID())
		}
	}
	if !root.StartTime.Equal(t0) || !root.EndTime.Equal(t0.Add(12500*time.Millisecond)) || root.Parent.IsValid() {
		t.Fatalf("root %v–%v parent %v", root.StartTime, root.EndTime, root.Parent)
	}
	for _, n := range []string{"queued 1", "wait_slot 1", "turn 1", "turn 2", "commit", "reply", "landing"} {
		if byName[n].Parent.SpanID() != root.SpanContext.SpanID() {
			t.Fatalf("%s is not a child of the message", n)
		}
	}
	landing := byName["landing"]
	for _, n := range []string{"merge", "verify", "land"} {
		if byName[n].Parent.SpanID() != landing.SpanContext.SpanID() {
			t.Fatalf("%s is not a child of the landing", n)
		}
	}
	turn2 := byName["turn 2"]
	if got, want := "00-"+turn2.SpanContext.TraceID().String()+"-"+turn2.SpanContext.SpanID().String()+"-01", traceid.TurnParent(msg, 2); got != want {
		t.Fatalf("turn 2 is %s, the shim hands Codex %s", got, want)
	}
	// The waits and turns in order, as the events timed them.
	if q := byName["queued 1"]; !q.StartTime.Equal(t0) || !q.EndTime.Equal(t0.Add(time.Second)) {
		t.Fatalf("queued 1 %v–%v", q.StartTime, q.EndTime)
	}
	if w := byName["wait_slot 1"]; !w.StartTime.Equal(t0.Add(time.Second)) || !w.EndTime.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("wait_slot 1 %v–%v", w.StartTime, w.EndTime)
	}
	if tr := byName["turn 1"]; !tr.StartTime.Equal(t0.Add(2100*time.Millisecond)) || !tr.EndTime.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("turn 1 %v–%v", tr.StartTime, tr.EndTime)
	}
	if q := byName["queued 2"]; !q.StartTime.Equal(t0.Add(5200*time.Millisecond)) || !q.EndTime.Equal(t0.Add(7*time.Second)) {
		t.Fatalf("queued 2 %v–%v", q.StartTime, q.EndTime)
	}
	if c := byName["commit"]; !c.StartTime.Equal(t0.Add(10*time.Second)) || !c.EndTime.Equal(t0.Add(11*time.Second)) {
		t.Fatalf("commit %v–%v", c.StartTime, c.EndTime)
	}
	if v := byName["verify"]; !v.StartTime.Equal(t0.Add(15*time.Second)) || !v.EndTime.Equal(t0.Add(19*time.Second)) {
		t.Fatalf("verify %v–%v", v.StartTime, v.EndTime)
	}
	// Attributes: agent, role, account, model, message id, tokens, outcome.
	for key, want := range map[string]any{AttrAgent: "dev", AttrRole: "developer", AttrAccount: "work", AttrModel: "gpt-x", AttrMessageID: msg,
		AttrTokensInput: int64(200), AttrTokensCached: int64(50), AttrOutcome: "completed", AttrAttempt: int64(2)} {
		v, ok := attr(turn2, key)
		if !ok || v.AsInterface() != want {
			t.Fatalf("turn 2's %s is %v (%v), want %v", key, v.AsInterface(), ok, want)
		}
	}
	for key, want := range map[string]any{AttrTokensInput: int64(300), AttrTokensOutput: int64(50), AttrAttempts: int64(2), AttrOutcome: "completed", AttrFrom: "human"} {
		if v, ok := attr(root, key); !ok || v.AsInterface() != want {
			t.Fatalf("the message's %s is %v (%v), want %v", key, v.AsInterface(), ok, want)
		}
	}
	if v, _ := attr(byName["turn 1"], AttrOutcome); v.AsString() != "failed" {
		t.Fatalf("turn 1's outcome %v", v.AsInterface())
	}
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), "SECRET") {
				t.Fatalf("span %s carries text without include_text: %s", s.Name, kv.Key)
			}
		}
	}
}

// include_text: the reply's start goes with the reply span, the
// message's text with the message span.
func TestIncludeText(t *testing.T) {
	spans, _ := spansOf(t, true)
	seen := 0
	for _, s := range spans {
		switch s.Name {
		case "reply":
			if v, ok := attr(s, AttrReplyPreview); !ok || v.AsString() != "SECRET REPLY TEXT" {
				t.Fatalf("reply preview %v", v.AsInterface())
			}
			seen++
		case "message":
			if v, ok := attr(s, AttrMessageText); !ok || v.AsString() != "SECRET PROMPT of dev "+msg {
				t.Fatalf("message text %v", v.AsInterface())
			}
			seen++
		}
	}
	if seen != 2 {
		t.Fatalf("no reply or message span in %d spans", len(spans))
	}
}

// A landing the human asked for is a trace of its own.
func TestHumanLanding(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), Options{Getenv: func(string) string { return "" }, Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	tel.Event(eventlog.Event{Time: t0, Type: eventlog.EvLandingQueued, Agent: "dev", Data: eventlog.LandingQueued{Request: "r9", By: "human"}})
	tel.Event(eventlog.Event{Time: t0.Add(time.Second), Type: eventlog.EvLandingFailed, Agent: "dev",
		Data: eventlog.LandingFailed{Request: "r9", Conflicts: []string{"a.go"}, Steps: eventlog.LandingSteps{MergeAt: t0}}})
	tel.tp.ForceFlush(context.Background())
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "landing" || spans[0].Parent.IsValid() || [16]byte(spans[0].SpanContext.TraceID()) != traceid.Trace("landing/r9") ||
		spans[1].Name != "merge" || spans[1].Parent.SpanID() != spans[0].SpanContext.SpanID() {
		t.Fatalf("spans %v", spans)
	}
	if v, _ := attr(spans[0], AttrLandingResult); v.AsString() != LandingConflict {
		t.Fatalf("result %v", v.AsInterface())
	}
}

// Off: nothing is made.
func TestOff(t *testing.T) {
	tel, err := New(context.Background(), Options{Getenv: func(string) string { return "" }})
	if err != nil || tel != nil {
		t.Fatalf("telemetry %v, %v", tel, err)
	}
	tel.Event(eventlog.Event{Type: eventlog.EvDelivered})
	tel.Turn(usage.Turn{})
	if tel.Handler() != nil || tel.Close(context.Background()) != nil {
		t.Fatal("a nil telemetry did something")
	}
}

func TestTracesFromEnvironment(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			if i := slices.Index(kv, k); i >= 0 && i%2 == 0 {
				return kv[i+1]
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name     string
		cfg      team.OTLP
		env      func(string) string
		on       bool
		protocol string
	}{
		{"nothing", team.OTLP{}, env(), false, ""},
		{"team file", team.OTLP{Endpoint: "http://h:4318"}, env(), true, team.OTLPHTTP},
		{"team file grpc", team.OTLP{Endpoint: "http://h:4317", Protocol: team.OTLPGRPC}, env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"), true, team.OTLPGRPC},
		{"environment", team.OTLP{}, env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), true, team.OTLPGRPC},
		{"traces endpoint", team.OTLP{}, env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://h:4318/v1/traces"), true, team.OTLPHTTP},
		{"sdk disabled", team.OTLP{Endpoint: "http://h:4318"}, env("OTEL_SDK_DISABLED", "true"), false, ""},
		{"exporter none", team.OTLP{}, env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h", "OTEL_TRACES_EXPORTER", "none"), false, ""},
	} {
		on, p := Traces(tc.cfg, tc.env)
		if on != tc.on || p != tc.protocol {
			t.Errorf("%s: on %v %q, want %v %q", tc.name, on, p, tc.on, tc.protocol)
		}
	}
}

// The metrics: the counters from the events and the ledger, the gauges
// from the status at the scrape; no message id in any label.
func TestMetrics(t *testing.T) {
	st := control.Status{
		Agents:   []control.AgentStatus{{Name: "dev", Role: "developer", State: "idle", Backlog: 3}},
		Queues:   map[string]int{"reviewer": 2},
		Budgets:  []control.BudgetStatus{{Budget: "team/day", For: "team", Per: "day", UsedPct: 50}},
		Accounts: []control.AccountStatus{{Account: "/h", Name: "work", RateLimits: &control.RateLimitsStatus{Windows: []control.RateLimitWindowStatus{{Name: "primary", UsedPct: 25}}}}},
	}
	tel, err := New(context.Background(), Options{Config: team.Telemetry{Metrics: team.Metrics{Listen: "127.0.0.1:0"}},
		Roles: map[string]string{"dev": "developer"}, Status: func() control.Status { return st }, Getenv: func(string) string { return "" }})
	if err != nil || !tel.MetricsOn() || tel.TracesOn() {
		t.Fatalf("telemetry %v, %v", tel, err)
	}
	feed(tel, journeyEvents(time.Now()))
	tel.Event(eventlog.Event{Type: eventlog.EvShimStarted, Agent: "dev", Data: eventlog.ShimStarted{PID: 1}})
	tel.Event(eventlog.Event{Type: eventlog.EvShimStarted, Agent: "dev", Data: eventlog.ShimStarted{PID: 2}})
	tel.Event(eventlog.Event{Type: eventlog.EvAgentParked, Agent: "dev", Data: eventlog.AgentParked{Kind: "x"}})
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	body := string(b)
	for _, want := range []string{
		`batty_tokens_total{account="work",agent="dev",kind="input",model="gpt-x",role="developer"} 300`,
		`batty_tokens_total{account="work",agent="dev",kind="cached_input",model="gpt-x",role="developer"} 60`,
		`batty_tokens_total{account="work",agent="dev",kind="reasoning_output",model="gpt-x",role="developer"} 12`,
		`batty_messages_total{agent="dev",outcome="completed",role="developer"} 1`,
		`batty_turns_total{agent="dev",outcome="requeued",role="developer"} 1`,
		`batty_turns_total{agent="dev",outcome="completed",role="developer"} 1`,
		`batty_turn_duration_seconds_count{agent="dev",role="developer"} 2`,
		`batty_slot_wait_seconds_sum{agent="dev",role="developer"} 1`,
		`batty_landings_total{agent="dev",result="landed"} 1`,
		`batty_verify_duration_seconds_sum 4`,
		`batty_worker_restarts_total{agent="dev",kind="shim",role="developer"} 1`,
		`batty_alerts_total{kind="agent_parked"} 1`,
		`batty_backlog_messages{agent="dev",role="developer"} 3`,
		`batty_backlog_messages{agent="@reviewer",role="reviewer"} 2`,
		`batty_agent_state{agent="dev",role="developer",state="idle"} 1`,
		`batty_budget_used_ratio{budget="team/day",for="team",per="day"} 0.5`,
		`batty_rate_limit_used_ratio{account="work",window="primary"} 0.25`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("no %s in\n%s", want, grepBatty(body))
		}
	}
	if strings.Contains(body, msg) || strings.Contains(body, "r1") {
		t.Fatal("a message or request id in a label")
	}
}

func grepBatty(body string) string {
	var out []string
	for l := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(l, "batty_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

var _ sdktrace.SpanExporter = (*tracetest.InMemoryExporter)(nil)

// Every series the Grafana dashboard (docs/telemetry-dashboard.json)
// queries is one batty serves.
func TestDashboardQueriesServedMetrics(t *testing.T) {
	b, err := os.ReadFile("../docs/telemetry-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	m := newMetrics(prometheus.NewRegistry(), func(string) string { return "" })
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		defer close(ch)
		for _, c := range []prometheus.Collector{m.messages, m.turns, m.turnDuration, m.tokens, m.slotWait, m.landings, m.verify,
			m.restarts, m.alerts, newStatusCollector(nil)} {
			c.Describe(ch)
		}
	}()
	fq := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for desc := range ch {
		served[fq.FindStringSubmatch(desc.String())[1]] = true
	}
	name := regexp.MustCompile(`batty_[a-z_]+`)
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
				if !served[base] {
					t.Errorf("panel %q queries %s, which batty does not serve", p.Title, m)
				}
			}
		}
	}
}
