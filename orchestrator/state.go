package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/protocol"
)

// ArchivedThread is a thread an agent no longer uses, kept with why.
type ArchivedThread struct {
	ID     string    `json:"id"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
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
	InputTokens     int64            `json:"input_tokens"`
	OutputTokens    int64            `json:"output_tokens"`
	ContextPct      float64          `json:"context_pct"`
	LastError       string           `json:"last_error,omitempty"`
	LastErrorAt     time.Time        `json:"last_error_at,omitzero"`
	UpdatedAt       time.Time        `json:"updated_at"`
}

// archive moves the current thread into ArchivedThreads.
func (s *AgentState) archive(reason string, at time.Time) {
	if s.ThreadID == "" {
		return
	}
	s.ArchivedThreads = append(s.ArchivedThreads, ArchivedThread{ID: s.ThreadID, Reason: reason, At: at})
	s.ThreadID = ""
	s.ThreadUsage = protocol.Usage{}
	s.ContextPct = 0
}

// setThread records the agent's current thread and its last cumulative
// usage; a thread other than the recorded one starts from zero.
func (s *AgentState) setThread(id string, usage protocol.Usage) {
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

// loadJSON reads a state file; a missing file leaves v untouched.
func loadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
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

// saveJSON writes a state file atomically and durably.
func saveJSON(path string, v any) error {
	if err := atomicfile.WriteJSON(path, v, 0o600); err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	return nil
}
