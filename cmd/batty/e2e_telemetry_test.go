package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/telemetry/telemetrytest"
	"github.com/battyhq/batty/telemetry/traceid"
	"github.com/battyhq/batty/usage"
)

// telemetryWait bounds how long a scrape or an export may take to show
// what the team did.
const telemetryWait = 60 * time.Second

// A real Prometheus scrapes a running team's /metrics (telemetry.metrics):
// the tokens it holds, by kind, are what `batty usage` reports, and the
// messages, turns and states are the team's.
func TestE2EPrometheusScrapesTheTeam(t *testing.T) {
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	var (
		mu sync.Mutex
		n  int
	)
	srv.Handle(func(req codextest.Request) codextest.Reply {
		r := srv.Scripted(req)
		mu.Lock()
		defer mu.Unlock()
		n++
		r.InputTokens, r.OutputTokens = 1000+7*n, 20+n
		return r
	})
	metrics := "127.0.0.1:" + strconv.Itoa(telemetrytest.FreePort(t))
	prom := telemetrytest.StartPrometheus(t, metrics)
	r := newTeamRun(t, "e2e-metrics")
	r.writeTeam(fmt.Sprintf(`name: e2e-metrics
codex:
  bin: %s
  codex_home: %s
  sandbox: danger-full-access
telemetry:
  metrics: %q
roles:
  - name: eng
  - name: warm
    codex:
      runtime: app-server
`, codexBin, home, metrics))
	r.must("start", "--no-tmux")
	const turns = 2
	for i := range turns {
		r.must("send", "eng", fmt.Sprintf("exec turn %d [[mock:reply E%d]]", i, i))
		r.must("send", "warm", fmt.Sprintf("warm turn %d [[mock:reply W%d]]", i, i))
	}
	r.waitStatus("every turn", func(st control.Status) bool {
		e, w := agentStatus(st, "eng"), agentStatus(st, "warm")
		return e.TurnsCompleted == turns && w.TurnsCompleted == turns && e.State == "idle" && w.State == "idle"
	})
	var got struct {
		Total usage.Row `json:"total"`
	}
	if err := json.Unmarshal([]byte(r.must("usage", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Total.Turns != 2*turns || got.Total.Tokens.Input == 0 {
		t.Fatalf("usage %+v", got.Total)
	}
	want := map[string]float64{
		`sum(batty_tokens_total{kind="input"})`:                                float64(got.Total.Tokens.Input),
		`sum(batty_tokens_total{kind="cached_input"})`:                         float64(got.Total.Tokens.CachedInput),
		`sum(batty_tokens_total{kind="output"})`:                               float64(got.Total.Tokens.Output),
		`sum(batty_tokens_total{kind="reasoning_output"})`:                     float64(got.Total.Tokens.ReasoningOutput),
		`sum(batty_messages_total{outcome="completed"})`:                       2 * turns,
		`sum(batty_turns_total{agent="warm",role="warm",outcome="completed"})`: turns,
		`batty_agent_state{agent="eng",role="eng",state="idle"}`:               1,
		`sum(batty_backlog_messages)`:                                          0,
		`sum(batty_turn_duration_seconds_count)`:                               2 * turns,
	}
	deadline := time.Now().Add(telemetryWait)
	for q, w := range want {
		for {
			v, ok, err := prom.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			if ok && v == w {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is %v (%v), batty says %v", q, v, ok, w)
			}
			time.Sleep(200 * time.Millisecond) // Prometheus scrapes each second
		}
	}
	// No message id in any label: the series' labels are the team's.
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if id := messageID.Find(body); id != nil {
		t.Fatalf("a message id in the metrics: %s", id)
	}
}

// messageID matches the ids batty gives messages.
var messageID = regexp.MustCompile(`[0-9]{8}T[0-9]{6}\.[0-9]{9}Z-[0-9a-f]{8}`)

// A real Jaeger (v2, OTLP in) receives the journey of a message to an
// app-server agent in a worktree whose turn runs `batty merge`: its query
// API shows the message's spans — queued, the turn, the commit, the reply
// — in order under the message, with the agent, role, model, message id,
// tokens and outcome, the landing the turn asked for (its merge, verify
// and land) under the same message, and Codex's own spans of the turn
// (its OpenTelemetry export pointed at the same Jaeger) under batty's turn
// span — also for an agent on the daemon's shared app-server, through its
// broker. No text of the prompt or the
// reply is in any span (include_text is off). A second team, with no
// telemetry key and the standard variables pointing at the same Jaeger
// but OTEL_SDK_DISABLED, exports nothing.
func TestE2EJaegerReceivesAMessagesJourney(t *testing.T) {
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	jaeger := telemetrytest.StartJaeger(t)
	// Off, first: no telemetry key, the standard variables point at the
	// same Jaeger with the SDK disabled. Checked once the traced team's
	// trace has arrived, long after this team has stopped.
	off := newTeamRun(t, "e2e-traces-off")
	off.env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + jaeger.OTLPHTTP, "OTEL_SDK_DISABLED=true", "OTEL_SERVICE_NAME=batty-off"}
	off.writeTeam(fmt.Sprintf(`name: e2e-traces-off
codex:
  bin: %s
  codex_home: %s
  sandbox: danger-full-access
roles:
  - name: eng
`, codexBin, home))
	off.must("start", "--no-tmux")
	offID := messageID.FindString(off.must("send", "eng", "off [[mock:reply fine]]"))
	off.waitStatus("the turn", func(st control.Status) bool { return agentStatus(st, "eng").TurnsCompleted == 1 })
	off.must("stop", "--timeout", "5s")

	r := newTeamRun(t, "e2e-traces")
	r.env = []string{"HOME=" + t.TempDir()}
	r.writeTeam(fmt.Sprintf(`name: e2e-traces
codex:
  bin: %s
  codex_home: %s
  model: gpt-5
  config:
    otel.trace_exporter.otlp-http.endpoint: %q
    otel.trace_exporter.otlp-http.protocol: binary
workspace:
  verify: test -s feature.txt
telemetry:
  otlp: {endpoint: %q}
%sroles:
  - name: eng
    workspace: worktree
    codex:
      runtime: app-server
  - name: ops
    codex:
      runtime: app-server
      app_server: per-account
`, codexBin, home, jaeger.OTLPHTTP+"/v1/traces", jaeger.OTLPHTTP, sandboxOrOff(t)))
	for name, text := range map[string]string{"README": "hello\n", ".gitignore": ".batty/\n"} {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, r.dir, "init", "-q", "-b", "main")
	gitIn(t, r.dir, "add", "-A")
	gitIn(t, r.dir, "commit", "-q", "-m", "initial")

	r.must("start", "--no-tmux")
	const secret = "PROMPTTEXT-4242"
	out := r.must("send", "eng", secret+` [[mock:shell printf 'from the turn\n' > feature.txt && "$BATTY_BIN" merge eng]]`)
	id := messageID.FindString(out)
	if id == "" {
		t.Fatalf("no message id in %q", out)
	}
	// ops' turn runs on the daemon's shared app-server, through its
	// broker.
	opsID := messageID.FindString(r.must("send", "ops", "ops [[mock:reply done]]"))
	r.waitStatus("eng's landing to end", func(st control.Status) bool {
		return len(st.Landings) > 0 && (st.Landings[0].State == "landed" || st.Landings[0].State == "failed") &&
			agentStatus(st, "eng").TurnsCompleted == 1 && agentStatus(st, "ops").TurnsCompleted == 1
	})
	// Both batty's spans and Codex's (its own export, in batches) arrive
	// while the team runs.
	tid := traceid.Trace(id)
	turnSpan := traceid.Span(id, traceid.Turn, 1, "")
	var spans []telemetrytest.Span
	deadline := time.Now().Add(telemetryWait)
	for {
		var err error
		if spans, err = jaeger.Trace(hex.EncodeToString(tid[:])); err != nil {
			t.Fatal(err)
		}
		if hasSpans(spans, "message", "turn 1", "landing", "land") && slices.ContainsFunc(spans, func(s telemetrytest.Span) bool {
			return s.Parent() == hex.EncodeToString(turnSpan[:]) && s.OperationName != "commit"
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace of %s: %d spans %v", id, len(spans), spanNames(spans))
		}
		time.Sleep(200 * time.Millisecond) // Jaeger is another process
	}
	// Codex's spans of ops' turn, through the broker, under its turn span.
	opsTID, opsTurn := traceid.Trace(opsID), traceid.Span(opsID, traceid.Turn, 1, "")
	for {
		opsSpans, err := jaeger.Trace(hex.EncodeToString(opsTID[:]))
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(opsSpans, func(s telemetrytest.Span) bool { return s.Parent() == hex.EncodeToString(opsTurn[:]) }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span of Codex under ops' turn span (through the shared app-server): %v", spanNames(opsSpans))
		}
		time.Sleep(200 * time.Millisecond) // Jaeger is another process
	}
	r.must("stop", "--timeout", "5s")
	byName := map[string]telemetrytest.Span{}
	for _, s := range spans {
		byName[s.OperationName] = s
	}
	root := byName["message"]
	if root.Parent() != "" {
		t.Fatalf("the message span has a parent: %+v", root)
	}
	// In order, under the message.
	order := []string{"queued 1", "turn 1", "commit", "reply"}
	var last int64
	for _, name := range order {
		s, ok := byName[name]
		if !ok {
			t.Fatalf("no %s span in %v", name, spanNames(spans))
		}
		if s.Parent() != root.SpanID {
			t.Fatalf("%s is not a child of the message", name)
		}
		if s.StartTime < last || s.StartTime < root.StartTime || s.StartTime+s.Duration > root.StartTime+root.Duration+1 {
			t.Fatalf("%s at %d+%d out of order (after %d, message %d+%d)", name, s.StartTime, s.Duration, last, root.StartTime, root.Duration)
		}
		last = s.StartTime + s.Duration
	}
	turn := byName["turn 1"]
	if want := traceid.TurnParent(id, 1); !strings.Contains(want, turn.SpanID) {
		t.Fatalf("turn span %s, the shim handed Codex %s", turn.SpanID, want)
	}
	// Codex's own spans of the turn hang under batty's turn span: the
	// app-server took the trace context of turn/start.
	var codexSpans []string
	for _, s := range spans {
		if s.Parent() == turn.SpanID && s.ProcessID != turn.ProcessID {
			codexSpans = append(codexSpans, s.OperationName)
		}
	}
	if len(codexSpans) == 0 {
		t.Fatalf("no span of Codex under the turn span in %v", spanNames(spans))
	}
	for key, want := range map[string]any{"batty.agent": "eng", "batty.role": "eng", "batty.model": "gpt-5", "batty.message.id": id, "batty.outcome": "completed"} {
		if v, ok := turn.Tag(key); !ok || v != want {
			t.Fatalf("turn's %s is %v (%v), want %v", key, v, ok, want)
		}
	}
	if v, ok := turn.Tag("batty.tokens.input"); !ok || v.(float64) <= 0 {
		t.Fatalf("turn's input tokens %v (%v)", v, ok)
	}
	if v, _ := root.Tag("batty.outcome"); v != "completed" {
		t.Fatalf("message outcome %v", v)
	}
	// The landing the turn asked for, under the message.
	landing := byName["landing"]
	if landing.Parent() != root.SpanID {
		t.Fatalf("the landing is not under the message: %+v", landing)
	}
	if v, _ := landing.Tag("batty.landing.result"); v != "landed" {
		t.Fatalf("landing result %v", v)
	}
	// Its steps, as the merge queue timed them: merge, verify, land in
	// order.
	var at int64
	for _, name := range []string{"merge", "verify", "land"} {
		s, ok := byName[name]
		if !ok || s.Parent() != landing.SpanID || s.StartTime < at {
			t.Fatalf("%s (%v): %+v in %v", name, ok, s, spanNames(spans))
		}
		at = s.StartTime
	}
	for _, s := range spans {
		if s.ProcessID != root.ProcessID {
			continue // Codex's: what it exports is its own setting
		}
		for _, kv := range s.Tags {
			if strings.Contains(fmt.Sprint(kv.Value), "PROMPTTEXT") || strings.Contains(fmt.Sprint(kv.Value), "from the turn") {
				t.Fatalf("span %s carries text: %s=%v", s.OperationName, kv.Key, kv.Value)
			}
		}
	}
	// The team with telemetry off exported nothing.
	otid := traceid.Trace(offID)
	if spans, err := jaeger.Trace(hex.EncodeToString(otid[:])); err != nil || len(spans) != 0 {
		t.Fatalf("a team with telemetry off exported %v (%v)", spanNames(spans), err)
	}
	if svcs, err := jaeger.Services(); err != nil || slices.Contains(svcs, "batty-off") {
		t.Fatalf("services %v (%v)", svcs, err)
	}
}

func hasSpans(spans []telemetrytest.Span, names ...string) bool {
	have := spanNames(spans)
	for _, n := range names {
		if !slices.Contains(have, n) {
			return false
		}
	}
	return true
}

func spanNames(spans []telemetrytest.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.OperationName)
	}
	slices.Sort(out)
	return out
}

// `batty validate` refuses metrics on a wide address without TLS, and
// warns of one served in the clear with insecure: true.
func TestValidateMetricsListen(t *testing.T) {
	dir := fakeTeam(t, "wide", 1)
	appendTeam(t, dir, "telemetry: {metrics: \"0.0.0.0:9464\"}\n")
	_, errOut, code := runBattyIn(t, dir, nil, "", "validate")
	if code != 1 || !strings.Contains(errOut, `telemetry.metrics "0.0.0.0:9464" is not a loopback address: it needs TLS`) {
		t.Fatalf("validate of wide metrics without TLS: exit %d\n%s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(strings.Replace(readFile(t, filepath.Join(dir, "team.yaml")),
		`telemetry: {metrics: "0.0.0.0:9464"}`, `telemetry: {metrics: {listen: "0.0.0.0:9464", insecure: true}}`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBattyIn(t, dir, nil, "", "validate")
	if code != 0 || !strings.Contains(out, "valid") || !strings.Contains(errOut, `batty: warning: team.yaml: telemetry.metrics "0.0.0.0:9464" is not a loopback address and insecure: true serves it without TLS`) {
		t.Fatalf("validate of insecure wide metrics: exit %d\n%s\n%s", code, out, errOut)
	}
}
