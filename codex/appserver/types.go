package appserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/battyhq/batty/textclip"
)

// Method names of the calls and notifications the client uses
// (`codex app-server` of Codex CLI 0.169.0).
const (
	MethodInitialize        = "initialize"
	MethodInitialized       = "initialized"
	MethodThreadStart       = "thread/start"
	MethodThreadResume      = "thread/resume"
	MethodTurnStart         = "turn/start"
	MethodTurnInterrupt     = "turn/interrupt"
	MethodRateLimitsRead    = "account/rateLimits/read"
	MethodThreadCompact     = "thread/compact/start"
	MethodThreadFork        = "thread/fork"
	MethodThreadArchive     = "thread/archive"
	MethodThreadUnarchive   = "thread/unarchive"
	NotifyTurnStarted       = "turn/started"
	NotifyTurnCompleted     = "turn/completed"
	NotifyItemStarted       = "item/started"
	NotifyItemCompleted     = "item/completed"
	NotifyAgentMessageDelta = "item/agentMessage/delta"
	NotifyTokenUsage        = "thread/tokenUsage/updated"
	NotifyRateLimits        = "account/rateLimits/updated"
	NotifyError             = "error"
)

// Turn statuses in [TurnResult.Status].
const (
	StatusCompleted   = "completed"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// InitializeResult is the app-server's answer to initialize.
type InitializeResult struct {
	// UserAgent names the server and client, e.g.
	// "batty/0.169.0 (Debian 12.0.0; x86_64) …".
	UserAgent string `json:"userAgent"`
	// CodexHome is the absolute CODEX_HOME the server uses.
	CodexHome string `json:"codexHome"`
	// PlatformOS is "linux", "macos" or "windows".
	PlatformOS string `json:"platformOs"`
}

// ThreadOptions are the settings of a started or resumed thread; zero
// fields are left to the server's configuration (config.toml).
type ThreadOptions struct {
	// Cwd is the thread's working directory (absolute).
	Cwd string
	// Model is the model slug.
	Model string
	// Sandbox is "read-only", "workspace-write" or "danger-full-access".
	Sandbox string
	// ApprovalPolicy is "never", "on-request" or "untrusted"; batty uses
	// "never" (an approval request would have no one to answer it).
	ApprovalPolicy string
	// DeveloperInstructions are added to the thread as developer
	// instructions.
	DeveloperInstructions string
	// Config holds config.toml settings for this thread alone, over the
	// server's (its CODEX_HOME and -c arguments), keyed by dotted path
	// ("shell_environment_policy.set", "model_reasoning_effort",
	// "sandbox_workspace_write.writable_roots"), with JSON values. The
	// server does not keep them with the thread: a resume must send them
	// again (docs/codex-app-server.md, "One process, many agents").
	Config map[string]any
	// Ephemeral starts the thread in memory only (thread/start's
	// ephemeral): no rollout is written and it cannot be resumed. Not
	// sent on a resume.
	Ephemeral bool
}

// params returns the options as thread/start (or thread/resume) params.
func (o ThreadOptions) params() map[string]any {
	p := map[string]any{}
	set := func(k, v string) {
		if v != "" {
			p[k] = v
		}
	}
	set("cwd", o.Cwd)
	set("model", o.Model)
	set("sandbox", o.Sandbox)
	set("approvalPolicy", o.ApprovalPolicy)
	set("developerInstructions", o.DeveloperInstructions)
	if len(o.Config) > 0 {
		p["config"] = o.Config
	}
	if o.Ephemeral {
		p["ephemeral"] = true
	}
	return p
}

// Thread is a started or resumed thread.
type Thread struct {
	// ID is the thread id (a UUIDv7), the one `codex exec resume` takes.
	ID string
	// Model and ModelProvider are the thread's model and provider id.
	Model, ModelProvider string
	// Cwd is the thread's working directory.
	Cwd string
	// Path is the thread's rollout file, when the server says.
	Path string
	// Turns is how many earlier turns a resumed thread holds.
	Turns int
}

// threadResponse is thread/start's and thread/resume's result.
type threadResponse struct {
	Thread struct {
		ID    string            `json:"id"`
		Path  string            `json:"path"`
		Turns []json.RawMessage `json:"turns"`
	} `json:"thread"`
	Model         string `json:"model"`
	ModelProvider string `json:"modelProvider"`
	Cwd           string `json:"cwd"`
}

// Notification is one notification of a turn, as [Client.RunTurn] hands
// it to its callback.
type Notification struct {
	// Method is the notification's method (see the Notify constants).
	Method string
	// Params is its params, raw.
	Params json.RawMessage
}

// TurnError is the error of a failed turn, or of an "error" notification.
type TurnError struct {
	// Message is codex's text for the failure.
	Message string
	// Code is codex's error class, the kind of its codexErrorInfo
	// ("usageLimitExceeded", "contextWindowExceeded", "unauthorized",
	// "responseStreamDisconnected", …, see KnownCodes; "" when codex gives
	// none). A kind batty does not know (a newer Codex's, such as 0.171.0's
	// "bioPolicy") is kept as it came; a codexErrorInfo of another shape is
	// kept as its JSON text, clipped.
	Code string
	// HTTPStatus is the upstream HTTP status some classes carry (0 when
	// none).
	HTTPStatus int
	// AdditionalDetails is codex's extra text, if any.
	AdditionalDetails string
}

// KnownCodes are the codexErrorInfo kinds of the app-server schemas of the
// tested Codex CLIs (0.169.0 and 0.171.0, which added "bioPolicy"): the
// string values, then the kinds of the object values. A Code outside it is
// still kept and shown; nothing in batty decides on it.
var KnownCodes = []string{
	"contextWindowExceeded", "sessionBudgetExceeded", "usageLimitExceeded", "rateLimitExceeded",
	"flexUnavailable", "serverOverloaded", "modelNotFound", "policyCapacityUnavailable", "cyberPolicy",
	"bioPolicy", "misalignmentPolicyViolation", "tooManyDenials", "internalServerError", "unauthorized",
	"badRequest", "threadRollbackFailed", "sandboxError", "other", "inferenceHookDenied",
	"httpConnectionFailed", "responseStreamConnectionFailed", "responseStreamDisconnected",
	"responseTooManyFailedAttempts", "activeTurnNotSteerable",
}

// Error implements error.
func (e *TurnError) Error() string {
	if e.Code == "" {
		return e.Message
	}
	return e.Message + " [" + e.Code + "]"
}

// wireTurnError is a TurnError as the server writes it, read leniently
// (see UnmarshalJSON).
type wireTurnError struct {
	Message           string
	CodexErrorInfo    json.RawMessage
	AdditionalDetails *string
}

// UnmarshalJSON reads the fields it knows one by one: a field of another
// type than expected is left empty, never an error, so a newer Codex's
// error still ends the turn it belongs to. Only a value that is not an
// object is an error.
func (w *wireTurnError) UnmarshalJSON(b []byte) error {
	fields, ok := objectFields(b)
	if !ok {
		return errNotObject
	}
	field(fields, "message", &w.Message)
	w.CodexErrorInfo = nonNull(fields["codexErrorInfo"])
	field(fields, "additionalDetails", &w.AdditionalDetails)
	return nil
}

// errNotObject is the error of a lenient decoder given something else
// than a JSON object.
var errNotObject = errors.New("not a JSON object")

// objectFields splits a JSON object into its fields; ok is false for
// anything else.
func objectFields(b []byte) (map[string]json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) != nil || fields == nil {
		return nil, false
	}
	return fields, true
}

// field decodes fields[key] into dst, leaving dst as it was when the
// field is missing or of another shape.
func field[T any](fields map[string]json.RawMessage, key string, dst *T) {
	raw, ok := fields[key]
	if !ok {
		return
	}
	var v T
	if json.Unmarshal(raw, &v) == nil {
		*dst = v
	}
}

// decode turns the wire form into a TurnError. codexErrorInfo is either a
// string ("usageLimitExceeded") or an object with one key whose value may
// hold httpStatusCode ({"responseStreamDisconnected":{"httpStatusCode":502}}).
func (w *wireTurnError) decode() *TurnError {
	if w == nil {
		return nil
	}
	e := &TurnError{Message: w.Message}
	if w.AdditionalDetails != nil {
		e.AdditionalDetails = *w.AdditionalDetails
	}
	e.Code, e.HTTPStatus = errorCode(w.CodexErrorInfo)
	return e
}

// maxOddCode bounds a Code kept as the JSON text of a codexErrorInfo of
// an unknown shape.
const maxOddCode = 200

// errorCode reads codexErrorInfo: a string is the kind, an object of one
// key the kind with an optional httpStatusCode; anything else is kept as
// its compact JSON text (at most maxOddCode bytes), never dropped. It is
// pure and never panics.
func errorCode(raw json.RawMessage) (string, int) {
	raw = nonNull(raw)
	if raw == nil {
		return "", 0
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, 0
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && len(obj) == 1 {
		for k, v := range obj {
			var inner struct {
				HTTPStatusCode *int `json:"httpStatusCode"`
			}
			if json.Unmarshal(v, &inner) == nil && inner.HTTPStatusCode != nil {
				return k, *inner.HTTPStatusCode
			}
			return k, 0
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		buf.Reset()
		buf.Write(raw)
	}
	return textclip.Bytes(buf.String(), maxOddCode, textclip.Ellipsis), 0
}

// TokenUsage is one count of tokens.
type TokenUsage struct {
	TotalTokens           int64 `json:"totalTokens"`
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
}

// ThreadUsage is thread/tokenUsage/updated's tokenUsage.
type ThreadUsage struct {
	// Total is the thread's running total.
	Total TokenUsage `json:"total"`
	// Last is the last model request's usage.
	Last TokenUsage `json:"last"`
	// ModelContextWindow is the model's context window in tokens (0 when
	// unknown).
	ModelContextWindow int64 `json:"modelContextWindow"`
}

// RateLimitWindow is one rate-limit window.
type RateLimitWindow struct {
	// UsedPercent is how much of the window is used, 0–100.
	UsedPercent float64 `json:"usedPercent"`
	// WindowMinutes is the window's length (0 when unknown).
	WindowMinutes int64 `json:"windowDurationMins"`
	// ResetsAt is when the window resets, Unix seconds (0 when unknown).
	ResetsAt int64 `json:"resetsAt"`
}

// Reset returns ResetsAt as a time, or the zero time when unknown.
func (w RateLimitWindow) Reset() time.Time {
	if w.ResetsAt == 0 {
		return time.Time{}
	}
	return time.Unix(w.ResetsAt, 0)
}

// RateLimits is a rate-limit snapshot: the answer to
// account/rateLimits/read, or an account/rateLimits/updated notification
// (codex builds those from the x-codex-primary-* and x-codex-secondary-*
// headers of the model's responses).
type RateLimits struct {
	// LimitID names the metered limit ("codex").
	LimitID string `json:"limitId"`
	// Primary is the short window (5 hours), nil when unknown.
	Primary *RateLimitWindow `json:"primary"`
	// Secondary is the long window (a week), nil when unknown.
	Secondary *RateLimitWindow `json:"secondary"`
	// PlanType is the account's plan, when known.
	PlanType string `json:"planType"`
	// ReachedType says which limit was reached, when one was.
	ReachedType string `json:"rateLimitReachedType"`
}

// TurnResult is how a turn ended.
type TurnResult struct {
	// ThreadID and TurnID identify the turn.
	ThreadID, TurnID string
	// Status is [StatusCompleted], [StatusInterrupted] or [StatusFailed].
	Status string
	// Error is the failure of a failed turn (nil otherwise).
	Error *TurnError
	// FinalMessage is the text of the turn's last agent message ("" when
	// it had none).
	FinalMessage string
	// Usage is the thread's token usage after the turn (nil when the
	// server sent none during the turn).
	Usage *ThreadUsage
	// RateLimits is the last rate-limit snapshot the server sent during
	// the turn (nil when none).
	RateLimits *RateLimits
	// Warnings holds the "error" notifications codex sent with
	// willRetry true (it retried by itself).
	Warnings []*TurnError
	// Duration is the wall time from sending turn/start to turn/completed.
	Duration time.Duration
}

// Err returns the turn's failure as an error: nil for a completed turn,
// the *TurnError of a failed one, and a plain error for an interrupted one
// or one without an error.
func (r TurnResult) Err() error {
	switch {
	case r.Status == StatusCompleted:
		return nil
	case r.Error != nil:
		return r.Error
	}
	return fmt.Errorf("turn %s %s", r.TurnID, r.Status)
}

// turnPayload is the turn object inside turn/* notifications and the
// turn/start response, read leniently (see UnmarshalJSON).
type turnPayload struct {
	ID     string
	Status string
	Error  *wireTurnError
	Items  []itemPayload
}

// UnmarshalJSON reads the fields it knows one by one, and each item on
// its own (an item of another shape is left out); only a value that is
// not an object is an error.
func (t *turnPayload) UnmarshalJSON(b []byte) error {
	fields, ok := objectFields(b)
	if !ok {
		return errNotObject
	}
	field(fields, "id", &t.ID)
	field(fields, "status", &t.Status)
	field(fields, "error", &t.Error)
	var items []json.RawMessage
	field(fields, "items", &items)
	for _, raw := range items {
		var it itemPayload
		if json.Unmarshal(raw, &it) == nil {
			t.Items = append(t.Items, it)
		}
	}
	return nil
}

// itemPayload holds the item fields the client reads.
type itemPayload struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Text string `json:"text"`
}

// turnParams is the common shape of turn-scoped notification params.
type turnParams struct {
	ThreadID   string
	TurnID     string
	Turn       *turnPayload
	Item       *itemPayload
	TokenUsage *ThreadUsage
	Error      *wireTurnError
	WillRetry  bool
	RateLimits *RateLimits
}

// decodeTurnParams reads a notification's params leniently: each field it
// knows on its own, one of another shape left empty, so that a field a
// newer Codex changed never costs the notification (a turn/completed
// dropped would leave its turn waiting). It is pure and never fails.
func decodeTurnParams(raw json.RawMessage) turnParams {
	var p turnParams
	fields, ok := objectFields(raw)
	if !ok {
		return p
	}
	field(fields, "threadId", &p.ThreadID)
	field(fields, "turnId", &p.TurnID)
	field(fields, "turn", &p.Turn)
	field(fields, "item", &p.Item)
	field(fields, "tokenUsage", &p.TokenUsage)
	field(fields, "error", &p.Error)
	field(fields, "willRetry", &p.WillRetry)
	field(fields, "rateLimits", &p.RateLimits)
	return p
}

// turnIDOf returns the turn a notification belongs to ("" when none).
func (p *turnParams) turnIDOf() string {
	if p.TurnID != "" {
		return p.TurnID
	}
	if p.Turn != nil {
		return p.Turn.ID
	}
	return ""
}
