package project

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/battyhq/batty/protocol"
)

// ArchivedThread is a thread an agent no longer uses, kept with why.
type ArchivedThread struct {
	ID     string    `json:"id"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	// Usage is the thread's cumulative usage when it was archived (the
	// baseline of its next turn once restored), Home the Codex home its
	// rollout was in ("" when not known).
	Usage protocol.Usage `json:"usage,omitzero"`
	Home  string         `json:"codex_home,omitempty"`
}

// AgentState is what survives a daemon restart about one agent. The daemon
// is its only writer; every write is atomic and durable.
type AgentState struct {
	Name     string `json:"name"`
	ThreadID string `json:"thread_id,omitempty"`
	// ThreadUsage is the thread-cumulative usage codex last reported for
	// ThreadID: the baseline a respawned shim measures its first turn from.
	ThreadUsage     protocol.Usage   `json:"thread_usage,omitzero"`
	ArchivedThreads []ArchivedThread `json:"archived_threads,omitempty"`
	TurnsCompleted  int              `json:"turns_completed"`
	TurnsFailed     int              `json:"turns_failed"`
	// NoAnswers counts the completed turns whose final answer was empty
	// (whose asker got NoAnswer).
	NoAnswers    int       `json:"no_answers,omitempty"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
	ContextPct   float64   `json:"context_pct"`
	LastError    string    `json:"last_error,omitempty"`
	LastErrorAt  time.Time `json:"last_error_at,omitzero"`
	// LastErrorMessage is the message whose failed turn set LastError, ""
	// when something else did (a crash loop, a parked Codex): once that
	// message completes, the error is over and LastError is cleared.
	LastErrorMessage string `json:"last_error_message,omitempty"`
	// Recent are the agent's last completed turns, clipped, for a handoff.
	Recent []RecentTurn `json:"recent,omitempty"`
	// Handoff is the handoff owed to the agent's next fresh thread, nil
	// when none is owed.
	Handoff *PendingHandoff `json:"handoff,omitempty"`
	// ContextRetry follows the message whose turn last ran out of context
	// window, nil when none is being retried.
	ContextRetry *ContextRetry `json:"context_retry,omitempty"`
	// ForkFrom is a thread the agent's next turn forks into a new thread
	// that carries its history (batty threads fork), "" when none is owed;
	// ThreadID is then "".
	ForkFrom string `json:"fork_from,omitempty"`
	// CodexHome is the CODEX_HOME the agent's shim last ran on, where the
	// thread's rollout is: a shim started on another account's home carries
	// the thread there first. "" before the first start.
	CodexHome string `json:"codex_home,omitempty"`
	// WorkspaceHost is the host whose clone held the worktree agent's
	// worktree at its last preparation, "" for this machine: when the
	// agent runs elsewhere now, that clone's work is brought here first.
	WorkspaceHost string    `json:"workspace_host,omitempty"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Archive moves the current thread into ArchivedThreads.
func (s *AgentState) Archive(reason string, at time.Time) {
	if s.ThreadID == "" {
		return
	}
	s.ArchivedThreads = append(s.ArchivedThreads, ArchivedThread{ID: s.ThreadID, Reason: reason, At: at, Usage: s.ThreadUsage, Home: s.CodexHome})
	s.ThreadID = ""
	s.ThreadUsage = protocol.Usage{}
	s.ContextPct = 0
}

// Restore makes thread id, one of ArchivedThreads, the current thread
// again (batty threads restore): the current one is archived in its place
// with reason, a handoff or a fork owed is dropped, and the restored
// thread's usage when it was archived is its baseline again. It returns
// the restored entry. An id that is the current thread, or no archived
// thread of the agent, is an error and changes nothing.
func (s *AgentState) Restore(id, reason string, at time.Time) (ArchivedThread, error) {
	if id != "" && id == s.ThreadID {
		return ArchivedThread{}, fmt.Errorf("thread %s is %s's current thread already", id, s.Name)
	}
	i := slices.IndexFunc(s.ArchivedThreads, func(a ArchivedThread) bool { return a.ID == id })
	if id == "" || i < 0 {
		return ArchivedThread{}, fmt.Errorf("thread %q is not one of %s's archived threads (batty threads %s --all lists them)", id, s.Name, s.Name)
	}
	old := s.ArchivedThreads[i]
	s.Archive(reason, at)
	s.ArchivedThreads = slices.Delete(slices.Clone(s.ArchivedThreads), i, i+1)
	s.ThreadID, s.ThreadUsage, s.ContextPct = old.ID, old.Usage, 0
	s.Handoff, s.ContextRetry, s.ForkFrom = nil, nil, ""
	return old, nil
}

// Fork has the agent's next turn fork thread id into a new thread that
// carries its history (batty threads fork): the current thread is
// archived with reason, a handoff owed is dropped. id may be any
// thread, of this agent or another (the caller makes sure its rollout is
// where the agent's Codex finds it).
func (s *AgentState) Fork(id, reason string, at time.Time) {
	s.Archive(reason, at)
	s.ForkFrom = id
	s.Handoff, s.ContextRetry = nil, nil
}

// SetError records err as the agent's last error at at; message is the
// message whose failed turn it is, "" when the error is not a turn's.
func (s *AgentState) SetError(err, message string, at time.Time) {
	s.LastError, s.LastErrorAt, s.LastErrorMessage = err, at, message
}

// Completed clears the last error when message set it: the message has
// completed since, so its failure is no longer the agent's state. It
// reports whether it cleared it.
func (s *AgentState) Completed(message string) bool {
	if message == "" || s.LastErrorMessage != message {
		return false
	}
	s.SetError("", "", time.Time{})
	return true
}

// SetThread records the agent's current thread and its last cumulative
// usage; a thread other than the recorded one starts from zero.
func (s *AgentState) SetThread(id string, usage protocol.Usage) {
	if id != s.ThreadID {
		s.ThreadUsage = protocol.Usage{}
	}
	s.ThreadID = id
	if id != "" {
		s.ThreadUsage = usage
	}
}

// DispatchState is the team-wide dispatch gate. It survives restarts, so a
// quota pause keeps its reset time and an auth pause stays until a human
// resumes.
type DispatchState struct {
	Paused   bool      `json:"paused"`
	Reason   string    `json:"reason,omitempty"`
	Kind     string    `json:"kind,omitempty"` // manual | quota | auth
	ResumeAt time.Time `json:"resume_at,omitzero"`
	Since    time.Time `json:"since,omitzero"`
}

// Pause kinds.
const (
	PauseManual = "manual"
	PauseQuota  = "quota"
	PauseAuth   = "auth"
)

// RecentTurn is one of an agent's last completed turns, clipped, kept for
// a handoff.
type RecentTurn struct {
	Message string    `json:"message"`
	From    string    `json:"from"`
	Body    string    `json:"body"`
	Reply   string    `json:"reply"`
	At      time.Time `json:"at"`
}

// PendingHandoff is a handoff owed: the agent's thread was archived and the
// next message it is given opens a fresh thread with the handoff.
type PendingHandoff struct {
	Reason   string    `json:"reason"`
	Previous string    `json:"previous,omitempty"` // the archived thread
	Doing    string    `json:"doing,omitempty"`    // what the agent was doing, when not its last reply
	Since    time.Time `json:"since"`
}

// ContextRetry follows one message through the steps taken after its turn
// ran out of context window.
type ContextRetry struct {
	Message string `json:"message"`
	Step    int    `json:"step"` // the daemon's contextRetrySame or contextHandoff: the step taken last
}

// QuotaName is the state file of the accounts' usage-limit pauses.
const QuotaName = "quota.json"

// AccountPause is one account's usage-limit pause, as kept in
// state/quota.json so that it survives a restart.
type AccountPause struct {
	// Account is the account's key: a CODEX_HOME path (scope account),
	// "agent:<name>" (scope agent) or "team" (scope team).
	Account string `json:"account"`
	// Reason is codex's message.
	Reason string `json:"reason"`
	// Agent is the agent that hit the limit first.
	Agent string    `json:"agent"`
	Since time.Time `json:"since"`
	// ResetBy is when codex said the limit resets (the end of the
	// printed minute); zero when it named no time.
	ResetBy time.Time `json:"reset_by,omitzero"`
	// ProbeAt is when the next probe turn may go.
	ProbeAt time.Time `json:"probe_at"`
	// Probes counts the probes of this pause that hit the limit again.
	Probes int `json:"probes,omitempty"`
}

// QuotaState is the content of state/quota.json: the paused accounts, the
// account each agent that rotates across accounts is placed on, and each
// account's last rate-limit snapshot.
type QuotaState struct {
	Paused []AccountPause `json:"paused"`
	// Placed maps an agent with several accounts to the key of the account
	// it runs on (absent: its preferred one).
	Placed map[string]string `json:"placed,omitempty"`
	// Usage is each account's last reported rate-limit snapshot.
	Usage []AccountUsage `json:"usage,omitempty"`
}

// AccountUsage is an account's last rate-limit snapshot, as codex reported
// it, and whether its crossing of quota.warn_pct was alerted.
type AccountUsage struct {
	Account string            `json:"account"`
	Windows []RateLimitWindow `json:"windows"`
	SeenAt  time.Time         `json:"seen_at"`
	// Warned is set once the snapshot's use crossed quota.warn_pct and
	// the alert went out; it clears when the use falls back below.
	Warned bool `json:"warned,omitempty"`
}

// RateLimitWindow is one rate-limit window of an account.
type RateLimitWindow struct {
	Name          string    `json:"name"` // primary | secondary
	UsedPct       float64   `json:"used_pct"`
	WindowMinutes int64     `json:"window_minutes,omitempty"`
	ResetsAt      time.Time `json:"resets_at,omitzero"`
}

// LoadJSON reads the file name of the state/ directory; a missing file
// leaves v untouched. Neither the file nor a directory on the way may be a
// symbolic link (see Layout.OpenDir).
func LoadJSON(l Layout, name string, v any) error {
	path := filepath.Join(l.StateDir(), name)
	d, err := l.OpenDir(subState, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read state %s: %w", path, err)
	}
	defer d.Close()
	b, err := d.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read state %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("state file %s is corrupt (%v): move it away to start this agent afresh", path, err)
	}
	return nil
}

// SaveJSON writes the file name of the state/ directory atomically and
// durably, never through a symbolic link (see Layout.OpenDir); a link is an
// error naming it.
func SaveJSON(l Layout, name string, v any) error {
	path := filepath.Join(l.StateDir(), name)
	d, err := l.OpenDir(subState, true)
	if err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	defer d.Close()
	if err := d.WriteJSON(name, v, 0o600); err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	return nil
}
