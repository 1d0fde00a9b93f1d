package orchestrator

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
)

func TestPlanTurn(t *testing.T) {
	now := time.Now()
	facts := turnFacts{contextStep: contextRetrySame, maxAttempts: 3, now: now, retryBase: 10 * time.Second, retryMax: 300 * time.Second, jitter: 0.5}
	fresh := inbox.Message{ID: "m", From: "human", Attempt: 1}
	spent := inbox.Message{ID: "m", From: "human", Attempt: 3, Transient: &inbox.TransientRetry{Failures: 2}}
	turn := func(status protocol.TurnStatus, failure protocol.FailureKind, err string) protocol.TurnFinished {
		return protocol.TurnFinished{MessageID: "m", ThreadID: "t1", Status: status, Failure: failure, Error: err,
			Reply: "done", Usage: protocol.Usage{Input: 10, Output: 2}, ContextPct: 40}
	}
	completed := turn(protocol.TurnCompleted, "", "")
	network := turn(protocol.TurnFailed, protocol.FailNetwork, "stream disconnected")
	timedOut := turn(protocol.TurnTimedOut, "", "codex printed nothing for 10m0s")
	outcome := func(e protocol.TurnFinished, errText string) inbox.Outcome {
		return inbox.Outcome{Status: string(e.Status), Failure: string(e.Failure), Error: errText, ThreadID: "t1", InputTokens: 10, OutputTokens: 2}
	}
	with := func(f func(*turnFacts)) turnFacts {
		c := facts
		f(&c)
		return c
	}

	cases := []struct {
		name  string
		m     inbox.Message
		e     protocol.TurnFinished
		f     turnFacts
		want  turnPlan // but verdict
		retry bool     // verdict.retry
		fails int      // verdict.failures
		final string   // prefix of verdict.final
	}{
		{name: "codex could not start", m: fresh, e: turn(protocol.TurnFailed, protocol.FailSpawn, "no such file"), f: facts,
			want: turnPlan{end: turnUnstarted, net: netLeave}},
		{name: "completed", m: fresh, e: completed, f: facts,
			want: turnPlan{end: turnRecord, net: netAnswered, outcome: outcome(completed, ""), probeCompleted: true}},
		{name: "interrupted", m: fresh, e: turn(protocol.TurnInterrupted, "", "turn interrupted"), f: facts,
			want: turnPlan{end: turnRequeue, net: netTurnEnded, requeue: "interrupted: turn interrupted", lastError: "interrupted: turn interrupted"}},
		{name: "usage limit", m: fresh, e: turn(protocol.TurnFailed, protocol.FailQuota, "usage limit reached"), f: facts,
			want: turnPlan{end: turnRequeue, net: netTurnEnded, quotaHit: true, requeue: "quota: waits for the pause to end", retryKind: retryQuota,
				lastError: "failed quota: usage limit reached"}},
		{name: "login failed", m: fresh, e: turn(protocol.TurnFailed, protocol.FailAuth, "401"), f: facts,
			want: turnPlan{end: turnRequeue, net: netTurnEnded, requeue: "auth: waits for the pause to end", retryKind: retryAuth, lastError: "failed auth: 401"}},
		{name: "context window, first time", m: fresh, e: turn(protocol.TurnFailed, protocol.FailContextWindow, "window"), f: facts,
			want: turnPlan{end: turnRequeue, net: netTurnEnded, context: contextRetrySame, lastError: "failed context_window: window",
				requeue: "context window exhausted: retried on the same thread, which codex compacts first"}},
		{name: "context window, after compaction", m: fresh, e: turn(protocol.TurnFailed, protocol.FailContextWindow, "window"),
			f: with(func(f *turnFacts) { f.contextStep = contextHandoff }),
			want: turnPlan{end: turnRequeue, net: netTurnEnded, context: contextHandoff, lastError: "failed context_window: window",
				requeue: "context window exhausted again: retried on a fresh thread with a handoff"}},
		{name: "context window, even on a fresh thread", m: fresh, e: turn(protocol.TurnFailed, protocol.FailContextWindow, "window"),
			f:    with(func(f *turnFacts) { f.contextStep = contextFail }),
			want: turnPlan{end: turnRecord, net: netTurnEnded, lastError: "failed context_window: window", outcome: outcome(turn(protocol.TurnFailed, protocol.FailContextWindow, ""), "window")}},
		{name: "network failure, tries left", m: fresh, e: network, f: facts,
			want: turnPlan{end: turnRetryLater, net: netStillProbing, lastError: "failed network: stream disconnected",
				requeue: "retry 2 of 3 after an unreachable API: stream disconnected; the earlier attempt ended before any work was done and got no answer (the thread may show it above without one)"},
			retry: true, fails: 1},
		{name: "network failure, every try spent", m: spent, e: network, f: facts,
			want: turnPlan{end: turnRecord, net: netTurnEnded, lastError: "failed network: stream disconnected", retryable: "an unreachable API",
				outcome: outcome(network, "failed 3 of 3 attempts, the last after an unreachable API: stream disconnected")},
			fails: 3, final: "failed 3 of 3 attempts"},
		{name: "timed out, tries left", m: fresh, e: timedOut, f: facts,
			want: turnPlan{end: turnRetryLater, net: netTurnEnded, lastError: "timed_out: codex printed nothing for 10m0s",
				requeue: "retry 2 of 3 after a timeout: codex printed nothing for 10m0s; the earlier attempt ended before any work was done and got no answer (the thread may show it above without one)"},
			retry: true, fails: 1},
		{name: "timed out, one try only", m: fresh, e: timedOut, f: with(func(f *turnFacts) { f.maxAttempts = 1 }),
			want: turnPlan{end: turnRecord, net: netTurnEnded, lastError: "timed_out: codex printed nothing for 10m0s", retryable: "a timeout",
				outcome: outcome(timedOut, "codex printed nothing for 10m0s")},
			fails: 1, final: "codex printed nothing for 10m0s"},
		{name: "a failure that does not pass", m: fresh, e: turn(protocol.TurnFailed, protocol.FailExit, "codex exited 3"), f: facts,
			want: turnPlan{end: turnRecord, net: netTurnEnded, lastError: "failed exit: codex exited 3",
				outcome: outcome(turn(protocol.TurnFailed, protocol.FailExit, ""), "codex exited 3")}},
		{name: "a failure without an error", m: fresh, e: turn(protocol.TurnFailed, protocol.FailExit, ""), f: facts,
			want: turnPlan{end: turnRecord, net: netTurnEnded, outcome: outcome(turn(protocol.TurnFailed, protocol.FailExit, ""), "")}},
	}
	for _, c := range cases {
		got := planTurn(c.m, c.e, c.f)
		v := got.verdict
		got.verdict = retryVerdict{}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
		if v.retry != c.retry || v.failures != c.fails || !strings.HasPrefix(v.final, c.final) {
			t.Errorf("%s: verdict %+v", c.name, v)
		}
		if v.retry && (v.record.Note != c.want.requeue || !v.record.NotBefore.Equal(now.Add(v.delay)) || v.delay <= 0) {
			t.Errorf("%s: retry record %+v after %s", c.name, v.record, v.delay)
		}
	}
}
