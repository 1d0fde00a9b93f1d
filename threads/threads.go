// Package threads is the catalogue of every Codex thread every agent of a
// team has had: the current ones, and those archived by `batty reset`,
// left by a context hand-off, replaced after a stale thread or moved by an
// account rotation. It is read from what batty records — each agent's
// state (its thread and archived threads, with why they ended), the usage
// ledger (every turn's agent, role, account, host, thread and tokens) and
// the turn journal (every turn's message and reply) — with no daemon, the
// team running or stopped, for local and remote agents alike (their
// records are kept here).
//
// Build and Conversation are pure functions of those records; Load reads
// them.
package threads

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/usage"
)

// States of a thread.
const (
	// StateCurrent is the agent's thread now: its next message resumes it.
	StateCurrent = "current"
	// StateArchived is a thread the agent left (Ended says how).
	StateArchived = "archived"
	// StatePast is a thread the records show turns of but the agent's
	// state no longer names (its state file was started afresh).
	StatePast = "past"
)

// How an archived thread ended (Thread.Ended).
const (
	EndReset    = "reset"    // batty reset (by hand, or a reset the daemon made)
	EndHandoff  = "handoff"  // the context window ran out: a fresh thread with a handoff
	EndStale    = "stale"    // codex could not resume it, or answered with another thread
	EndRotation = "rotation" // the agent moved to another account, where it could not be carried
)

// EndKind classifies why an archived thread ended from the reason the
// daemon kept with it (project.ArchivedThread.Reason): a thread that could
// not be resumed is stale, one not carried to a new account a rotation,
// one whose context ran out a handoff, any other a reset (whose reason is
// the human's own words). Pure.
func EndKind(reason string) string {
	switch r := strings.ToLower(reason); {
	case strings.HasPrefix(r, "resume_failed"), strings.HasPrefix(r, "resume_changed"):
		return EndStale
	case strings.Contains(r, "moved to account"):
		return EndRotation
	case strings.Contains(r, "context window"):
		return EndHandoff
	default:
		return EndReset
	}
}

// Thread is one thread of an agent.
type Thread struct {
	ID      string `json:"thread_id"`
	Agent   string `json:"agent"`
	Role    string `json:"role,omitempty"`
	Account string `json:"account,omitempty"`
	Host    string `json:"host,omitempty"`
	// Started is when its first recorded turn began, LastActive when its
	// last one ended (zero when it has none yet).
	Started    time.Time    `json:"started,omitzero"`
	LastActive time.Time    `json:"last_active,omitzero"`
	Turns      int          `json:"turns"`
	Tokens     usage.Tokens `json:"tokens"`
	State      string       `json:"state"`
	// Ended is how an archived thread ended (EndKind), EndReason the
	// daemon's words and EndedAt when.
	Ended     string    `json:"ended,omitempty"`
	EndReason string    `json:"end_reason,omitempty"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// FirstMessage and LastReply are from the turn journal ("" for a
	// thread whose turns ran before it was kept), as the agents and the
	// model wrote them: escape them before they reach a terminal.
	FirstMessage   string `json:"first_message,omitempty"`
	FirstMessageID string `json:"first_message_id,omitempty"`
	LastReply      string `json:"last_reply,omitempty"`
	LastMessageID  string `json:"last_message_id,omitempty"`
}

// Records are what the catalogue is built from.
type Records struct {
	// States are the agents' state files, by agent.
	States map[string]project.AgentState
	// Ledger are the usage ledger's turns.
	Ledger []usage.Turn
	// Journal are the turn journal's records.
	Journal []journal.Record
	// Roles are the team's agents' roles (an agent's role when no turn
	// recorded it).
	Roles map[string]string
}

// turn is what the catalogue keeps of one turn, from the ledger or the
// journal.
type turn struct {
	agent, thread, role, account, host string
	started, at                        time.Time
	tokens                             usage.Tokens
	rec                                *journal.Record
}

// Build is every thread of every agent in r, the most recently active
// first (threads with no turn by when they ended or, current, last), each
// turn counted once (a turn in both the ledger and the journal is one).
// Pure.
func Build(r Records) []Thread {
	turns := map[string]*turn{}
	var order []string
	for _, t := range r.Ledger {
		if _, ok := turns[t.Key]; !ok {
			order = append(order, t.Key)
		}
		turns[t.Key] = &turn{agent: t.Agent, thread: t.Thread, role: t.Role, account: t.Account, host: t.Host,
			started: t.At.Add(-time.Duration(t.DurationMS) * time.Millisecond), at: t.At, tokens: t.Tokens}
	}
	for i := range r.Journal {
		j := &r.Journal[i]
		if _, ok := turns[j.Key]; !ok {
			order = append(order, j.Key)
		}
		turns[j.Key] = &turn{agent: j.Agent, thread: j.Thread, role: j.Role, account: j.Account, host: j.Host,
			started: j.Started, at: j.At, tokens: j.Tokens, rec: j}
	}
	type id struct{ agent, thread string }
	byID := map[id]*Thread{}
	get := func(agent, thread string) *Thread {
		k := id{agent, thread}
		if th, ok := byID[k]; ok {
			return th
		}
		th := &Thread{ID: thread, Agent: agent, Role: r.Roles[agent], State: StatePast}
		byID[k] = th
		return th
	}
	// Oldest turn first, so that the first message and the last reply
	// are the thread's.
	slices.SortStableFunc(order, func(a, b string) int { return turns[a].at.Compare(turns[b].at) })
	for _, k := range order {
		t := turns[k]
		if t.thread == "" {
			continue
		}
		th := get(t.agent, t.thread)
		th.Turns++
		th.Tokens = th.Tokens.Add(t.tokens)
		if th.Started.IsZero() || t.started.Before(th.Started) {
			th.Started = t.started
		}
		if t.at.After(th.LastActive) {
			th.LastActive = t.at
		}
		th.Role = cmp.Or(t.role, th.Role)
		th.Account, th.Host = t.account, t.host
		if t.rec != nil {
			if th.FirstMessageID == "" {
				th.FirstMessage, th.FirstMessageID = t.rec.Message.Body, t.rec.Message.ID
			}
			if t.rec.Reply != "" || t.rec.Status == "completed" {
				th.LastReply, th.LastMessageID = t.rec.Reply, t.rec.Message.ID
			}
		}
	}
	for agent, st := range r.States {
		for _, a := range st.ArchivedThreads {
			if a.ID == "" {
				continue
			}
			th := get(agent, a.ID)
			th.State, th.Ended, th.EndReason, th.EndedAt = StateArchived, EndKind(a.Reason), a.Reason, a.At
		}
		if st.ThreadID != "" {
			th := get(agent, st.ThreadID)
			th.State, th.Ended, th.EndReason, th.EndedAt = StateCurrent, "", "", time.Time{}
			if th.LastActive.IsZero() {
				th.LastActive = st.UpdatedAt
			}
		}
	}
	out := make([]Thread, 0, len(byID))
	for _, th := range byID {
		out = append(out, *th)
	}
	slices.SortFunc(out, func(a, b Thread) int {
		return cmp.Or(activity(b).Compare(activity(a)), strings.Compare(a.Agent, b.Agent), strings.Compare(a.ID, b.ID))
	})
	return out
}

// activity is when a thread was last heard of.
func activity(t Thread) time.Time {
	if t.EndedAt.After(t.LastActive) {
		return t.EndedAt
	}
	return t.LastActive
}

// Filter keeps the threads of agents (all when none); without all, only
// the current thread of each agent and the threads active since since.
// Pure.
func Filter(ts []Thread, agents []string, all bool, since time.Time) []Thread {
	var out []Thread
	for _, t := range ts {
		if len(agents) > 0 && !slices.Contains(agents, t.Agent) {
			continue
		}
		if !all && t.State != StateCurrent && activity(t).Before(since) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// ErrNoThread is wrapped by Find's error for a thread no record names.
var ErrNoThread = errors.New("no such thread")

// Find is the thread whose id is id, or starts with it, or ends with
// what follows a leading "…" (as `batty threads` and `batty status` cut
// an id): at least 4 characters, naming one thread. Pure.
func Find(ts []Thread, id string) (Thread, error) {
	var found []Thread
	tail, isTail := strings.CutPrefix(id, "…")
	for _, t := range ts {
		if t.ID == id {
			return t, nil
		}
		switch {
		case isTail && len(tail) >= 4 && strings.HasSuffix(t.ID, tail),
			!isTail && len(id) >= 4 && strings.HasPrefix(t.ID, id):
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return Thread{}, fmt.Errorf("%w: %q (batty threads --all lists them)", ErrNoThread, id)
	case 1:
		return found[0], nil
	default:
		return Thread{}, fmt.Errorf("%q names %d threads: give more of its id", id, len(found))
	}
}

// Conversation is the journal's records of thread (of agent), in the
// order their turns ended. Pure.
func Conversation(recs []journal.Record, agent, thread string) []journal.Record {
	var out []journal.Record
	for _, r := range recs {
		if r.Agent == agent && r.Thread == thread {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b journal.Record) int { return a.At.Compare(b.At) })
	return out
}

// Loaded is what Load read: the records and the lines it skipped.
type Loaded struct {
	Records
	LedgerSkips  []usage.Skip
	JournalSkips []journal.Skip
	// StateErrors are the agents' state files that could not be read.
	StateErrors []error
}

// Load reads the records of the project in l: the state of each agent of
// agents (the team's; an agent with a journal but no longer in the team
// too), the usage ledger and the turn journal. It only reads, needs no
// daemon and takes no lock.
func Load(l project.Layout, roles map[string]string) (Loaded, error) {
	ld := Loaded{Records: Records{States: map[string]project.AgentState{}, Roles: roles}}
	j, err := journal.Open(l)
	if err != nil {
		return ld, err
	}
	defer j.Close()
	agents, err := j.Agents()
	if err != nil {
		return ld, err
	}
	for a := range roles {
		if !slices.Contains(agents, a) {
			agents = append(agents, a)
		}
	}
	slices.Sort(agents)
	for _, a := range agents {
		recs, skips, err := j.Read(a)
		if err != nil {
			return ld, err
		}
		ld.Journal = append(ld.Journal, recs...)
		ld.JournalSkips = append(ld.JournalSkips, skips...)
	}
	d, err := usage.Read(l, time.Time{}, time.Time{})
	if err != nil {
		return ld, err
	}
	ld.Ledger, ld.LedgerSkips = d.Turns, d.Skips
	for _, t := range d.Turns {
		if !slices.Contains(agents, t.Agent) && journal.ValidAgent(t.Agent) {
			agents = append(agents, t.Agent)
		}
	}
	for _, a := range agents {
		var st project.AgentState
		if err := project.LoadJSON(l, project.AgentStateName(a), &st); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				ld.StateErrors = append(ld.StateErrors, err)
			}
			continue
		}
		if st.Name != "" || st.ThreadID != "" || len(st.ArchivedThreads) > 0 {
			ld.States[a] = st
		}
	}
	return ld, nil
}
