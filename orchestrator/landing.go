package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/teamstatus"
	"github.com/battyhq/batty/workspaces"
)

// The merge queue in the daemon: `batty merge` writes a request into the
// landing inbox (team.LandingBox, so that an agent inside Codex's sandbox,
// which cannot reach the control socket, can ask too, and a request made
// while the team is stopped waits for the next start); the lander takes
// each into the durable queue (package landing) and lands one branch at a
// time. After a landing every other worktree agent merges the new base at
// its next idle moment (agent.syncWorkspace); a landing that failed tells
// the agent what to fix.

// landingRetry is how often waiting landings (the user's checkout of base
// is dirty, git failed) are tried again.
const landingRetry = 30 * time.Second

// lander runs the merge queue. Its goroutine (run) owns the queue's
// landings; status reads the queue (safe for concurrent use).
type lander struct {
	d    *Daemon
	q    *landing.Queue
	box  *inbox.Box
	kick chan struct{} // buffered(1): look at the inbox and the queue
	told map[string]landing.State
	// heldAt is, for each request held for its agent's turn, the turns
	// the agent had been sent then (see turns).
	heldAt map[string]uint64
}

// newLander opens the merge queue of a team with worktree agents.
func (d *Daemon) newLander() (*lander, error) {
	box, err := d.store.Box(team.LandingBox)
	if err != nil {
		return nil, err
	}
	o := landing.Options{
		Layout: d.layout, TopLevel: d.repo.TopLevel(), WorktreesDir: d.layout.WorktreesDir(), Base: d.base,
		Verify: d.cfg.Workspace.Verify, VerifyTimeout: d.cfg.Workspace.VerifyTimeout, Env: d.markedEnv(),
		Sandbox:   d.sandbox("verify"),
		RetryWait: landingRetry,
		// Added to the default protected paths: a change of one waits for
		// the human's review.
		Protected: protectedPaths(d.cfg, d.repo.TopLevel()),
		// Its git commands and the worktrees' never run side by side.
		Lock: d.repo.Locker(),
	}
	if d.reaper != nil {
		o.Starter = d.reaper
	}
	q, err := landing.Open(o)
	if err != nil {
		return nil, err
	}
	return &lander{d: d, q: q, box: box, kick: make(chan struct{}, 1), told: map[string]landing.State{}, heldAt: map[string]uint64{}}, nil
}

// poke asks the lander to look at its inbox and queue; it never blocks.
func (l *lander) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// run takes requests and lands them one at a time until ctx ends; a
// landing cut off by the end is tried again at the next start.
func (l *lander) run(ctx context.Context) {
	msgs, errs := l.box.Recover()
	for _, err := range errs {
		l.d.log.Warn("Landing inbox", "error", err)
	}
	for _, m := range msgs {
		if err := l.box.Requeue(m.ID); err != nil {
			l.d.log.Warn("Landing inbox", "requeue", m.ID, "error", err)
		}
	}
	retry := time.NewTicker(landingRetry)
	defer retry.Stop()
	for {
		l.intake()
		for ctx.Err() == nil {
			// A landing of an agent whose turn may still commit waits for
			// that commit (see publishWork).
			l.turns()
			r, ok := l.q.Next()
			if !ok {
				break
			}
			done, err := l.q.Land(ctx, r.ID)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				l.d.log.Error("Landing failed to run", "request", r.ID, "error", err)
				l.d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Agent: r.Agent, Detail: "landing " + r.ID + ": " + err.Error()})
				break
			}
			l.report(done)
			if done.State == landing.Waiting {
				// The others wait behind it: one landing at a time, in order.
				// (One waiting for review holds no one up: it is not due.)
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		case <-retry.C:
		}
	}
}

// intake takes every request waiting in the landing inbox into the queue.
// A request is completed in the inbox only once the queue holds it; one
// taken twice (a crash in between) is queued once.
func (l *lander) intake() {
	for {
		m, ok, errs := l.box.Next("")
		for _, err := range errs {
			l.d.log.Warn("Landing inbox", "error", err)
		}
		if !ok {
			return
		}
		if _, err := l.box.Claim(m.ID); err != nil {
			l.d.log.Warn("Landing inbox", "claim", m.ID, "error", err)
			return
		}
		o := l.take(m)
		if _, err := l.box.Complete(m.ID, o); err != nil {
			l.d.log.Warn("Landing inbox", "complete", m.ID, "error", err)
			return
		}
	}
}

// take queues the landing that message m asks for, or says why not.
func (l *lander) take(m inbox.Message) inbox.Outcome {
	agent, asked := landing.ParseRequestBody(m.Body)
	refuse := func(why string) inbox.Outcome {
		l.d.events.Append(eventlog.Event{Type: eventlog.EvRejected, Agent: agent, Message: m.ID, Detail: "landing request: " + why})
		return inbox.Outcome{Status: inbox.StatusRejected, Error: why}
	}
	a, ok := l.d.byName[agent]
	switch {
	case !ok:
		return refuse(fmt.Sprintf("no agent %q in the team", agent))
	case a.ws == nil:
		return refuse(fmt.Sprintf("agent %q has no worktree of its own", agent))
	case !team.MayLand(l.d.cfg, m.From, agent):
		return refuse(fmt.Sprintf("%s may not land %s's branch: an agent may land its own, or that of an agent it may message (talks_to)", m.From, agent))
	}
	r, fresh, err := l.q.Enqueue(agent, m.From, reviewOf(l.d.cfg.Workspace, m.From, asked))
	if err != nil {
		return inbox.Outcome{Status: inbox.StatusFailed, Error: "queue the landing: " + err.Error()}
	}
	if fresh {
		l.d.events.Append(eventlog.Event{Type: eventlog.EvLandingQueued, Agent: agent, Message: m.ID,
			Data: eventlog.LandingQueued{Request: r.ID, By: m.From, Branch: r.Branch, Review: r.Review}})
	}
	reply := "queued as landing request " + r.ID
	if open, _ := a.workPending(); open {
		reply += "; it waits for " + agent + "'s turn to end, then lands what that turn commits"
	}
	if r.Review {
		reply += "; once verified it waits for the human's review"
	}
	return inbox.Outcome{Status: inbox.StatusCompleted, Reply: reply}
}

// report tells what became of landing r: the event, and what the agents
// must know.
func (l *lander) report(r landing.Request) {
	a := l.d.byName[r.Agent]
	switch r.State {
	case landing.Landed:
		l.d.events.Append(eventlog.Event{Type: eventlog.EvLanded, Agent: r.Agent,
			Detail: fmt.Sprintf("%s landed on %s", r.Branch, l.d.base),
			Data:   eventlog.Landed{Request: r.ID, Commit: r.LandedCommit, Base: l.d.base, Branch: r.Branch, Steps: landingSteps(r)}})
		for _, o := range l.d.agents {
			if o.ws != nil {
				// Each merges the new base at its next idle moment (its own
				// branch too: the landed base is one merge ahead of it).
				o.wantSync(r.ID, false)
			}
		}
	case landing.Nothing:
		l.d.events.Append(eventlog.Event{Type: eventlog.EvLanded, Agent: r.Agent,
			Detail: fmt.Sprintf("nothing to land: %s has no commit that %s lacks", r.Branch, l.d.base),
			Data:   eventlog.Landed{Request: r.ID, Nothing: true, Base: l.d.base, Branch: r.Branch, Steps: landingSteps(r)}})
	case landing.Review:
		l.reviewWaiting(r)
	case landing.Waiting:
		if l.told[r.ID] != landing.Waiting {
			l.d.events.Append(eventlog.Event{Type: eventlog.EvLandingWaiting, Agent: r.Agent, Detail: r.Error,
				Data: eventlog.LandingWaiting{Request: r.ID}})
		}
	case landing.Failed:
		detail := r.Error
		if len(r.Conflicts) > 0 {
			detail = fmt.Sprintf("%s conflicts with %s in %s", r.Branch, l.d.base, strings.Join(r.Conflicts, ", "))
		}
		data := eventlog.LandingFailed{Request: r.ID, Base: l.d.base, Branch: r.Branch, Conflicts: r.Conflicts, Output: r.OutputTail, Steps: landingSteps(r)}
		l.d.events.Append(eventlog.Event{Type: eventlog.EvLandingFailed, Agent: r.Agent, Detail: detail, Data: data})
		if a != nil {
			if len(r.Conflicts) > 0 {
				// Told now; its next idle moment, before the note, merges
				// base into its branch and leaves the conflict for it.
				a.tell(r.ID, conflictNote(r.Agent, l.d.base, r.Branch+" did not land on "+l.d.base, r.Conflicts))
				a.wantSync(r.ID, true)
			} else {
				a.tell(r.ID, verifyFailedNote(r, l.d.base, l.d.cfg.Workspace.Verify))
			}
		}
	}
	l.told[r.ID] = r.State
	if r.State != landing.Waiting {
		delete(l.told, r.ID)
	}
}

// verifyFailedNote tells an agent that its branch did not land because the
// team's verify failed on it. It is a pure function.
func verifyFailedNote(r landing.Request, base, verify string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[batty] your branch %s did not land on %s: ", r.Branch, base)
	if r.OutputTail != "" {
		fmt.Fprintf(&b, "the team's check `%s` failed on it merged with %s (%s). The end of its output:\n\n%s\n\n", verify, base, r.Error, r.OutputTail)
	} else {
		fmt.Fprintf(&b, "%s.\n\n", r.Error)
	}
	fmt.Fprintf(&b, "%s is unchanged. Fix this in your worktree, then run `batty merge %s` again.", base, r.Agent)
	return b.String()
}

// landingStatus is what status shows of the merge queue.
func (l *lander) status() []control.LandingStatus { return teamstatus.Landings(l.q.List()) }

// wantSync asks the agent to merge the base into its branch at its next
// idle moment, after landing request req; told says that the agent has
// been told of the conflict already (its own landing failed on it), else
// a conflict is told then. Safe from any goroutine.
func (a *agent) wantSync(req string, told bool) {
	a.mu.Lock()
	a.syncReq, a.syncTold = req, told
	a.mu.Unlock()
	a.poke()
}

// tell delivers a note from batty about landing request req into the
// agent's own inbox: a reply from the human to that request, so it is
// delivered once whatever crashes, and the agent's answer to it goes to no
// one. Safe from any goroutine.
func (a *agent) tell(req, body string) {
	if _, _, err := a.box.DeliverReply(inbox.Message{From: team.Human, To: a.def.Name, Body: body, InReplyTo: req}); err != nil {
		a.warn("tell "+a.def.Name, err)
	}
}

// syncWorkspace merges the new base into the agent's branch, as asked
// (wantSync; dispatch decides when: gateFacts.syncBase): cleanly, or
// leaving the conflict in the worktree for the agent, told in a message.
// The merge (and the commit before it) is a step off run's goroutine (see
// startStep); the agent looks at its inbox again once it has ended. Run's
// goroutine only, while no turn is in flight.
func (a *agent) syncWorkspace() {
	a.mu.Lock()
	req, told := a.syncReq, a.syncTold
	a.syncReq, a.syncTold = "", false
	a.mu.Unlock()
	if req == "" || a.ws == nil {
		return
	}
	// Whatever is uncommitted is committed first: the merge needs a clean
	// worktree, and nothing may be lost.
	why := "work in progress before merging " + a.ws.base
	commit := a.commits()
	w := a.ws
	a.startStep(func() func() {
		var c workspaces.Committed
		var cerr error
		if commit {
			c, cerr = w.commit(nil, true, why)
		}
		ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		res, err := w.ws.MergeBase(ctx)
		st := w.readState()
		return func() {
			if commit {
				// The state read after the merge is shown below.
				a.worktree.committed(nil, true, why, c, cerr)
			}
			a.showWorkspace(st)
			a.worktree.merged(req, told, res, err)
			a.dispatch()
		}
	})
}

// merged records the end of a merge of the base into the agent's branch
// (agent.syncWorkspace) asked by landing request req: its event, and the
// conflict left for the agent told to it unless it was (told).
func (w *worktree) merged(req string, told bool, res workspaces.SyncResult, err error) {
	switch {
	case err != nil:
		w.log.Warn("Merging the base into the worktree failed", "error", err)
		w.events(eventlog.Event{Type: eventlog.EvWarning, Agent: w.agent, Detail: "merge " + w.ws.base + " into " + workspaces.Branch(w.agent) + ": " + err.Error()})
	case res.Merged:
		w.events(eventlog.Event{Type: eventlog.EvWorkspaceSynced, Agent: w.agent,
			Detail: w.ws.base + " merged into " + workspaces.Branch(w.agent)})
	case len(res.Conflicts) > 0:
		w.events(eventlog.Event{Type: eventlog.EvWorkspaceConflict, Agent: w.agent,
			Detail: w.ws.base + " conflicts with " + workspaces.Branch(w.agent) + " in " + strings.Join(res.Conflicts, ", "),
			Data:   eventlog.WorkspaceConflict{Files: res.Conflicts}})
		if !told {
			w.tell(req, conflictNote(w.agent, w.ws.base, "", res.Conflicts))
		}
	}
}

// conflictNote tells an agent that the base conflicts with its branch and
// that the merge waits in its worktree for it to resolve. It is a pure
// function.
func conflictNote(agent, base, why string, files []string) string {
	head := fmt.Sprintf("[batty] %s has moved on and conflicts with your branch batty/%s", base, agent)
	if why != "" {
		head = "[batty] " + why + ": it conflicts with " + base
	}
	return fmt.Sprintf("%s in: %s.\n\nbatty has started merging %s into your branch in your worktree and left the conflict markers (<<<<<<<, =======, >>>>>>>) in those files. "+
		"Resolve each conflict keeping the intent of both sides, remove the markers, make sure the code still builds and its tests pass; "+
		"batty commits the result (completing the merge) when your turn ends. Then run `batty merge %s` to land it.",
		head, strings.Join(files, ", "), base, agent)
}
