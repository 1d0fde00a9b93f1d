package orchestrator

import (
	"fmt"
	"strings"
	"time"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/textclip"
)

// Bounds of what an agent keeps for a handoff, so that a handoff stays a
// few kilobytes however long the agent's messages and replies were.
const (
	recentMax      = 3    // replies kept
	recentBodyClip = 400  // bytes of each message kept
	recentReplyMax = 1500 // bytes of each reply kept
	doingClip      = 1000 // bytes of the failed message quoted
)

// contextAction is what to do with a message whose turn ran out of context
// window.
type contextAction int

const (
	// contextRetrySame retries on the same thread: codex compacts the
	// thread's history on its next resume.
	contextRetrySame contextAction = 1
	// contextHandoff archives the thread and retries on a fresh one that
	// opens with a handoff.
	contextHandoff contextAction = 2
	// contextFail records the message as failed: it does not fit even a
	// fresh thread.
	contextFail contextAction = 3
)

// contextStep decides what follows a context-window failure of message id.
// cr is what was done for it so far (nil: nothing); fresh says the failed
// turn ran on a fresh thread (with a handoff or without history), where
// neither a compaction nor another fresh thread can help. It is a pure
// function.
func contextStep(cr *project.ContextRetry, id string, fresh bool) contextAction {
	switch {
	case fresh:
		return contextFail
	case cr == nil || cr.Message != id:
		return contextRetrySame
	case cr.Step == int(contextRetrySame):
		return contextHandoff
	}
	return contextFail
}

// handoffInput is what a handoff is written from.
type handoffInput struct {
	Agent, Role, Team string
	Pending           project.PendingHandoff
	Recent            []project.RecentTurn
}

// handoffText writes the handoff that opens a fresh thread: who the agent
// is, why its previous thread was archived, its last replies (oldest
// first, each clipped) and what it was doing. The result is bounded by the
// clip limits. It is a pure function.
func handoffText(in handoffInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are agent %s (role %s) of team %s.\n", in.Agent, in.Role, in.Team)
	prev := "Your previous thread"
	if in.Pending.Previous != "" {
		prev += " (" + in.Pending.Previous + ")"
	}
	fmt.Fprintf(&b, "%s was archived: %s. Its history is not in this thread.\n", prev, in.Pending.Reason)
	if len(in.Recent) == 0 {
		b.WriteString("\nNo earlier reply of yours was kept.\n")
	} else {
		fmt.Fprintf(&b, "\nYour last %d replies, oldest first:\n", len(in.Recent))
		for i, r := range in.Recent {
			fmt.Fprintf(&b, "%d. To message %s from %s (%s), which said: %s\n   You replied: %s\n", i+1, r.Message, r.From,
				r.At.UTC().Format(time.RFC3339), oneLine(textclip.Bytes(r.Body, recentBodyClip, textclip.Truncated)), oneLine(r.Reply))
		}
	}
	doing := in.Pending.Doing
	if doing == "" && len(in.Recent) > 0 {
		last := in.Recent[len(in.Recent)-1]
		doing = fmt.Sprintf("you had just answered message %s from %s (above).", last.Message, last.From)
	}
	if doing != "" {
		b.WriteString("\nWhat you were doing: " + doing + "\n")
	}
	b.WriteString("\nCheck the files in your working directory for the state of your work before you repeat any of it.\n")
	return b.String()
}

// oneLine folds line breaks so that a quoted text stays one list item.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// outgoing is the SendMessage for a claimed message: its header notes why
// the last attempt ended when batty knows (a transient failure's retry
// record, else a context-window failure), and it opens a fresh thread with
// the handoff owed, if any. It records whether the handoff went out.
func (a *agent) outgoing(m inbox.Message) protocol.SendMessage {
	s := protocol.SendMessage{ID: m.ID, From: m.From, Body: m.Body, Attempt: m.Attempt, InReplyTo: m.InReplyTo, Notice: a.worktree.mergeReminder()}
	cr := a.st.ContextRetry
	switch {
	case m.Transient != nil && m.Transient.Note != "":
		// Set by the last failure (a requeue clears it).
		s.RetryNote = m.Transient.Note
	case limitRetryNote(m) != "":
		// Put back after a usage limit or a failed login: never answered.
		s.RetryNote = limitRetryNote(m)
	case cr != nil && cr.Message == m.ID && m.Attempt > 1 && cr.Step == int(contextHandoff):
		s.RetryNote = fmt.Sprintf("retried on a fresh thread, attempt %d: the earlier attempt ran out of context window", m.Attempt)
	case cr != nil && cr.Message == m.ID && m.Attempt > 1:
		s.RetryNote = fmt.Sprintf("retried, attempt %d: the earlier attempt ran out of context window; the thread's history has been compacted since, so check what is already done before repeating work", m.Attempt)
	}
	a.carried, a.freshTurn = false, a.st.ThreadID == ""
	switch h := a.st.Handoff; {
	case h != nil && a.st.ThreadID == "":
		s.Handoff = handoffText(handoffInput{Agent: a.def.Name, Role: a.def.Role, Team: a.cfg.Name, Pending: *h, Recent: a.st.Recent})
		a.carried = true
	case h != nil:
		// Only a message carrying the handoff starts a thread after one is
		// owed: this thread holds it (its turn ended without a
		// turn_finished, the shim having died).
		a.st.Handoff = nil
	}
	return s
}

// contextRetry takes step act (contextRetrySame or contextHandoff) for m,
// whose turn e ran out of context window (planTurn decides which): m is
// retried on the same thread, or on a fresh one opened with a handoff.
func (a *agent) contextRetry(m inbox.Message, e protocol.TurnFinished, act contextAction) {
	thread := a.st.ThreadID
	switch act {
	case contextRetrySame:
		a.st.ContextRetry = &project.ContextRetry{Message: m.ID, Step: int(contextRetrySame)}
		a.emit(eventlog.Event{Type: eventlog.EvContextRetry, Agent: a.def.Name, Message: m.ID, Detail: e.Error,
			Data: eventlog.ContextRetry{Step: "same_thread", ThreadID: thread}})
	case contextHandoff:
		a.st.ContextRetry = &project.ContextRetry{Message: m.ID, Step: int(contextHandoff)}
		a.handOff("the context window ran out twice on message "+m.ID+", even after codex compacted the thread",
			fmt.Sprintf("message %s from %s did not fit your previous thread; it follows this handoff in full.", m.ID, m.From))
		a.emit(eventlog.Event{Type: eventlog.EvContextRetry, Agent: a.def.Name, Message: m.ID, Detail: e.Error,
			Data: eventlog.ContextRetry{Step: "fresh_thread", ThreadID: thread}})
	}
}

// contextGaveUp follows the recorded failure of m, which did not fit even
// a fresh thread: one alert, and the agent is left on a usable thread. The
// thread of the failed turn holds the message that does not fit (codex
// would have to compact it on every resume, and fail again), and so does
// the thread before it: the next message opens a fresh thread with a
// handoff that says what happened.
func (a *agent) contextGaveUp(m inbox.Message, e protocol.TurnFinished) {
	a.st.ContextRetry = nil
	w := a.def.Codex.Window()
	detail := fmt.Sprintf("message %s from %s does not fit %s's context window (%d tokens) even on a fresh thread: recorded as failed after %d attempt(s); "+
		"split it or write the material to a file and send its path: %s", m.ID, m.From, a.def.Name, w, m.Attempt, e.Error)
	a.log.Error("Message does not fit the context window", "message", m.ID, "window", w, "attempts", m.Attempt)
	a.emit(eventlog.Event{Type: eventlog.EvContextExhaust, Agent: a.def.Name, Message: m.ID, Detail: detail,
		Data: eventlog.ContextExhausted{Attempts: m.Attempt, WindowTokens: int64(w)}})
	a.handOff("message "+m.ID+" did not fit the context window even on a fresh thread",
		fmt.Sprintf("message %s from %s was too large for the context window and was recorded as failed; it began: %s", m.ID, m.From,
			oneLine(textclip.Bytes(m.Body, doingClip, textclip.Truncated))))
}

// handOff archives the agent's thread and owes a handoff: the shim starts
// a fresh thread (ResetThread takes effect between turns), and the next
// message opens it with the handoff.
func (a *agent) handOff(reason, doing string) {
	now := time.Now().UTC()
	prev := a.st.ThreadID
	a.st.Archive(reason, now)
	a.st.Handoff = &project.PendingHandoff{Reason: reason, Previous: prev, Doing: doing, Since: now}
	if a.p != nil {
		a.p.Send(protocol.ResetThread{Reason: reason})
	}
	a.emit(eventlog.Event{Type: eventlog.EvHandoff, Agent: a.def.Name, Detail: reason, Data: eventlog.Handoff{Archived: prev}})
}

// afterTurn keeps what a handoff needs once a turn's outcome is settled:
// the reply of a completed turn, the handoff delivered, and a handoff owed
// when the turn used more of the window than the threshold (taken now,
// while the agent is idle, before its next message).
func (a *agent) afterTurn(m inbox.Message, e protocol.TurnFinished, reply string, requeued bool) {
	if a.carried && e.ThreadID != "" && a.st.ThreadID != "" {
		// The handoff reached a thread, which holds it now.
		a.st.Handoff = nil
	}
	if requeued {
		return
	}
	if a.st.ContextRetry != nil && a.st.ContextRetry.Message == m.ID {
		a.st.ContextRetry = nil
	}
	if e.Status != protocol.TurnCompleted {
		return
	}
	a.st.Recent = append(a.st.Recent, project.RecentTurn{Message: m.ID, From: m.From, Body: textclip.Bytes(m.Body, recentBodyClip, textclip.Truncated),
		Reply: textclip.Bytes(reply, recentReplyMax, textclip.Truncated), At: time.Now().UTC()})
	if n := len(a.st.Recent); n > recentMax {
		a.st.Recent = append([]project.RecentTurn(nil), a.st.Recent[n-recentMax:]...)
	}
	limit := float64(a.def.Codex.Handoff())
	if e.ContextPct >= limit && a.st.ThreadID != "" && a.st.Handoff == nil {
		a.handOff(fmt.Sprintf("its last request used %.0f%% of the %d-token context window (handoff from %.0f%%)",
			e.ContextPct, a.def.Codex.Window(), limit), "")
	}
}
