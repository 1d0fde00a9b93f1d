package shim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/appserver"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/retry"
)

func TestApplyAppTurn(t *testing.T) {
	usage := &appserver.ThreadUsage{Total: appserver.TokenUsage{InputTokens: 100, CachedInputTokens: 40, OutputTokens: 7, ReasoningOutputTokens: 2}}
	quota := "You've hit your usage limit. Try again at 5:56 PM."
	for _, c := range []struct {
		name   string
		stop   stopReason
		tr     appserver.TurnResult
		err    error
		status protocol.TurnStatus
		kind   protocol.FailureKind
		reply  string
		usage  codex.Usage
	}{
		{name: "completed", tr: appserver.TurnResult{Status: appserver.StatusCompleted, FinalMessage: "hi", Usage: usage},
			status: protocol.TurnCompleted, reply: "hi", usage: codex.Usage{InputTokens: 100, CachedInputTokens: 40, OutputTokens: 7, ReasoningOutputTokens: 2}},
		{name: "quota", tr: appserver.TurnResult{Status: appserver.StatusFailed, Error: &appserver.TurnError{Message: quota, Code: "usageLimitExceeded"}},
			status: protocol.TurnFailed, kind: protocol.FailQuota},
		{name: "context", tr: appserver.TurnResult{Status: appserver.StatusFailed, Error: &appserver.TurnError{Message: "Codex ran out of room in the model's context window."}},
			status: protocol.TurnFailed, kind: protocol.FailContextWindow},
		{name: "typed code over prose", tr: appserver.TurnResult{Status: appserver.StatusFailed, Error: &appserver.TurnError{Message: "something odd happened", Code: "usageLimitExceeded"}},
			status: protocol.TurnFailed, kind: protocol.FailQuota},
		{name: "typed auth whose prose says quota", tr: appserver.TurnResult{Status: appserver.StatusFailed, Error: &appserver.TurnError{Message: "quota exceeded?", Code: "unauthorized"}},
			status: protocol.TurnFailed, kind: protocol.FailAuth},
		{name: "code other: prose decides", tr: appserver.TurnResult{Status: appserver.StatusFailed, Error: &appserver.TurnError{Message: "Codex ran out of room in the model's context window.", Code: "other"}},
			status: protocol.TurnFailed, kind: protocol.FailContextWindow},
		{name: "failed without an error", tr: appserver.TurnResult{Status: appserver.StatusFailed},
			status: protocol.TurnFailed, kind: protocol.FailStream},
		{name: "interrupted by the shim", stop: stopInterrupt, tr: appserver.TurnResult{Status: appserver.StatusInterrupted},
			status: protocol.TurnInterrupted},
		{name: "interrupted by someone else", tr: appserver.TurnResult{Status: appserver.StatusInterrupted},
			status: protocol.TurnInterrupted},
		{name: "timed out", stop: stopTimeout, tr: appserver.TurnResult{Status: appserver.StatusInterrupted},
			status: protocol.TurnTimedOut},
		{name: "turn/start refused", err: &appserver.RPCError{Code: -32600, Message: "thread not found: x"},
			status: protocol.TurnFailed, kind: protocol.FailStream},
		{name: "connection ended", err: appserver.ErrClosed,
			status: protocol.TurnFailed, kind: protocol.FailExit},
		{name: "connection ended while stopping", stop: stopInterrupt, err: appserver.ErrClosed,
			status: protocol.TurnInterrupted},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := turnResult{exitCode: -1, stop: c.stop}
			applyAppTurn(&res, c.tr, c.err)
			status, kind, _ := outcome(res)
			if status != c.status || kind != c.kind || res.reply != c.reply || res.usage != c.usage {
				t.Fatalf("got %s %s reply %q usage %+v, want %s %s reply %q usage %+v", status, kind, res.reply, res.usage, c.status, c.kind, c.reply, c.usage)
			}
		})
	}
}

func TestAppServerArgs(t *testing.T) {
	got := appServerArgs(codex.ExecOptions{ReasoningEffort: "high", Config: []string{"a=1"}, Model: "m",
		AddDirs: []string{"/x/in", `/y/"q"`}, ExtraArgs: []string{"--oss", "-c", "b=2", "--config=c=3"}})
	want := []string{"-c", `model_reasoning_effort="high"`, "-c", `sandbox_workspace_write.writable_roots=["/x/in","/y/\"q\""]`,
		"-c", "a=1", "-c", "b=2", "-c", "c=3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("args %q, want %q", got, want)
	}
}

func TestDecodeAppNote(t *testing.T) {
	p := decodeAppNote(json.RawMessage(`{"threadId":"t","item":{"type":"commandExecution","id":"c1","command":"ls","exitCode":2,"status":"failed","aggregatedOutput":"x"}}`))
	if p.Item == nil || p.Item.Command != "ls" || p.Item.ExitCode == nil || *p.Item.ExitCode != 2 || p.Item.Status != "failed" {
		t.Fatalf("decoded %+v", p.Item)
	}
	p = decodeAppNote(json.RawMessage(`{"error":{"message":"Reconnecting... 1/5"},"willRetry":true}`))
	if p.Error == nil || !p.WillRetry || p.Error.Message != "Reconnecting... 1/5" {
		t.Fatalf("decoded %+v", p)
	}
	if p := decodeAppNote(json.RawMessage(`{"item":"nope"}`)); p.Item != nil {
		t.Fatalf("malformed params decoded to %+v", p.Item)
	}
}

func FuzzDecodeAppNote(f *testing.F) {
	f.Add([]byte(`{"item":{"type":"fileChange","changes":[{"path":"a","kind":{"type":"add"}}]}}`))
	f.Add([]byte(`{"error":null,"willRetry":true}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeAppNote(json.RawMessage(b))
	})
}

func TestAppNoteClass(t *testing.T) {
	cases := []struct {
		params string
		want   eventClass
	}{
		{`{"error":{"message":"Reconnecting... waiting for network (Connection failed)"},"willRetry":true}`, classNetworkWait},
		{`{"error":{"message":"Reconnecting... 2/5 (stream disconnected)"},"willRetry":true}`, classRetryNotice},
		{`{"error":{"message":"Reconnecting... waiting for network"},"willRetry":false}`, classOutput},
		{`{"willRetry":true}`, classOutput},
		{`not json`, classOutput},
	}
	for _, c := range cases {
		if got := appNoteClass(decodeAppNote(json.RawMessage(c.params))); got != c.want {
			t.Errorf("appNoteClass(%s) = %v, want %v", c.params, got, c.want)
		}
	}
}

func TestRateLimitsEvent(t *testing.T) {
	seen := time.Now()
	reset := seen.Add(90 * time.Minute).Truncate(time.Second)
	p := &appserver.RateLimitWindow{UsedPercent: 73.5, WindowMinutes: 300, ResetsAt: reset.Unix()}
	s := &appserver.RateLimitWindow{UsedPercent: 12}
	for _, c := range []struct {
		name string
		in   appserver.RateLimits
		want []protocol.RateLimitWindow
	}{
		{"none", appserver.RateLimits{LimitID: "codex"}, nil},
		{"primary only", appserver.RateLimits{Primary: p}, []protocol.RateLimitWindow{
			{Name: "primary", UsedPct: 73.5, WindowMinutes: 300, ResetsAt: reset}}},
		{"secondary only, reset unknown", appserver.RateLimits{Secondary: s}, []protocol.RateLimitWindow{
			{Name: "secondary", UsedPct: 12}}},
		{"both", appserver.RateLimits{Primary: p, Secondary: s}, []protocol.RateLimitWindow{
			{Name: "primary", UsedPct: 73.5, WindowMinutes: 300, ResetsAt: reset},
			{Name: "secondary", UsedPct: 12}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev, ok := rateLimitsEvent(c.in, seen)
			if ok != (c.want != nil) {
				t.Fatalf("ok = %v, want %v", ok, c.want != nil)
			}
			if !ok {
				return
			}
			if !ev.SeenAt.Equal(seen) {
				t.Errorf("SeenAt = %v, want %v", ev.SeenAt, seen)
			}
			if len(ev.Windows) != len(c.want) {
				t.Fatalf("windows %+v, want %+v", ev.Windows, c.want)
			}
			for i, w := range ev.Windows {
				cw := c.want[i]
				if w.Name != cw.Name || w.UsedPct != cw.UsedPct || w.WindowMinutes != cw.WindowMinutes || !w.ResetsAt.Equal(cw.ResetsAt) {
					t.Errorf("window %d = %+v, want %+v", i, w, cw)
				}
			}
		})
	}
}

func TestCodeFailure(t *testing.T) {
	for _, c := range []struct {
		code   string
		status int
		want   protocol.FailureKind
	}{
		{"usageLimitExceeded", 0, protocol.FailQuota},
		{"usageLimitExceeded", 429, protocol.FailQuota},
		{"unauthorized", 0, protocol.FailAuth},
		{"contextWindowExceeded", 0, protocol.FailContextWindow},
		{"serverOverloaded", 0, protocol.FailStream},
		{"internalServerError", 500, protocol.FailStream},
		{"rateLimitExceeded", 0, protocol.FailStream},
		{"flexUnavailable", 0, protocol.FailStream},
		{"policyCapacityUnavailable", 0, protocol.FailStream},
		{"httpConnectionFailed", 0, protocol.FailStream},
		{"httpConnectionFailed", 502, protocol.FailStream},
		{"httpConnectionFailed", 401, protocol.FailAuth},
		{"httpConnectionFailed", 429, protocol.FailNone},
		{"httpConnectionFailed", 400, protocol.FailNone},
		{"responseStreamConnectionFailed", 503, protocol.FailStream},
		{"responseStreamDisconnected", 0, protocol.FailStream},
		{"responseTooManyFailedAttempts", 408, protocol.FailStream},
		{"responseTooManyFailedAttempts", 401, protocol.FailAuth},
		{"badRequest", 400, protocol.FailNone},
		{"sessionBudgetExceeded", 0, protocol.FailNone},
		{"modelNotFound", 0, protocol.FailNone},
		{"sandboxError", 0, protocol.FailNone},
		{"other", 0, protocol.FailNone},
		{"", 0, protocol.FailNone},
		{"somethingNew", 0, protocol.FailNone},
	} {
		if got := codeFailure(c.code, c.status); got != c.want {
			t.Errorf("codeFailure(%q, %d) = %q, want %q", c.code, c.status, got, c.want)
		}
	}
}

func TestExhaustedReset(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	win := func(pct float64, reset time.Time) *appserver.RateLimitWindow {
		w := &appserver.RateLimitWindow{UsedPercent: pct, WindowMinutes: 300}
		if !reset.IsZero() {
			w.ResetsAt = reset.Unix()
		}
		return w
	}
	in := func(d time.Duration) time.Time { return now.Add(d) }
	for _, c := range []struct {
		name string
		rl   appserver.RateLimits
		want time.Time
	}{
		{"none", appserver.RateLimits{}, time.Time{}},
		{"primary used up", appserver.RateLimits{Primary: win(100, in(time.Hour))}, in(time.Hour)},
		{"not used up", appserver.RateLimits{Primary: win(99, in(time.Hour))}, time.Time{}},
		{"reset unknown", appserver.RateLimits{Primary: win(100, time.Time{})}, time.Time{}},
		{"reset past", appserver.RateLimits{Primary: win(100, in(-time.Minute))}, time.Time{}},
		{"both used up: the later", appserver.RateLimits{Primary: win(100, in(time.Hour)), Secondary: win(100, in(48*time.Hour))}, in(48 * time.Hour)},
		{"only secondary used up", appserver.RateLimits{Primary: win(30, in(time.Hour)), Secondary: win(100, in(72*time.Hour))}, in(72 * time.Hour)},
	} {
		if got := exhaustedReset(c.rl, now); !got.Equal(c.want) {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestAppServerUnusable(t *testing.T) {
	closed := fmt.Errorf("initialize app-server: %w: the server closed its output (exit status 2)", appserver.ErrClosed)
	refused := fmt.Errorf("appserver: initialize: %w", &appserver.RPCError{Code: -32600, Message: "Invalid request: unknown variant `initialize`"})
	unknownMethod := fmt.Errorf("appserver: thread/start: %w", &appserver.RPCError{Code: -32600, Message: "Invalid request: unknown variant `thread/start`, expected one of …"})
	notFound := &appserver.RPCError{Code: -32601, Message: "method not found"}
	missingThread := fmt.Errorf("appserver: thread/resume: %w", &appserver.RPCError{Code: -32600, Message: "no rollout found for thread id x"})
	for _, c := range []struct {
		name    string
		stage   string
		err     error
		started bool
		want    bool
	}{
		{"no error", stageInitialize, nil, false, false},
		{"exits at initialize, first server", stageInitialize, closed, false, true},
		{"initialize refused, first server", stageInitialize, refused, false, true},
		{"initialize timed out, first server", stageInitialize, context.DeadlineExceeded, false, true},
		{"restart after a crash fails", stageInitialize, closed, true, false},
		{"unknown method", stageCall, unknownMethod, true, true},
		{"method not found", stageCall, notFound, true, true},
		{"unknown thread", stageCall, missingThread, true, false},
		{"connection ended", stageCall, closed, true, false},
	} {
		if got := appServerUnusable(c.stage, c.err, c.started); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// processState runs sh -c script and returns how it ended.
func processState(t *testing.T, script string) *os.ProcessState {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	_ = cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("sh -c %q did not run", script)
	}
	return cmd.ProcessState
}

// A call or turn cut short by the app-server connection's end is
// classified by the error that woke it alone: cut off (FailKilled, which
// the daemon retries) when the server's end ended the connection — a
// shared server's broker closing it, a process killed by a signal or whose
// end is unknown —, an exit when the process exited by itself, and
// nothing for an error that says no such end (a refusal, a timeout, the
// shim's own close).
func TestNoteDeath(t *testing.T) {
	killed := processState(t, "kill -KILL $$")
	exited := processState(t, "exit 3")
	closed := func(end *appserver.ClosedError) error {
		// As RunTurn and Call wrap it.
		return fmt.Errorf("appserver: turn U1: %w", fmt.Errorf("appserver: turn/start: %w", end))
	}
	reason := fmt.Errorf("%w: the server closed its output", appserver.ErrClosed)
	for _, c := range []struct {
		name   string
		err    error
		killed bool
		code   int
		kind   protocol.FailureKind
	}{
		{"shared connection ended by the broker", closed(&appserver.ClosedError{Reason: reason, ByPeer: true}), true, -1, protocol.FailKilled},
		{"own process killed", closed(&appserver.ClosedError{Reason: reason, ByPeer: true, Died: killed}), true, -1, protocol.FailKilled},
		{"own process exited", closed(&appserver.ClosedError{Reason: reason, ByPeer: true, Died: exited}), false, 3, protocol.FailExit},
		{"closed by the shim", closed(&appserver.ClosedError{Reason: reason}), false, -1, protocol.FailExit},
		{"refused", &appserver.RPCError{Code: -32600, Message: "no such thread"}, false, -1, protocol.FailExit},
		{"timed out", fmt.Errorf("appserver: thread/resume: %w", context.DeadlineExceeded), false, -1, protocol.FailExit},
		{"bare ErrClosed", appserver.ErrClosed, false, -1, protocol.FailExit},
		{"none", nil, false, -1, protocol.FailExit},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := turnResult{exitCode: -1}
			noteDeath(c.err, &res)
			if res.killed != c.killed || res.exitCode != c.code {
				t.Fatalf("killed %v exit %d, want %v %d", res.killed, res.exitCode, c.killed, c.code)
			}
			status, kind, msg := outcome(res)
			if status != protocol.TurnFailed || kind != c.kind {
				t.Fatalf("outcome %s %s, want failed %s", status, kind, c.kind)
			}
			if again := retry.Cause(protocol.TurnFinished{Status: status, Failure: kind, Error: msg}) != ""; again != c.killed {
				t.Fatalf("retried %v, want %v", again, c.killed)
			}
		})
	}
}

// TestTransientKind: a stream failure carries its kind of transient
// failure as the shim classified it; any other failure none, whatever its
// message says.
func TestTransientKind(t *testing.T) {
	for _, c := range []struct {
		kind protocol.FailureKind
		msg  string
		want protocol.Transient
	}{
		{protocol.FailStream, "unexpected status 502 Bad Gateway", protocol.TransientServer},
		{protocol.FailStream, "exceeded retry limit, last status: 429 Too Many Requests", protocol.TransientRateLimit},
		{protocol.FailStream, "Selected model is at capacity. Please try a different model.", protocol.TransientOverloaded},
		{protocol.FailStream, "stream disconnected before completion: idle timeout waiting for SSE", protocol.TransientStalled},
		{protocol.FailStream, "stream disconnected before completion: stream closed before response.completed", protocol.TransientDropped},
		{protocol.FailStream, "stream disconnected before completion: error sending request", protocol.TransientUnreachable},
		{protocol.FailStream, "the model said no", protocol.TransientNone},
		{protocol.FailQuota, "unexpected status 502 Bad Gateway", protocol.TransientNone},
		{protocol.FailNone, "", protocol.TransientNone},
	} {
		if got := transientKind(c.kind, c.msg); got != c.want {
			t.Errorf("transientKind(%s, %q) = %q, want %q", c.kind, c.msg, got, c.want)
		}
	}
}
