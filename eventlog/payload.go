package eventlog

import (
	"encoding/json"
	"time"
)

// Payload is what an event carries beyond its envelope (Event.Data, the
// line's "data"): one Go type per event kind, its json tags the keys of
// "data" in events.jsonl. A few kinds that say the two sides of one thing
// share a type (Budget, Memory, Host, Network, Schedule); every other kind
// that carries data has a type of its own, named after it. A reader
// switches on Event.Type or on the payload's type and reads fields: no
// reader looks data up by key.
//
// Decode gives every line the payload of its kind (payloadFor); data a
// kind has no type for, or that does not fit its kind's type (a newer
// batty's, a hand edit), is kept as Raw. An instant that is not known is
// left out of the line (omitzero), never written as year 1.
type Payload interface {
	payload()
}

// Raw is the data of an event whose kind has no payload type here, or
// whose data does not fit its kind's: the JSON of "data" as read, valid
// JSON, to show as it is. It is written back unchanged.
type Raw []byte

// MarshalJSON writes r as it was read ("null" when empty).
func (r Raw) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// DaemonStarted is the data of EvDaemonStarted.
type DaemonStarted struct {
	PID  int    `json:"pid"`
	Team string `json:"team"`
}

// ShimStarted is the data of EvShimStarted: the worker's pid and the
// thread it resumes ("" for none yet).
type ShimStarted struct {
	PID      int    `json:"pid"`
	ThreadID string `json:"thread_id"`
}

// ShimExited is the data of EvShimExited when the worker ran and exited
// (a spawn that failed carries none, its Detail says why).
type ShimExited struct {
	ExitCode int `json:"exit_code"`
}

// AgentFailed is the data of EvAgentFailed: the crashes in a row and when
// the agent is started again.
type AgentFailed struct {
	Failures int       `json:"failures"`
	RetryAt  time.Time `json:"retry_at,omitzero"`
}

// ThreadChanged is the data of EvThreadChanged (Detail: the reason).
type ThreadChanged struct {
	ThreadID string `json:"thread_id"`
	Previous string `json:"previous,omitempty"`
}

// Delivered is the data of EvDelivered: the sender, the attempt (1 the
// first), the message it answers when it is a reply delivered to the
// asker, and when the message was sent (its CreatedAt; unknown in the
// lines of an older batty).
type Delivered struct {
	From      string    `json:"from"`
	Attempt   int       `json:"attempt"`
	InReplyTo string    `json:"in_reply_to,omitempty"`
	SentAt    time.Time `json:"sent_at,omitzero"`
}

// SlotGranted is the data of EvSlotGranted: how long the agent's next turn
// waited in the queue of the team's slots.
type SlotGranted struct {
	WaitedMS int64 `json:"waited_ms"`
}

// LandingSteps are when the steps of a landing's last attempt ran: its
// merge began, its verify began and ended (each zero when the step did not
// run, or in the lines of an older batty). The landing's event marks its
// end.
type LandingSteps struct {
	MergeAt       time.Time `json:"merge_at,omitzero"`
	VerifyAt      time.Time `json:"verify_at,omitzero"`
	VerifyEndedAt time.Time `json:"verify_ended_at,omitzero"`
}

// TurnFinished is the data of EvTurnFinished. Requeued: the message goes
// back to the queue (not final); Alerted: a failure told by its own alert
// event (message_failed, context_exhausted); Cancelled: ended by the user.
// A requeued turn carries no usage.
type TurnFinished struct {
	Status       string `json:"status"`
	Failure      string `json:"failure"`
	InputTokens  int64  `json:"input_tokens,omitempty"`
	OutputTokens int64  `json:"output_tokens,omitempty"`
	DurationMS   int64  `json:"duration_ms,omitempty"`
	ThreadID     string `json:"thread_id,omitempty"`
	Attempt      int    `json:"attempt"`
	Requeued     bool   `json:"requeued"`
	Alerted      bool   `json:"alerted,omitempty"`
	Cancelled    bool   `json:"cancelled,omitempty"`
}

// Cancelled is the data of EvCancelled: the sender, and either the role
// queue it was withdrawn from ("@role") or whether its turn was
// interrupted.
type Cancelled struct {
	From        string `json:"from"`
	Queue       string `json:"queue,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
}

// Reply is the data of EvReply: whom the reply went to (team.Human or an
// agent), the message it answers, its start (ReplyPreview) and the
// outcome of that message ("completed", or why it ended without an answer).
type Reply struct {
	To        string `json:"to"`
	InReplyTo string `json:"in_reply_to"`
	Preview   string `json:"preview"`
	Outcome   string `json:"outcome"`
}

// Paused is the data of EvPaused: the kind of pause (project.Pause*).
type Paused struct {
	Kind string `json:"kind"`
}

// QuotaBlocked is the data of EvQuotaBlocked: the account paused, its
// agents that wait, when its probe turn is due and when codex said the
// limit resets; Switched: every agent went on on another account (the
// account_switched event is the alert).
type QuotaBlocked struct {
	Account  string    `json:"account"`
	Agents   []string  `json:"agents"`
	ResumeAt time.Time `json:"resume_at,omitzero"`
	RetryAt  time.Time `json:"retry_at,omitzero"`
	Switched bool      `json:"switched,omitempty"`
}

// Probe results (QuotaProbe.Result).
const (
	ProbeStart = "start" // the pause ran out: one probe turn goes out
	ProbeSent  = "sent"  // the probe turn was handed to its agent
	ProbeLimit = "limit" // the probe hit the limit again
)

// QuotaProbe is the data of EvQuotaProbe.
type QuotaProbe struct {
	Account      string    `json:"account,omitempty"`
	Result       string    `json:"result"`
	ResumeAt     time.Time `json:"resume_at,omitzero"`
	FailedProbes int       `json:"failed_probes,omitempty"`
}

// QuotaResumed is the data of EvQuotaResumed: the account released (when
// its pause ended) or the agents woken (when a probe turn completed).
type QuotaResumed struct {
	Account string   `json:"account,omitempty"`
	Agents  []string `json:"agents,omitempty"`
}

// AccountSwitched is the data of EvAccountSwitched.
type AccountSwitched struct {
	From    string    `json:"from"`
	To      string    `json:"to"`
	Agents  []string  `json:"agents"`
	Reason  string    `json:"reason"` // "limit" or "return"
	RetryAt time.Time `json:"retry_at,omitzero"`
}

// QuotaWarning is the data of EvQuotaWarning.
type QuotaWarning struct {
	Account  string    `json:"account"`
	Window   string    `json:"window"`
	UsedPct  float64   `json:"used_pct"`
	WarnPct  float64   `json:"warn_pct"`
	Agents   []string  `json:"agents"`
	ResetsAt time.Time `json:"resets_at,omitzero"`
}

// Budget is the data of EvBudgetWarning and EvBudgetReached: the budget
// (its key), whom it covers, its period, the tokens used and allowed, its
// warn_at and the window it counts.
type Budget struct {
	Budget       string    `json:"budget"`
	For          string    `json:"for"`
	Per          string    `json:"per"`
	UsedTokens   int64     `json:"used_tokens"`
	BudgetTokens int64     `json:"budget_tokens"`
	WarnAtPct    int       `json:"warn_at_pct"`
	WindowStart  time.Time `json:"window_start,omitzero"`
	Until        time.Time `json:"until,omitzero"`
}

// BudgetResumed is the data of EvBudgetResumed.
type BudgetResumed struct {
	Budget string    `json:"budget"`
	Until  time.Time `json:"until,omitzero"`
}

// AuthRequired is the data of EvAuthRequired: what to run.
type AuthRequired struct {
	Fix string `json:"fix"`
}

// ContextExhausted is the data of EvContextExhaust.
type ContextExhausted struct {
	Attempts     int   `json:"attempts"`
	WindowTokens int64 `json:"window_tokens"`
}

// ContextRetry is the data of EvContextRetry: the step ("same_thread",
// "fresh_thread") and the thread it retries on.
type ContextRetry struct {
	Step     string `json:"step"`
	ThreadID string `json:"thread_id"`
}

// Handoff is the data of EvHandoff: the thread archived.
type Handoff struct {
	Archived string `json:"archived"`
}

// ThreadReset is the data of EvThreadReset: the thread archived.
type ThreadReset struct {
	Archived string `json:"archived"`
}

// AgentParked is the data of EvAgentParked: why (the kind of problem) and
// what the user can do.
type AgentParked struct {
	Kind string `json:"kind"`
	Fix  string `json:"fix"`
}

// Host is the data of EvHostUnreachable and EvHostReachable.
type Host struct {
	Host string `json:"host"`
}

// Warning is the data of an EvWarning that carries some: the account and
// kind of an account's problem, or the nested repositories not committed.
type Warning struct {
	Account string   `json:"account,omitempty"`
	Kind    string   `json:"kind,omitempty"`
	Paths   []string `json:"paths,omitempty"`
}

// Network is the data of EvNetworkWaiting and EvNetworkRestored: the
// account held, since when, and (restored) for how long.
type Network struct {
	Account string    `json:"account"`
	Since   time.Time `json:"since,omitzero"`
	HeldMS  int64     `json:"held_ms,omitempty"`
}

// RetryScheduled is the data of EvRetryScheduled.
type RetryScheduled struct {
	Attempt     int       `json:"attempt"`
	MaxAttempts int       `json:"max_attempts"`
	Status      string    `json:"status"`
	Failure     string    `json:"failure"`
	DelayMS     int64     `json:"delay_ms"`
	NotBefore   time.Time `json:"not_before,omitzero"`
	Note        string    `json:"note"`
}

// MessageFailed is the data of EvMessageFailed.
type MessageFailed struct {
	Attempts    int    `json:"attempts"`
	MaxAttempts int    `json:"max_attempts"`
	Status      string `json:"status"`
	Failure     string `json:"failure"`
}

// Memory is the data of EvMemoryLow and EvMemoryRecovered: the memory
// available and limits.min_free_memory, in bytes.
type Memory struct {
	Free uint64 `json:"free"`
	Min  uint64 `json:"min"`
}

// WorkspaceCreated is the data of EvWorkspaceCreated.
type WorkspaceCreated struct {
	Branch string `json:"branch"`
	Base   string `json:"base"`
}

// WorkspaceCommitted is the data of EvWorkspaceCommitted; WIP: committed
// as work in progress (not at a turn's end).
type WorkspaceCommitted struct {
	Commit string `json:"commit"`
	Branch string `json:"branch,omitempty"`
	WIP    bool   `json:"wip"`
}

// WorkspaceConflict is the data of EvWorkspaceConflict.
type WorkspaceConflict struct {
	Files []string `json:"files"`
}

// LandingQueued is the data of EvLandingQueued.
type LandingQueued struct {
	Request string `json:"request"`
	By      string `json:"by"`
	Branch  string `json:"branch"`
	Review  bool   `json:"review,omitempty"`
}

// LandingWaiting is the data of EvLandingWaiting.
type LandingWaiting struct {
	Request string `json:"request"`
}

// Landed is the data of EvLanded; Nothing: the branch had no commit base
// lacked (no Commit then).
type Landed struct {
	Request string       `json:"request"`
	Commit  string       `json:"commit,omitempty"`
	Nothing bool         `json:"nothing,omitempty"`
	Base    string       `json:"base"`
	Branch  string       `json:"branch"`
	Steps   LandingSteps `json:"steps,omitzero"`
}

// LandingFailed is the data of EvLandingFailed: the files in conflict, or
// the tail of a red verify's output.
type LandingFailed struct {
	Request   string       `json:"request"`
	Base      string       `json:"base"`
	Branch    string       `json:"branch"`
	Conflicts []string     `json:"conflicts,omitempty"`
	Output    string       `json:"output,omitempty"`
	Steps     LandingSteps `json:"steps,omitzero"`
}

// ReviewWaiting is the data of EvReviewWaiting.
type ReviewWaiting struct {
	Request string       `json:"request"`
	Branch  string       `json:"branch"`
	Base    string       `json:"base"`
	Tip     string       `json:"tip"`
	Merged  string       `json:"merged"`
	Steps   LandingSteps `json:"steps,omitzero"`
}

// LandingApproved is the data of EvLandingApproved: the tip approved.
type LandingApproved struct {
	Request string `json:"request"`
	Tip     string `json:"tip"`
	Branch  string `json:"branch"`
}

// LandingRejected is the data of EvLandingRejected: the tip rejected.
type LandingRejected struct {
	Request string `json:"request"`
	Tip     string `json:"tip"`
	Branch  string `json:"branch"`
}

// Schedule is the data of the schedules' events (EvScheduleRunStarted,
// EvScheduleRunFinished, EvScheduleStopped, EvScheduleFailed): the
// schedule, its state after the event, its runs completed and next due
// time (none when it is not waiting), the run (run events) and whom a
// started run went to.
type Schedule struct {
	Schedule      string    `json:"schedule"`
	State         string    `json:"state"`
	RunsCompleted int       `json:"runs_completed"`
	NextDue       time.Time `json:"next_due,omitzero"`
	Run           int       `json:"run,omitempty"`
	To            string    `json:"to,omitempty"`
}

// AppServerDied is the data of EvAppServerDied: the shared app-server's
// pid, its account (CODEX_HOME) and the agents it served.
type AppServerDied struct {
	PID     int      `json:"pid"`
	Account string   `json:"account"`
	Agents  []string `json:"agents"`
}

func (Raw) payload()                {}
func (AppServerDied) payload()      {}
func (DaemonStarted) payload()      {}
func (ShimStarted) payload()        {}
func (ShimExited) payload()         {}
func (AgentFailed) payload()        {}
func (ThreadChanged) payload()      {}
func (Delivered) payload()          {}
func (SlotGranted) payload()        {}
func (TurnFinished) payload()       {}
func (Cancelled) payload()          {}
func (Reply) payload()              {}
func (Paused) payload()             {}
func (QuotaBlocked) payload()       {}
func (QuotaProbe) payload()         {}
func (QuotaResumed) payload()       {}
func (AccountSwitched) payload()    {}
func (QuotaWarning) payload()       {}
func (Budget) payload()             {}
func (BudgetResumed) payload()      {}
func (AuthRequired) payload()       {}
func (ContextExhausted) payload()   {}
func (ContextRetry) payload()       {}
func (Handoff) payload()            {}
func (ThreadReset) payload()        {}
func (AgentParked) payload()        {}
func (Host) payload()               {}
func (Warning) payload()            {}
func (Network) payload()            {}
func (RetryScheduled) payload()     {}
func (MessageFailed) payload()      {}
func (Memory) payload()             {}
func (WorkspaceCreated) payload()   {}
func (WorkspaceCommitted) payload() {}
func (WorkspaceConflict) payload()  {}
func (LandingQueued) payload()      {}
func (LandingWaiting) payload()     {}
func (Landed) payload()             {}
func (LandingFailed) payload()      {}
func (ReviewWaiting) payload()      {}
func (LandingApproved) payload()    {}
func (LandingRejected) payload()    {}
func (Schedule) payload()           {}

// payloadFor decodes data as the payload of kind. It is the one table
// from a kind to its type. ok is false when kind has no type or data does
// not fit it (the caller keeps it Raw).
func payloadFor(kind string, data []byte) (p Payload, ok bool) {
	switch kind {
	case EvDaemonStarted:
		return as[DaemonStarted](data)
	case EvShimStarted:
		return as[ShimStarted](data)
	case EvShimExited:
		return as[ShimExited](data)
	case EvAgentFailed:
		return as[AgentFailed](data)
	case EvThreadChanged:
		return as[ThreadChanged](data)
	case EvDelivered:
		return as[Delivered](data)
	case EvSlotGranted:
		return as[SlotGranted](data)
	case EvTurnFinished:
		return as[TurnFinished](data)
	case EvCancelled:
		return as[Cancelled](data)
	case EvReply:
		return as[Reply](data)
	case EvPaused:
		return as[Paused](data)
	case EvQuotaBlocked:
		return as[QuotaBlocked](data)
	case EvQuotaProbe:
		return as[QuotaProbe](data)
	case EvQuotaResumed:
		return as[QuotaResumed](data)
	case EvAccountSwitched:
		return as[AccountSwitched](data)
	case EvQuotaWarning:
		return as[QuotaWarning](data)
	case EvBudgetWarning, EvBudgetReached:
		return as[Budget](data)
	case EvBudgetResumed:
		return as[BudgetResumed](data)
	case EvAuthRequired:
		return as[AuthRequired](data)
	case EvContextExhaust:
		return as[ContextExhausted](data)
	case EvContextRetry:
		return as[ContextRetry](data)
	case EvHandoff:
		return as[Handoff](data)
	case EvThreadReset:
		return as[ThreadReset](data)
	case EvAgentParked:
		return as[AgentParked](data)
	case EvHostUnreachable, EvHostReachable:
		return as[Host](data)
	case EvWarning:
		return as[Warning](data)
	case EvNetworkWaiting, EvNetworkRestored:
		return as[Network](data)
	case EvRetryScheduled:
		return as[RetryScheduled](data)
	case EvMessageFailed:
		return as[MessageFailed](data)
	case EvMemoryLow, EvMemoryRecovered:
		return as[Memory](data)
	case EvWorkspaceCreated:
		return as[WorkspaceCreated](data)
	case EvWorkspaceCommitted:
		return as[WorkspaceCommitted](data)
	case EvWorkspaceConflict:
		return as[WorkspaceConflict](data)
	case EvLandingQueued:
		return as[LandingQueued](data)
	case EvLandingWaiting:
		return as[LandingWaiting](data)
	case EvLanded:
		return as[Landed](data)
	case EvLandingFailed:
		return as[LandingFailed](data)
	case EvReviewWaiting:
		return as[ReviewWaiting](data)
	case EvLandingApproved:
		return as[LandingApproved](data)
	case EvLandingRejected:
		return as[LandingRejected](data)
	case EvScheduleRunStarted, EvScheduleRunFinished, EvScheduleStopped, EvScheduleFailed:
		return as[Schedule](data)
	case EvAppServerDied:
		return as[AppServerDied](data)
	}
	return nil, false
}

// as decodes data as a T; ok is false when it does not fit (a field of
// another JSON type, a number out of range, not an object).
func as[T Payload](data []byte) (Payload, bool) {
	var p T
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, false
	}
	return p, true
}

// decodeData gives the payload of an event of kind whose "data" is data
// (valid JSON, as the envelope was decoded): nil for none or null, the
// kind's type, or Raw.
func decodeData(kind string, data json.RawMessage) Payload {
	if len(data) == 0 || string(data) == "null" {
		return nil
	}
	if p, ok := payloadFor(kind, data); ok {
		return p
	}
	return Raw(data)
}
