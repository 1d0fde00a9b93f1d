// Package protocol is the Command/Event protocol between the batty
// orchestrator and a shim: length-prefixed msgpack frames over a socketpair.
//
// Commands flow orchestrator → shim, events shim → orchestrator. The first
// frame on a fresh channel is the shim's Hello; the orchestrator answers with
// Welcome or closes the channel. Every SendMessage the shim accepts ends in
// exactly one TurnFinished carrying its id, whatever happens to the turn.
// docs/protocol.md is the long form of this contract.
package protocol

import "time"

// Version is the protocol version both sides must speak. It changes whenever
// a message changes incompatibly.
const Version = 9

// Kind names a message type on the wire.
type Kind string

// Message is a Command or an Event.
type Message interface {
	// Kind is the wire name of the message type.
	Kind() Kind
}

// Command kinds (orchestrator → shim).
const (
	KindWelcome      Kind = "welcome"
	KindSend         Kind = "send"
	KindInterrupt    Kind = "interrupt"
	KindPing         Kind = "ping"
	KindResetThread  Kind = "reset_thread"
	KindSwitchThread Kind = "switch_thread"
	KindShutdown     Kind = "shutdown"
	KindKill         Kind = "kill"
	KindOutgoingAck  Kind = "outgoing_ack"
	KindRecallAnswer Kind = "recall_answer"
)

// Event kinds (shim → orchestrator).
const (
	KindHello            Kind = "hello"
	KindAccepted         Kind = "accepted"
	KindRejected         Kind = "rejected"
	KindTurnStarted      Kind = "turn_started"
	KindThreadChanged    Kind = "thread_changed"
	KindStateChanged     Kind = "state_changed"
	KindTurnFinished     Kind = "turn_finished"
	KindQuotaBlocked     Kind = "quota_blocked"
	KindAuthRequired     Kind = "auth_required"
	KindContextExhausted Kind = "context_exhausted"
	KindContextPressure  Kind = "context_pressure"
	KindPong             Kind = "pong"
	KindWarning          Kind = "warning"
	KindError            Kind = "error"
	KindNetworkWait      Kind = "network_wait"
	KindRateLimits       Kind = "rate_limits"
	KindTranscriptLines  Kind = "transcript_lines"
	KindOutgoing         Kind = "outgoing"
	KindReplyChunk       Kind = "reply_chunk"
)

// ---- Commands ----

// Welcome is the orchestrator's answer to Hello. A shim that gets anything
// else first, or another version, exits. It also carries the settings that
// must not appear on the shim's command line, which every local user can
// read (ps, /proc/<pid>/cmdline): the channel is private to the two ends.
type Welcome struct {
	Version int `json:"version"`
	// Env is extra KEY=VALUE environment for the worker processes the shim
	// starts (API keys among them).
	Env []string `json:"env"`
	// Instructions are the agent's standing instructions for the model ("":
	// none).
	Instructions string `json:"instructions,omitempty"`
}

// SendMessage asks the shim to run one turn with Body. The shim answers with
// Accepted (then, later, exactly one TurnFinished with the same ID) or
// Rejected.
type SendMessage struct {
	ID   string `json:"id"`
	From string `json:"from"`
	Body string `json:"body"`
	// Attempt counts deliveries of this message; > 1 marks a redelivery,
	// which the prompt header tells the agent.
	Attempt int `json:"attempt,omitempty"`
	// RetryNote, when set, says that this delivery retries an attempt
	// that failed and why ("retry 2 of 3 after a server error: …"); the
	// prompt header tells the agent this instead of calling the earlier
	// delivery cut off.
	RetryNote string `json:"retry_note,omitempty"`
	// Handoff, when set, is the summary that opens a fresh thread after the
	// agent's previous one was archived (its context window was full): the
	// prompt carries it, marked as a handoff, before the message.
	Handoff string `json:"handoff,omitempty"`
	// Notice, when set, is batty's reminder of the state of the agent's
	// workspace (a merge it left with conflict markers, naming the files):
	// the prompt carries it on a line of its own after the header, one
	// line, clipped.
	Notice string `json:"notice,omitempty"`
	// InReplyTo, when set, is the id of the agent's message this one
	// answers (the sender's final answer to it, delivered by batty): the
	// prompt header says so, and that the final answer of this turn goes
	// to no one.
	InReplyTo string `json:"in_reply_to,omitempty"`
}

// Interrupt stops the turn in flight; its message finishes as interrupted.
// Queued messages stay queued.
type Interrupt struct {
	Reason string `json:"reason,omitempty"`
}

// Ping asks for a Pong with the same Nonce.
type Ping struct {
	Nonce uint64 `json:"nonce"`
}

// ResetThread forgets the current thread: the next turn starts a fresh one.
// It takes effect between turns; a ThreadChanged event confirms it.
type ResetThread struct {
	Reason string `json:"reason,omitempty"`
}

// SwitchThread changes the thread the next turn runs on: ThreadID resumed
// (batty threads restore), or, with Fork, forked into a new thread that
// carries its history (batty threads fork); "" starts a fresh thread
// (batty reset). Archive has the thread left archived in Codex's own store
// too (codex archive, thread/archive), so that Codex's pickers agree; a
// thread resumed or forked that Codex's store holds archived is
// unarchived first (and a forked one archived again after the fork). Usage
// is ThreadID's cumulative usage when it was left, the baseline its next
// turn's usage is measured from (zero: unknown). Like ResetThread it takes
// effect between turns; a ThreadChanged event confirms it (reason
// restored, or reset while a fork waits for the next turn, then forked).
type SwitchThread struct {
	ThreadID string `json:"thread_id,omitempty"`
	Fork     bool   `json:"fork,omitempty"`
	Archive  bool   `json:"archive,omitempty"`
	Usage    Usage  `json:"usage,omitzero"`
	Reason   string `json:"reason,omitempty"`
}

// Shutdown lets the turn in flight run for up to Timeout, then stops it;
// queued messages finish as interrupted. The shim then exits.
type Shutdown struct {
	Timeout time.Duration `json:"timeout"`
	Reason  string        `json:"reason,omitempty"`
}

// Kill stops the turn in flight at once (SIGINT, short grace, SIGKILL) and
// exits. Every accepted message still gets its TurnFinished first.
type Kill struct{}

// ---- Events ----

// Hello is the shim's handshake, the first frame it sends.
type Hello struct {
	Version  int    `json:"version"`
	PID      int    `json:"pid"`
	Agent    string `json:"agent"`
	ThreadID string `json:"thread_id,omitempty"` // thread it will resume, if any
}

// Accepted confirms a SendMessage was queued. QueueDepth counts messages
// waiting, the accepted one included, not the turn in flight.
type Accepted struct {
	ID         string `json:"id"`
	QueueDepth int    `json:"queue_depth"`
}

// RejectReason says why a SendMessage was refused.
type RejectReason string

// Reject reasons.
const (
	RejectQueueFull RejectReason = "queue_full"
	RejectTerminal  RejectReason = "agent_terminal"
	RejectDuplicate RejectReason = "duplicate"
	RejectInvalid   RejectReason = "invalid"
)

// Rejected refuses a SendMessage; the message was not taken and gets no
// TurnFinished.
type Rejected struct {
	ID     string       `json:"id"`
	Reason RejectReason `json:"reason"`
	Detail string       `json:"detail,omitempty"`
}

// TurnStarted says a codex process is running the message's turn.
type TurnStarted struct {
	MessageID string `json:"message_id"`
	ThreadID  string `json:"thread_id,omitempty"` // empty on a fresh thread until ThreadChanged
	Resume    bool   `json:"resume"`
	PID       int    `json:"pid"`
}

// ThreadReason says why the thread changed.
type ThreadReason string

// Thread change reasons.
const (
	ThreadStarted       ThreadReason = "started"        // a fresh thread got its id
	ThreadResumeChanged ThreadReason = "resume_changed" // codex answered a resume with another id
	ThreadResumeFailed  ThreadReason = "resume_failed"  // the old thread could not be resumed
	ThreadReset         ThreadReason = "reset"          // ResetThread, SwitchThread to a fresh thread or a fork
	ThreadRestored      ThreadReason = "restored"       // SwitchThread to a thread resumed
	ThreadForked        ThreadReason = "forked"         // a fork's new thread got its id
)

// ThreadChanged reports the shim's current thread id.
type ThreadChanged struct {
	ThreadID string       `json:"thread_id"` // empty after a reset
	Previous string       `json:"previous,omitempty"`
	Reason   ThreadReason `json:"reason"`
	Detail   string       `json:"detail,omitempty"`
}

// State is a shim state. starting → idle ⇄ working → stopping → stopped.
type State string

// Shim states.
const (
	StateStarting State = "starting"
	StateIdle     State = "idle"
	StateWorking  State = "working"
	StateStopping State = "stopping"
	StateStopped  State = "stopped" // terminal
)

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool { return s == StateStopped }

// StateChanged reports every state transition.
type StateChanged struct {
	From   State  `json:"from"`
	To     State  `json:"to"`
	Reason string `json:"reason,omitempty"`
}

// TurnStatus is how a turn ended.
type TurnStatus string

// Turn statuses.
const (
	TurnCompleted   TurnStatus = "completed"
	TurnFailed      TurnStatus = "failed"
	TurnInterrupted TurnStatus = "interrupted"
	TurnTimedOut    TurnStatus = "timed_out"
)

// FailureKind classifies a failed turn.
type FailureKind string

// Failure kinds.
const (
	FailNone          FailureKind = ""
	FailQuota         FailureKind = "quota"
	FailAuth          FailureKind = "auth"
	FailContextWindow FailureKind = "context_window"
	FailResume        FailureKind = "resume_failed"
	FailSpawn         FailureKind = "spawn"
	FailExit          FailureKind = "exit"
	FailStream        FailureKind = "stream"
	// FailInputTooLarge: codex refused the prompt as longer than it
	// accepts for one turn (codex.MaxInputChars characters).
	FailInputTooLarge FailureKind = "input_too_large"
	// FailNetwork: codex could not reach the API for longer than the
	// shim lets a turn wait for the network (it retries a refused
	// connection forever, printing "Reconnecting... waiting for network");
	// the shim stopped the turn.
	FailNetwork FailureKind = "network"
	// FailKilled: codex (the `codex exec` of the turn, or the app-server
	// running it) died of a signal the shim did not send — the OOM killer,
	// a `kill -9` from outside — before the turn ended. The turn was cut
	// off, and may pass when tried again.
	FailKilled FailureKind = "killed"
)

// Transient is the kind of a failure that may pass by itself (a
// TurnFinished with Failure FailStream that the shim classified as
// transient). The retry policy (package retry) decides on it and names it
// for people.
type Transient string

// Transient kinds.
const (
	TransientNone        Transient = ""                // not transient: the failure is final
	TransientUnreachable Transient = "unreachable_api" // the API could not be reached
	TransientRateLimit   Transient = "rate_limit"      // the API refused the request for a rate limit
	TransientOverloaded  Transient = "overloaded"      // the model was at capacity
	TransientServer      Transient = "server_error"    // the API answered with a server error
	TransientStalled     Transient = "stalled_stream"  // the answer stopped coming
	TransientDropped     Transient = "dropped_stream"  // the answer was cut off
	TransientOther       Transient = "transient"       // another failure codex calls transient
)

// Usage counts tokens.
type Usage struct {
	Input           int64 `json:"input"`
	CachedInput     int64 `json:"cached_input"`
	Output          int64 `json:"output"`
	ReasoningOutput int64 `json:"reasoning_output"`
}

// TurnFinished ends an accepted message: exactly one per accepted ID.
type TurnFinished struct {
	MessageID string      `json:"message_id"`
	ThreadID  string      `json:"thread_id,omitempty"`
	Status    TurnStatus  `json:"status"`
	Failure   FailureKind `json:"failure,omitempty"`
	Error     string      `json:"error,omitempty"` // the failure's message
	// Transient, for a failure that may pass by itself when tried again
	// (Failure FailStream), names its kind as the shim classified it; it
	// is TransientNone for every other turn.
	Transient Transient `json:"transient,omitempty"`
	// Reply is the last agent message of the turn. On the wire it is
	// always empty: the shim sends the reply as ReplyChunk pieces before
	// its TurnFinished, and ReplySize is their total. The parent's client
	// (shim/shimclient.Client) joins them and hands every driver one
	// TurnFinished with the whole reply in Reply and ReplySize its size.
	Reply string `json:"reply"`
	// ReplySize is the size of the whole reply in bytes (at most
	// MaxReply).
	ReplySize int64 `json:"reply_size,omitempty"`
	Usage     Usage `json:"usage"`        // this turn
	Thread    Usage `json:"thread_usage"` // thread total after this turn
	// ContextPct is the share of the model's window the turn used, or -1
	// when unknown.
	ContextPct float64       `json:"context_pct"`
	ExitCode   int           `json:"exit_code"` // -1 when killed by a signal or never started
	Duration   time.Duration `json:"duration"`
	// Items counts the items the turn completed — commands, file changes,
	// messages, searches —: 0 means the turn ended before the model did
	// anything, so a retry has nothing to check.
	Items int `json:"items,omitempty"`
	// Commands are the shell commands the turn ran, in order, with the
	// tail of their output (at most MaxCommands, the last ones; see
	// Bound).
	Commands []Command `json:"commands"`
}

// Command is a shell command a turn ran: its command line, the tail of
// its output (stdout and stderr as codex aggregated them) and its exit
// code (-1 when it did not end: killed, interrupted).
type Command struct {
	Command  string `json:"command"`
	Output   string `json:"output"`
	ExitCode int    `json:"exit_code"`
}

// QuotaBlocked reports a usage/quota limit. RetryAt is the instant by which
// the limit has reset by codex's words, in UTC: codex prints the minute,
// rounded down, so a printed "10:56 PM" is 22:57:00 (codex.ResetBy). It is
// zero when codex gave none (and then left out of its JSON form).
type QuotaBlocked struct {
	MessageID string    `json:"message_id"`
	Message   string    `json:"message"`
	RetryAt   time.Time `json:"retry_at,omitzero"`
}

// AuthRequired reports that codex cannot authenticate; a human must act.
type AuthRequired struct {
	MessageID string `json:"message_id"`
	Message   string `json:"message"`
}

// ContextExhausted reports a turn that failed because the thread no longer
// fits the model's context window.
type ContextExhausted struct {
	MessageID string `json:"message_id"`
	ThreadID  string `json:"thread_id"`
	Message   string `json:"message"`
}

// ContextPressure reports a turn that used more than the configured share of
// the model's context window.
type ContextPressure struct {
	ThreadID     string  `json:"thread_id"`
	UsedTokens   int64   `json:"used_tokens"`
	WindowTokens int64   `json:"window_tokens"`
	Pct          float64 `json:"pct"`
}

// Pong answers Ping.
type Pong struct {
	Nonce uint64 `json:"nonce"`
}

// Warning is something worth a human's eye that changes no state.
type Warning struct {
	MessageID string `json:"message_id,omitempty"`
	Message   string `json:"message"`
}

// NetworkWait reports that the turn in flight waits for the network
// (Waiting): codex cannot reach the API and retries, printing
// "Reconnecting... waiting for network (…)" (Message, its latest notice),
// since Since. It is sent on the first such notice of a wait, and with
// Waiting false as soon as codex prints anything else (the API answered). A
// wait still on when the turn ends ends with the turn's TurnFinished.
type NetworkWait struct {
	MessageID string    `json:"message_id"`
	Waiting   bool      `json:"waiting"`
	Since     time.Time `json:"since"`
	Message   string    `json:"message,omitempty"`
}

// RateLimitWindow is one rate-limit window of an account as codex last
// reported it.
type RateLimitWindow struct {
	// Name is the window's name: "primary" (the short window) or
	// "secondary" (the long one).
	Name string `json:"name"`
	// UsedPct is how much of the window is used, 0–100.
	UsedPct float64 `json:"used_pct"`
	// WindowMinutes is the window's length in minutes (0 when unknown).
	WindowMinutes int64 `json:"window_minutes"`
	// ResetsAt is when the window resets (zero when unknown).
	ResetsAt time.Time `json:"resets_at"`
}

// RateLimits is a rate-limit snapshot of the agent's account, sent by a
// runtime that reports one (runtime: app-server) whenever codex reports it.
// Windows lists the windows codex knew (none, one or two); SeenAt is when
// the shim got the snapshot.
type RateLimits struct {
	Windows []RateLimitWindow `json:"windows"`
	SeenAt  time.Time         `json:"seen_at"`
}

// TranscriptLines carries lines of the agent's transcript, rendered (ANSI
// colours and time stamps included), for the parent to append to its
// transcript file: sent by a shim without a transcript file of its own
// (Config.TranscriptStream, a shim on another host), in the order they
// were written.
type TranscriptLines struct {
	Lines []string `json:"lines"`
}

// ReplyChunk carries a piece of the reply of the turn of message
// MessageID: the shim sends every reply this way, in pieces of at most
// MaxReplyChunk bytes cut at UTF-8 boundaries, in order, right before the
// turn's TurnFinished, whose ReplySize is their total (an empty reply has
// no piece). The parent's client joins them and never hands a piece to a
// driver.
type ReplyChunk struct {
	MessageID string `json:"message_id"`
	Data      string `json:"data"`
}

// Outgoing carries a request the agent wrote into its outbox (`batty send`,
// `batty merge`; package outbox), for the parent to carry out as from this
// shim's agent, whatever the file says: Name is the file's name in the
// outbox (the message id it asks for and ".json"), Data the file as the
// agent wrote it (hostile input: empty when it was no regular file). The
// parent answers with OutgoingAck once the request is delivered (or
// refused for good); until then the shim sends it again after a restart.
// Box is unused (empty). Sent only by a shim that relays its agent's
// outbox (Config.RelayInboxes).
type Outgoing struct {
	Box  string `json:"box"`
	Name string `json:"name"`
	Data string `json:"data"`
}

// OutgoingAck tells the shim that Outgoing Name was handled: it removes
// the file from the agent's outbox. Error, when set, says why the
// message was refused (it is not delivered; the shim logs it and removes
// the file all the same).
type OutgoingAck struct {
	Box   string `json:"box"`
	Name  string `json:"name"`
	Error string `json:"error,omitempty"`
}

// RecallAnswer is the daemon's answer to a recall the agent asked in its
// outbox (`batty search` or `batty threads show` inside the agent,
// relayed as an Outgoing request ID): the shim that relays the agent's
// outbox writes it there (outbox.WriteAnswer), where the command waits
// for it. Output is what the command prints (at most 64 KiB), Notes the
// lines it prints on its standard error, Error why there is no answer.
type RecallAnswer struct {
	ID     string   `json:"id"`
	Output string   `json:"output"`
	Notes  []string `json:"notes"`
	Error  string   `json:"error"`
}

// Error reports a command the shim could not carry out.
type Error struct {
	Command Kind   `json:"command,omitempty"`
	Message string `json:"message"`
}

// Kind implementations.
func (Welcome) Kind() Kind          { return KindWelcome }
func (SendMessage) Kind() Kind      { return KindSend }
func (Interrupt) Kind() Kind        { return KindInterrupt }
func (Ping) Kind() Kind             { return KindPing }
func (ResetThread) Kind() Kind      { return KindResetThread }
func (SwitchThread) Kind() Kind     { return KindSwitchThread }
func (Shutdown) Kind() Kind         { return KindShutdown }
func (Kill) Kind() Kind             { return KindKill }
func (Hello) Kind() Kind            { return KindHello }
func (Accepted) Kind() Kind         { return KindAccepted }
func (Rejected) Kind() Kind         { return KindRejected }
func (TurnStarted) Kind() Kind      { return KindTurnStarted }
func (ThreadChanged) Kind() Kind    { return KindThreadChanged }
func (StateChanged) Kind() Kind     { return KindStateChanged }
func (TurnFinished) Kind() Kind     { return KindTurnFinished }
func (QuotaBlocked) Kind() Kind     { return KindQuotaBlocked }
func (AuthRequired) Kind() Kind     { return KindAuthRequired }
func (ContextExhausted) Kind() Kind { return KindContextExhausted }
func (ContextPressure) Kind() Kind  { return KindContextPressure }
func (Pong) Kind() Kind             { return KindPong }
func (Warning) Kind() Kind          { return KindWarning }
func (Error) Kind() Kind            { return KindError }
func (NetworkWait) Kind() Kind      { return KindNetworkWait }
func (RateLimits) Kind() Kind       { return KindRateLimits }
func (TranscriptLines) Kind() Kind  { return KindTranscriptLines }
func (Outgoing) Kind() Kind         { return KindOutgoing }
func (ReplyChunk) Kind() Kind       { return KindReplyChunk }
func (OutgoingAck) Kind() Kind      { return KindOutgoingAck }
func (RecallAnswer) Kind() Kind     { return KindRecallAnswer }
