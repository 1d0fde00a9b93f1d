package landing

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/battyhq/batty/team"
)

// State is where a landing request stands.
type State string

// States of a request. Queued, Landing, Waiting, WaitingTurn and Review
// are unfinished; Landed, Failed and Nothing are final.
const (
	// Queued: waiting for the landings before it.
	Queued State = "queued"
	// Landing: being landed now, or found so after a restart (then it is
	// tried again from scratch).
	Landing State = "landing"
	// Waiting: could not land for a reason that may pass (the user's
	// checkout of base has uncommitted changes, git failed); tried again
	// at RetryAt. Error says why.
	Waiting State = "waiting"
	// WaitingTurn: the agent whose branch lands has a turn in flight, or
	// the commit of its worktree after one pending: the request waits for
	// that commit (the daemon holds and releases it as DecideTurn says,
	// Queue.HoldForTurn and Queue.ReleaseTurn), then lands what the turn
	// committed. It is not due: the queue goes on with the others. Error
	// says whose turn it waits for.
	WaitingTurn State = "waiting_turn"
	// Review: merged (Merged, of Tip onto BaseBefore) and verified, the
	// request waits for the human's approval (Queue.Approve) or
	// rejection (Queue.Reject). It is not due: the queue goes on with
	// the others.
	Review State = "review"
	// Landed: base advanced to LandedCommit.
	Landed State = "landed"
	// Failed: a conflict (Conflicts) or a red verify (OutputTail); base
	// unchanged. Error says why.
	Failed State = "failed"
	// Nothing: the branch had nothing that base did not have.
	Nothing State = "nothing"
)

// Finished reports whether s is a final state.
func (s State) Finished() bool { return s == Landed || s == Failed || s == Nothing }

func (s State) valid() bool {
	switch s {
	case Queued, Landing, Waiting, WaitingTurn, Review, Landed, Failed, Nothing:
		return true
	}
	return false
}

// Request is one request to land an agent's branch, as kept in
// state/landing.json.
type Request struct {
	// ID names the request.
	ID string `json:"id"`
	// Agent is the agent whose branch lands.
	Agent string `json:"agent"`
	// Branch is the agent's branch, batty/<agent>.
	Branch string `json:"branch"`
	// RequestedAt is when it was queued; RequestedBy who asked ("human"
	// or an agent's name).
	RequestedAt time.Time `json:"requested_at"`
	RequestedBy string    `json:"requested_by,omitempty"`
	State       State     `json:"state"`
	// BaseBefore is base's tip the last attempt started from.
	BaseBefore string `json:"base_before,omitempty"`
	// Merged is the merge commit of the last attempt, recorded before base
	// is advanced to it.
	Merged string `json:"merged,omitempty"`
	// Tip is the branch's commit the last attempt merged.
	Tip string `json:"tip,omitempty"`
	// Review says the request lands only once the human has approved
	// the tip it merged (workspace.review: human for an agent's request,
	// `batty merge --review` for the human's).
	Review bool `json:"review,omitempty"`
	// Approved is the branch's commit the human approved (a Tip the
	// request waited for review at); an attempt that merges another tip
	// waits for review again.
	Approved string `json:"approved,omitempty"`
	// Rejection is the human's reason for rejecting the request in
	// review (state Failed).
	Rejection string `json:"rejection,omitempty"`
	// Protected are the protected paths (package protect) that the last
	// attempt's merge changes against base, at most MaxProtected, as git
	// names them (the agent's: clean them to show them); ProtectedTotal
	// counts them all. A request with any waits for the human's review
	// once verified, as if Review were set.
	Protected      []string `json:"protected,omitempty"`
	ProtectedTotal int      `json:"protected_total,omitempty"`
	// LandedCommit is the commit base was advanced to (Landed).
	LandedCommit string `json:"landed_commit,omitempty"`
	// Error says why the request failed or waits ("nothing to land" for
	// Nothing; why the last attempt was interrupted for Queued).
	Error string `json:"error,omitempty"`
	// Conflicts are the files a failed merge left conflicting (at most
	// MaxConflicts; Error gives their number).
	Conflicts []string `json:"conflicts,omitempty"`
	// OutputTail is the end of a red verify's output (stdout and stderr
	// together), at most MaxOutputTail bytes.
	OutputTail string `json:"output_tail,omitempty"`
	// MergeAt, VerifyAt and VerifyEndedAt are when the last attempt's
	// merge began and its verify began and ended (zero: not reached).
	MergeAt       time.Time `json:"merge_at,omitzero"`
	VerifyAt      time.Time `json:"verify_at,omitzero"`
	VerifyEndedAt time.Time `json:"verify_ended_at,omitzero"`
	// FinishedAt is when it reached a final state.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Attempts counts the landings started for it (including redos on a
	// moved base and retries after waiting).
	Attempts int `json:"attempts,omitempty"`
	// RetryAt is when a waiting request is due again.
	RetryAt time.Time `json:"retry_at,omitzero"`
}

// Limits of a request and of the state file.
const (
	// MaxConflicts bounds Request.Conflicts.
	MaxConflicts = 100
	// MaxOutputTail bounds Request.OutputTail, in bytes.
	MaxOutputTail = 4 << 10
	// MaxFinished is how many finished requests are kept; older ones are
	// forgotten.
	MaxFinished = 100
	// MaxUnfinished bounds the requests waiting to land.
	MaxUnfinished = 1000
	// MaxReasonLen bounds the reason of a rejection, in bytes.
	MaxReasonLen = 4 << 10

	maxErrorLen    = 8 << 10
	maxPathLen     = 4 << 10
	maxByLen       = 256
	maxIDLen       = 64
	maxAttempts    = 1 << 30
	maxStateFile   = 16 << 20
	branchPrefix   = "batty/"
	stateFileName  = "landing.json"
	maxRequestsAll = MaxFinished + MaxUnfinished
)

// fileState is the content of state/landing.json.
type fileState struct {
	Requests []Request `json:"requests"`
}

// Reviewed reports whether r lands only once the human approved the tip
// it merged: it asked for review, or its merge changes protected paths.
func (r Request) Reviewed() bool { return r.Review || len(r.Protected) > 0 }

// BranchOf returns the branch of agent's workspace, batty/<agent>.
func BranchOf(agent string) string { return branchPrefix + agent }

// Validate reports what is wrong with r as a stored request: everything
// that reaches git's command line (the branch, the commits) is checked to
// be what batty writes, since agents can write the state directory.
func (r Request) Validate() error {
	if !validID(r.ID) {
		return fmt.Errorf("request id %q: want 1 to %d letters, digits and dashes", r.ID, maxIDLen)
	}
	if !team.ValidName(r.Agent) {
		return fmt.Errorf("request %s: agent %q is not a valid name", r.ID, r.Agent)
	}
	if r.Branch != BranchOf(r.Agent) {
		return fmt.Errorf("request %s: branch %q, want %q", r.ID, r.Branch, BranchOf(r.Agent))
	}
	if !r.State.valid() {
		return fmt.Errorf("request %s: unknown state %q", r.ID, r.State)
	}
	if len(r.RequestedBy) > maxByLen || !utf8.ValidString(r.RequestedBy) {
		return fmt.Errorf("request %s: requested_by longer than %d bytes or not UTF-8", r.ID, maxByLen)
	}
	for _, c := range [...]struct{ name, id string }{{"base_before", r.BaseBefore}, {"merged", r.Merged}, {"landed_commit", r.LandedCommit},
		{"tip", r.Tip}, {"approved", r.Approved}} {
		if c.id != "" && !validCommit(c.id) {
			return fmt.Errorf("request %s: %s %q is not a commit id", r.ID, c.name, c.id)
		}
	}
	if r.State == Landed && r.LandedCommit == "" {
		return fmt.Errorf("request %s: landed without landed_commit", r.ID)
	}
	if r.State == Review && (!r.Reviewed() || r.Tip == "" || r.Merged == "" || r.BaseBefore == "") {
		return fmt.Errorf("request %s: waiting for review without review or protected paths, tip, merged and base_before", r.ID)
	}
	if len(r.Protected) > MaxProtected || r.ProtectedTotal < len(r.Protected) || (r.ProtectedTotal > 0) != (len(r.Protected) > 0) {
		return fmt.Errorf("request %s: %d protected paths of %d: at most %d, none left out", r.ID, len(r.Protected), r.ProtectedTotal, MaxProtected)
	}
	for _, p := range r.Protected {
		if p == "" || len(p) > maxPathLen || !utf8.ValidString(p) {
			return fmt.Errorf("request %s: a protected path empty, longer than %d bytes or not UTF-8", r.ID, maxPathLen)
		}
	}
	if len(r.Error) > maxErrorLen {
		return fmt.Errorf("request %s: error longer than %d bytes", r.ID, maxErrorLen)
	}
	if len(r.Rejection) > MaxReasonLen || !utf8.ValidString(r.Rejection) {
		return fmt.Errorf("request %s: rejection longer than %d bytes or not UTF-8", r.ID, MaxReasonLen)
	}
	if len(r.OutputTail) > MaxOutputTail {
		return fmt.Errorf("request %s: output_tail longer than %d bytes", r.ID, MaxOutputTail)
	}
	if len(r.Conflicts) > MaxConflicts {
		return fmt.Errorf("request %s: more than %d conflicts", r.ID, MaxConflicts)
	}
	for _, p := range r.Conflicts {
		if p == "" || len(p) > maxPathLen {
			return fmt.Errorf("request %s: a conflict path empty or longer than %d bytes", r.ID, maxPathLen)
		}
	}
	if r.Attempts < 0 || r.Attempts > maxAttempts {
		return fmt.Errorf("request %s: attempts %d out of range", r.ID, r.Attempts)
	}
	return nil
}

// Decode reads a state file's content: the requests in queue order. An
// empty file is no request. Every request is validated, ids are unique,
// and the numbers of finished and unfinished requests are bounded. It is
// a pure function and never panics.
func Decode(data []byte) ([]Request, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var f fileState
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("decode landing requests: %w", err)
	}
	if len(f.Requests) > maxRequestsAll {
		return nil, fmt.Errorf("decode landing requests: %d requests, at most %d", len(f.Requests), maxRequestsAll)
	}
	seen := make(map[string]bool, len(f.Requests))
	finished := 0
	for _, r := range f.Requests {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("decode landing requests: %w", err)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("decode landing requests: request %s twice", r.ID)
		}
		seen[r.ID] = true
		if r.State.Finished() {
			finished++
		}
	}
	if finished > MaxFinished || len(f.Requests)-finished > MaxUnfinished {
		return nil, fmt.Errorf("decode landing requests: %d finished and %d unfinished requests, at most %d and %d",
			finished, len(f.Requests)-finished, MaxFinished, MaxUnfinished)
	}
	return f.Requests, nil
}

// Encode renders requests as a state file. It is a pure function.
func Encode(requests []Request) ([]byte, error) {
	b, err := json.MarshalIndent(fileState{Requests: nonNil(requests)}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode landing requests: %w", err)
	}
	return append(b, '\n'), nil
}

func nonNil(rs []Request) []Request {
	if rs == nil {
		return []Request{}
	}
	return rs
}

// trimFinished drops the finished requests that finished first beyond
// max, keeping the order of the rest. It is a pure function (rs is not
// modified).
func trimFinished(rs []Request, max int) []Request {
	var finished []int
	for i, r := range rs {
		if r.State.Finished() {
			finished = append(finished, i)
		}
	}
	if len(finished) <= max {
		return rs
	}
	slices.SortStableFunc(finished, func(a, b int) int { return rs[a].FinishedAt.Compare(rs[b].FinishedAt) })
	drop := make(map[int]bool, len(finished)-max)
	for _, i := range finished[:len(finished)-max] {
		drop[i] = true
	}
	out := make([]Request, 0, len(rs)-len(drop))
	for i, r := range rs {
		if !drop[i] {
			out = append(out, r)
		}
	}
	return out
}

func validID(s string) bool {
	if s == "" || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' && i > 0) {
			return false
		}
	}
	return true
}

// validCommit reports whether s is a full commit id as git prints it
// (SHA-1 or SHA-256, lower-case hex).
func validCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
