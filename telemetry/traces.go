package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/telemetry/traceid"
	"github.com/battyhq/batty/textclip"
	"github.com/battyhq/batty/usage"
)

// Attribute keys of the spans.
const (
	AttrMessageID     = "batty.message.id"
	AttrFrom          = "batty.message.from"
	AttrAgent         = "batty.agent"
	AttrRole          = "batty.role"
	AttrAccount       = "batty.account"
	AttrModel         = "batty.model"
	AttrAttempt       = "batty.attempt"
	AttrAttempts      = "batty.attempts"
	AttrOutcome       = "batty.outcome"
	AttrFailure       = "batty.failure"
	AttrTokensInput   = "batty.tokens.input"
	AttrTokensCached  = "batty.tokens.cached_input"
	AttrTokensOutput  = "batty.tokens.output"
	AttrTokensReason  = "batty.tokens.reasoning_output"
	AttrReplyTo       = "batty.reply.to"
	AttrReplyPreview  = "batty.reply.preview" // only with include_text
	AttrMessageText   = "batty.message.text"  // only with include_text
	AttrLandingID     = "batty.landing.request"
	AttrLandingResult = "batty.landing.result"
	AttrBranch        = "batty.branch"
	AttrCommit        = "batty.commit"
	AttrVerifyOutput  = "batty.verify.output" // only with include_text
)

// Bounds of what the tracer keeps between events.
const (
	maxJourneys = 10000
	maxLandings = 1000
	maxText     = 4096
	// slotFresh is how long a slot granted stays the wait of the agent's
	// next delivery.
	slotFresh = time.Minute
)

// tracer makes the spans of each message's journey from the daemon's
// events, after the fact, each with the timestamps the events carry and
// the ids traceid derives from the message's id. The caller holds the
// telemetry's lock around each call.
type tracer struct {
	tp     *sdktrace.TracerProvider
	tr     trace.Tracer
	text   bool
	roleOf func(string) string
	// messageText reads a message's text (include_text only; nil: none).
	messageText func(agent, id string) string

	journeys map[string]*journey
	order    []string          // the journeys' ids, oldest first (some may be gone)
	inflight map[string]string // agent → the message its turn runs
	slots    map[string]slotGrant
	landings map[string]landingRef
	landOrd  []string
}

// journey is what the tracer knows of one message until its outcome.
type journey struct {
	id, agent, role, from string
	sent                  time.Time
	queuedFrom            time.Time // the start of its present wait in the queue
	attempt               int       // the attempt in flight (0: none)
	delivered             time.Time
	closed                bool       // the attempt's turn span is made
	ledger                usage.Turn // the attempt's usage, when the ledger has it
	haveLedger            bool
	commitAt, replyAt     time.Time
	replyTo, preview      string
	text                  string // the message's text (include_text), clipped
	attempts              int
	tokens                usage.Tokens
	account, model        string
}

// slotGrant is a slot an agent got after waiting.
type slotGrant struct {
	at     time.Time
	waited time.Duration
}

// landingRef is a queued landing: the message whose journey it belongs to
// ("" for one asked outside a turn: a trace of its own) and when it was
// queued.
type landingRef struct {
	msg    string
	queued time.Time
}

func newTracer(tp *sdktrace.TracerProvider, text bool, roleOf func(string) string) *tracer {
	return &tracer{tp: tp, tr: tp.Tracer("github.com/battyhq/batty"), text: text, roleOf: roleOf,
		journeys: map[string]*journey{}, inflight: map[string]string{}, slots: map[string]slotGrant{}, landings: map[string]landingRef{}}
}

// journeyOf returns the journey of message id, made (sent at sent) when
// it is new.
func (t *tracer) journeyOf(id, agent string, sent time.Time) *journey {
	if j, ok := t.journeys[id]; ok {
		return j
	}
	j := &journey{id: id, agent: agent, role: t.roleOf(agent), sent: sent, queuedFrom: sent}
	t.journeys[id] = j
	t.order = append(t.order, id)
	for len(t.journeys) > maxJourneys && len(t.order) > 0 {
		delete(t.journeys, t.order[0])
		t.order = t.order[1:]
	}
	if len(t.order) > 2*maxJourneys {
		t.order = compact(t.order, func(id string) bool { _, ok := t.journeys[id]; return ok })
	}
	return j
}

// compact keeps the ids of ids that keep says to.
func compact(ids []string, keep func(string) bool) []string {
	out := ids[:0]
	for _, id := range ids {
		if keep(id) {
			out = append(out, id)
		}
	}
	return out
}

// sentAt is when message id was sent: as the delivery says, else as its id
// says, else at.
func sentAt(id string, d time.Time, at time.Time) time.Time {
	if !d.IsZero() {
		return d
	}
	if t, ok := inbox.GeneratedIDTime(id); ok && !t.After(at) {
		return t
	}
	return at
}

// event follows e.
func (t *tracer) event(e eventlog.Event) {
	switch d := e.Data.(type) {
	case eventlog.Delivered:
		t.delivered(e, d)
	case eventlog.SlotGranted:
		t.slots[e.Agent] = slotGrant{at: e.Time, waited: time.Duration(d.WaitedMS) * time.Millisecond}
	case eventlog.WorkspaceCommitted:
		if j := t.journeys[e.Message]; j != nil && j.attempt > 0 && e.Message != "" {
			j.commitAt = e.Time
		}
	case eventlog.Reply:
		if j := t.journeys[d.InReplyTo]; j != nil {
			j.replyAt, j.replyTo, j.preview = e.Time, d.To, d.Preview
		}
	case eventlog.TurnFinished:
		t.turnFinished(e, d)
	case eventlog.Cancelled:
		if !d.Interrupted {
			j := t.journeyOf(e.Message, e.Agent, sentAt(e.Message, time.Time{}, e.Time))
			t.finish(j, e.Time, OutcomeCancelled, "")
		}
	case eventlog.LandingQueued:
		ref := landingRef{queued: e.Time}
		if m := t.inflight[d.By]; m != "" {
			ref.msg = m
		}
		t.landings[d.Request] = ref
		t.landOrd = append(t.landOrd, d.Request)
		for len(t.landings) > maxLandings && len(t.landOrd) > 0 {
			delete(t.landings, t.landOrd[0])
			t.landOrd = t.landOrd[1:]
		}
		if len(t.landOrd) > 2*maxLandings {
			t.landOrd = compact(t.landOrd, func(id string) bool { _, ok := t.landings[id]; return ok })
		}
	case eventlog.Landed:
		result := LandingLanded
		if d.Nothing {
			result = LandingNothing
		}
		t.landing(e, d.Request, d.Request, result, d.Steps, true, attribute.String(AttrBranch, d.Branch), attribute.String(AttrCommit, d.Commit))
	case eventlog.LandingFailed:
		result := LandingFailed
		if len(d.Conflicts) > 0 {
			result = LandingConflict
		}
		attrs := []attribute.KeyValue{attribute.String(AttrBranch, d.Branch), attribute.StringSlice("batty.landing.conflicts", d.Conflicts)}
		if t.text && d.Output != "" {
			attrs = append(attrs, attribute.String(AttrVerifyOutput, textclip.Bytes(d.Output, maxText, textclip.Truncated)))
		}
		t.landing(e, d.Request, d.Request, result, d.Steps, false, attrs...)
	case eventlog.ReviewWaiting:
		t.landing(e, d.Request, d.Request+"#review", LandingReview, d.Steps, false, attribute.String(AttrBranch, d.Branch))
	case eventlog.LandingRejected:
		t.landing(e, d.Request, d.Request, LandingRejected, eventlog.LandingSteps{}, false, attribute.String(AttrBranch, d.Branch))
	}
	switch e.Type {
	case eventlog.EvRequeued:
		t.requeued(e)
	case eventlog.EvRejected:
		if e.Message != "" && !landingRequest(e) {
			j := t.journeyOf(e.Message, e.Agent, sentAt(e.Message, time.Time{}, e.Time))
			t.finish(j, e.Time, OutcomeRejected, "")
		}
	}
}

// delivered starts attempt d.Attempt of e.Message: the wait in the queue
// (and for a slot) before it is a span.
func (t *tracer) delivered(e eventlog.Event, d eventlog.Delivered) {
	j := t.journeyOf(e.Message, e.Agent, sentAt(e.Message, d.SentAt, e.Time))
	if j.from == "" {
		j.from = d.From
	}
	if t.messageText != nil && j.text == "" {
		j.text = textclip.Bytes(t.messageText(e.Agent, e.Message), maxText, textclip.Truncated)
	}
	if j.agent != e.Agent {
		j.agent, j.role = e.Agent, t.roleOf(e.Agent)
	}
	if j.attempt > 0 && !j.closed {
		// An attempt that ended with no word of it (a daemon restart).
		t.turnSpan(j, j.delivered, e.Time, "cut_off", "", nil)
	}
	queuedEnd := e.Time
	if g, ok := t.slots[e.Agent]; ok {
		delete(t.slots, e.Agent)
		if !g.at.After(e.Time) && e.Time.Sub(g.at) < slotFresh {
			start := maxTime(g.at.Add(-g.waited), j.queuedFrom)
			t.span(j.id, traceid.Slot, d.Attempt, "", traceid.Span(j.id, traceid.Message, 0, ""), start, g.at, codes.Unset,
				t.who(j)...)
			queuedEnd = start
		}
	}
	t.span(j.id, traceid.Queued, d.Attempt, "", traceid.Span(j.id, traceid.Message, 0, ""), j.queuedFrom, queuedEnd, codes.Unset,
		append(t.who(j), attribute.Int(AttrAttempt, d.Attempt))...)
	j.attempt, j.delivered, j.closed, j.haveLedger, j.ledger = d.Attempt, e.Time, false, false, usage.Turn{}
	j.commitAt, j.replyAt = time.Time{}, time.Time{}
	j.attempts++
	t.inflight[e.Agent] = j.id
}

// turn takes the usage of a turn the ledger added: its end and tokens.
func (t *tracer) turn(u usage.Turn) {
	j := t.journeys[u.Message]
	if j == nil || j.attempt != u.Attempt {
		return
	}
	j.ledger, j.haveLedger = u, true
	j.tokens = j.tokens.Add(u.Tokens)
	j.account, j.model = u.Account, u.Model
}

// requeued puts e.Message back in the queue: an attempt cut off (no usage
// of it) ends here; one that ended ends with its turn_finished.
func (t *tracer) requeued(e eventlog.Event) {
	j := t.journeys[e.Message]
	if j == nil {
		return
	}
	if j.attempt > 0 && !j.closed && !j.haveLedger {
		t.turnSpan(j, j.delivered, e.Time, "requeued", e.Detail, nil)
	}
	j.queuedFrom = e.Time
	if t.inflight[j.agent] == j.id {
		delete(t.inflight, j.agent)
	}
}

// turnFinished ends the attempt of e.Message: its turn, commit and reply
// spans, and the journey when the outcome is final.
func (t *tracer) turnFinished(e eventlog.Event, d eventlog.TurnFinished) {
	j := t.journeys[e.Message]
	if j == nil || d.Attempt != j.attempt {
		return
	}
	end := e.Time
	switch {
	case j.haveLedger && !j.ledger.At.Before(j.delivered) && !j.ledger.At.After(e.Time):
		end = j.ledger.At
	case d.DurationMS > 0 && j.delivered.Add(time.Duration(d.DurationMS)*time.Millisecond).Before(e.Time):
		end = j.delivered.Add(time.Duration(d.DurationMS) * time.Millisecond)
	}
	if !j.closed {
		tokens := usage.Tokens{Input: d.InputTokens, Output: d.OutputTokens}
		if j.haveLedger {
			tokens = j.ledger.Tokens
		} else {
			j.tokens = j.tokens.Add(tokens)
		}
		t.turnSpan(j, j.delivered, end, d.Status, d.Failure, &tokens)
	}
	next := end
	if !j.commitAt.IsZero() && !j.commitAt.Before(end) {
		t.span(j.id, traceid.Commit, j.attempt, "", traceid.Span(j.id, traceid.Message, 0, ""), end, j.commitAt, codes.Unset, t.who(j)...)
		next = j.commitAt
	}
	if !j.replyAt.IsZero() && !j.replyAt.Before(next) {
		attrs := append(t.who(j), attribute.String(AttrReplyTo, j.replyTo))
		if t.text && j.preview != "" {
			attrs = append(attrs, attribute.String(AttrReplyPreview, j.preview))
		}
		t.span(j.id, traceid.Reply, j.attempt, "", traceid.Span(j.id, traceid.Message, 0, ""), next, j.replyAt, codes.Unset, attrs...)
	}
	if d.Requeued {
		j.queuedFrom = e.Time
		if t.inflight[j.agent] == j.id {
			delete(t.inflight, j.agent)
		}
		return
	}
	outcome := d.Status
	if d.Cancelled {
		outcome = OutcomeCancelled
	}
	t.finish(j, e.Time, outcome, d.Failure)
}

// turnSpan makes the span of j's attempt in flight, from start to end.
func (t *tracer) turnSpan(j *journey, start, end time.Time, status, failure string, tokens *usage.Tokens) {
	j.closed = true
	attrs := append(t.who(j), attribute.Int(AttrAttempt, j.attempt), attribute.String(AttrOutcome, label(status)))
	if failure != "" {
		attrs = append(attrs, attribute.String(AttrFailure, failure))
	}
	if j.haveLedger {
		attrs = append(attrs, attribute.String(AttrAccount, j.ledger.Account), attribute.String(AttrModel, j.ledger.Model))
	}
	if tokens != nil {
		attrs = append(attrs, tokenAttrs(*tokens)...)
	}
	code := codes.Unset
	if status != "completed" {
		code = codes.Error
	}
	t.span(j.id, traceid.Turn, j.attempt, "", traceid.Span(j.id, traceid.Message, 0, ""), start, end, code, attrs...)
}

// finish ends j's journey at end with outcome: its root span.
func (t *tracer) finish(j *journey, end time.Time, outcome, failure string) {
	attrs := append(t.who(j), attribute.String(AttrFrom, j.from), attribute.String(AttrOutcome, label(outcome)),
		attribute.Int(AttrAttempts, j.attempts))
	if failure != "" {
		attrs = append(attrs, attribute.String(AttrFailure, failure))
	}
	if j.account != "" || j.model != "" {
		attrs = append(attrs, attribute.String(AttrAccount, j.account), attribute.String(AttrModel, j.model))
	}
	attrs = append(attrs, tokenAttrs(j.tokens)...)
	if j.text != "" {
		attrs = append(attrs, attribute.String(AttrMessageText, j.text))
	}
	code := codes.Unset
	if outcome != "completed" {
		code = codes.Error
	}
	t.span(j.id, traceid.Message, 0, "", [8]byte{}, j.sent, end, code, attrs...)
	delete(t.journeys, j.id)
	if t.inflight[j.agent] == j.id {
		delete(t.inflight, j.agent)
	}
}

// landing makes the spans of landing request req that ended with result
// at e.Time (key names the landing span): the landing, and its merge,
// verify and (landed) land steps. It belongs to the journey of the
// message whose turn asked for it, else to a trace of its own.
func (t *tracer) landing(e eventlog.Event, req, key, result string, s eventlog.LandingSteps, landed bool, extra ...attribute.KeyValue) {
	ref, ok := t.landings[req]
	if !ok {
		ref = landingRef{queued: e.Time}
	}
	if result != LandingReview {
		delete(t.landings, req)
	}
	msg, parent := ref.msg, traceid.Span(ref.msg, traceid.Message, 0, "")
	if msg == "" {
		// A trace of its own, the landing its root.
		msg, parent = "landing/"+req, [8]byte{}
	}
	start := ref.queued
	if !s.MergeAt.IsZero() && s.MergeAt.Before(start) {
		start = s.MergeAt
	}
	attrs := append([]attribute.KeyValue{attribute.String(AttrAgent, e.Agent), attribute.String(AttrLandingID, req),
		attribute.String(AttrLandingResult, result)}, extra...)
	code := codes.Unset
	if result == LandingFailed || result == LandingConflict || result == LandingRejected {
		code = codes.Error
	}
	t.span(msg, traceid.Landing, 0, key, parent, start, e.Time, code, attrs...)
	self := traceid.Span(msg, traceid.Landing, 0, key)
	step := []attribute.KeyValue{attribute.String(AttrAgent, e.Agent), attribute.String(AttrLandingID, req)}
	if s.MergeAt.IsZero() {
		return
	}
	mergeEnd := e.Time
	if !s.VerifyAt.IsZero() {
		mergeEnd = s.VerifyAt
	}
	mergeCode := codes.Unset
	if result == LandingConflict {
		mergeCode = codes.Error
	}
	t.span(msg, traceid.Merge, 0, key, self, s.MergeAt, mergeEnd, mergeCode, step...)
	if s.VerifyAt.IsZero() {
		return
	}
	verifyEnd := e.Time
	if !s.VerifyEndedAt.IsZero() {
		verifyEnd = s.VerifyEndedAt
	}
	verifyCode := codes.Unset
	if result == LandingFailed {
		verifyCode = codes.Error
	}
	t.span(msg, traceid.Verify, 0, key, self, s.VerifyAt, verifyEnd, verifyCode, step...)
	if landed {
		t.span(msg, traceid.Land, 0, key, self, verifyEnd, e.Time, codes.Unset, step...)
	}
}

// who are the attributes naming j's message and agent.
func (t *tracer) who(j *journey) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String(AttrMessageID, j.id), attribute.String(AttrAgent, j.agent), attribute.String(AttrRole, j.role)}
}

// tokenAttrs are the attributes of tokens.
func tokenAttrs(u usage.Tokens) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.Int64(AttrTokensInput, u.Input), attribute.Int64(AttrTokensCached, u.CachedInput),
		attribute.Int64(AttrTokensOutput, u.Output), attribute.Int64(AttrTokensReason, u.ReasoningOutput)}
}

// span exports the span of kind (n, key: see traceid.Span) in the trace of
// msg, a child of parent (zero: the root), from start to end.
func (t *tracer) span(msg, kind string, n int, key string, parent [8]byte, start, end time.Time, code codes.Code, attrs ...attribute.KeyValue) {
	if end.Before(start) {
		end = start
	}
	tid := trace.TraceID(traceid.Trace(msg))
	ctx := withIDs(context.Background(), tid, trace.SpanID(traceid.Span(msg, kind, n, key)))
	if parent != ([8]byte{}) {
		ctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: trace.SpanID(parent), TraceFlags: trace.FlagsSampled}))
	}
	name := kind
	if n > 0 && (kind == traceid.Turn || kind == traceid.Queued || kind == traceid.Slot) {
		name = fmt.Sprintf("%s %d", kind, n)
	}
	_, sp := t.tr.Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindInternal))
	if code == codes.Error {
		sp.SetStatus(codes.Error, "")
	}
	sp.End(trace.WithTimestamp(end))
}

// maxTime is the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// idsKey carries the ids the next span gets (withIDs).
type idsKey struct{}

type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

// withIDs has the span started with ctx get the trace id tid (a root) and
// the span id sid.
func withIDs(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, idsKey{}, ids{tid, sid})
}

// derivedIDs is the tracer provider's IDGenerator: every span batty makes
// carries the ids traceid derives (withIDs), never random ones.
type derivedIDs struct{}

// NewIDs implements sdktrace.IDGenerator.
func (derivedIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	v, _ := ctx.Value(idsKey{}).(ids)
	return v.trace, v.span
}

// NewSpanID implements sdktrace.IDGenerator.
func (derivedIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	v, _ := ctx.Value(idsKey{}).(ids)
	return v.span
}
