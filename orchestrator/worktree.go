package orchestrator

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/preflight"
)

// worktree is the agent's room for its git worktree (workspace:
// worktree): the worktree, its preparation in flight, what parks the
// agent when it could not be prepared, the merge of a new base it waits
// for, and what the agent was told. It decides what the end of a step on
// the worktree means (prepared, committed, merged), tells the event log
// and the agent (its own inbox) what they must know, and returns what the
// agent must do. Run's goroutine owns it, except syncReq, workOpen and
// workTurns (under the agent's mu).
type worktree struct {
	agent  string               // the agent's name
	log    hclog.Logger         // the agent's
	events func(eventlog.Event) // appends to the event log
	// tell delivers a note from batty about request req into the agent's
	// own inbox (agent.tell).
	tell func(req, body string)
	// ws is the agent's git worktree, nil for the shared checkout.
	// prepDone answers a preparation in flight (see startShim),
	// prepCancel ends it; wsProblem parks the agent when the worktree
	// could not be prepared.
	ws         *agentWorkspace
	prepDone   chan prepared
	prepCancel context.CancelFunc
	wsProblem  *preflight.Problem
	wsMade     bool // the worktree was made (or found) by a preparation
	// syncReq, under mu, is the landing after which the base is to be
	// merged into the worktree's branch at the next idle moment ("" when
	// none); syncTold whether the agent was told of its conflict already
	// (see wantSync).
	syncReq  string
	syncTold bool
	// workOpen, under mu, says that work of a turn may still come into
	// the worktree, workTurns how many turns the agent had been sent then
	// (see publishWork): landings of the agent wait for that work.
	// turnsSent counts the turns sent (run's goroutine).
	workOpen  bool
	workTurns uint64
	turnsSent uint64
	// nestedTold are the nested repositories of the worktree the agent
	// was told its commits leave out (see tellNested).
	nestedTold map[string]bool
	// unresolved are the files of a merge left in the worktree that still
	// held conflict markers when the last commit was tried (nil: none):
	// each message sent reminds the agent of them (see mergeLeft).
	unresolved []string
	// turnCommit is the last commit made for a message's turn (committed),
	// which its journal line names (turnCommitOf).
	turnCommit turnCommit
}

// turnCommit is the commit made for message msg: head, the paths it
// changed.
type turnCommit struct {
	msg   string
	head  string
	files []string
}

// turnCommitOf is the commit made for message id's turn as the last
// commit for a message found it; zero when it made none.
func (w *worktree) turnCommitOf(id string) turnCommit {
	if w.turnCommit.msg != id {
		return turnCommit{}
	}
	return w.turnCommit
}

// stopPreparing cancels a preparation in flight and waits for it.
func (w *worktree) stopPreparing() {
	if w.prepDone == nil {
		return
	}
	w.prepCancel()
	p := <-w.prepDone
	w.prepDone, w.prepCancel = nil, nil
	w.wsMade = w.wsMade || p.Made
}

// commits reports whether commitWorkspace would commit (and so wait for
// git): the agent has a worktree, made and not being prepared.
func (w *worktree) commits() bool { return w.ws != nil && w.prepDone == nil && w.wsMade }
