package orchestrator

import (
	"context"
	"fmt"
	"strings"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/teamstatus"
)

// The review gate in the daemon (see package landing, review.go): a
// landing an agent asks for under workspace.review: human, or the human
// with `batty merge --review`, or anyone's whose merge changes a protected
// path (package protect), waits after a green verify for the human.
// The lander reports it once (a review_waiting alert) and goes on with the
// other requests; `batty approve` and `batty reject` reach the daemon
// through the control socket (OpApprove, OpReject: never an agent's) and
// are answered here, in the daemon's loop. Neither blocks on a landing:
// the request in review is not the lander's until it is queued again.

// reviewOf reports whether the landing requested by from, whose body asked
// for review or not (landing.ParseRequestBody), waits for the human's
// review once verified: an agent's under workspace.review: human, anyone's
// that asked. It is a pure function.
func reviewOf(ws team.WorkspaceSettings, from string, asked bool) bool {
	return asked || (from != team.Human && ws.ReviewsAgents())
}

// reviewWaiting reports that landing r passed verify and waits for the
// human's review: one review_waiting event (an alert) each time a request
// enters review, which is once per tip it verified. Run's goroutine only.
func (l *lander) reviewWaiting(r landing.Request) {
	detail := fmt.Sprintf("%s passed verify merged onto %s at %s and waits for your review", r.Branch, l.d.base, shortCommit(r.BaseBefore))
	if why := teamstatus.ProtectedDetail(r.Protected, r.ProtectedTotal); why != "" {
		// Held whatever workspace.review says: say why.
		detail += ": it " + strings.TrimSuffix(why, "; ")
	}
	l.d.events.Append(eventlog.Event{Type: eventlog.EvReviewWaiting, Agent: r.Agent,
		Detail: detail,
		Data:   eventlog.ReviewWaiting{Request: r.ID, Branch: r.Branch, Base: l.d.base, Tip: r.Tip, Merged: r.Merged, Steps: landingSteps(r)}})
}

// reviewControl answers OpApprove and OpReject: the landing request that
// req.Landing names (landing.FindReview), approved, queued again when its
// branch moved since it was verified, or rejected with req.Reason, which
// its agent is told first (a note delivered at most once per request, so
// a rejection asked again after a crash in between tells it once).
// Daemon's loop only.
func (d *Daemon) reviewControl(req control.Request) control.Response {
	if d.lander == nil {
		return control.Response{Error: "the team has no worktree agents: no landing waits for review"}
	}
	q := d.lander.q
	r, err := landing.FindReview(q.List(), req.Landing)
	if err != nil {
		return control.Response{Error: err.Error() + "; `batty review` lists the landings waiting for review"}
	}
	switch req.Op {
	case control.OpApprove:
		ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		got, dec, err := q.Approve(ctx, r.ID)
		if err != nil {
			return control.Response{Error: err.Error()}
		}
		if dec.Action == landing.ActRefuse {
			return control.Response{Error: dec.Reason}
		}
		resp := control.Response{OK: true, Landing: landingStatus(got)}
		if dec.Action == landing.ActRequeue {
			resp.Requeued = dec.Reason
			d.events.Append(eventlog.Event{Type: eventlog.EvLandingQueued, Agent: got.Agent, Detail: dec.Reason,
				Data: eventlog.LandingQueued{Request: got.ID, By: team.Human, Branch: got.Branch}})
		} else {
			d.events.Append(eventlog.Event{Type: eventlog.EvLandingApproved, Agent: got.Agent,
				Detail: fmt.Sprintf("%s approved at %s; it lands once verified on the latest %s", got.Branch, shortCommit(got.Approved), d.base),
				Data:   eventlog.LandingApproved{Request: got.ID, Tip: got.Approved, Branch: got.Branch}})
		}
		d.lander.poke()
		return resp
	case control.OpReject:
		if dec := landing.DecideRejection(r, req.Reason); dec.Action == landing.ActRefuse {
			return control.Response{Error: dec.Reason}
		}
		if a := d.byName[r.Agent]; a != nil {
			a.tell(r.ID, rejectedNote(r, d.base, strings.TrimSpace(req.Reason)))
		}
		got, dec, err := q.Reject(r.ID, req.Reason)
		if err != nil {
			return control.Response{Error: err.Error()}
		}
		if dec.Action == landing.ActRefuse {
			return control.Response{Error: dec.Reason}
		}
		d.events.Append(eventlog.Event{Type: eventlog.EvLandingRejected, Agent: got.Agent, Detail: got.Rejection,
			Data: eventlog.LandingRejected{Request: got.ID, Tip: got.Tip, Branch: got.Branch}})
		return control.Response{OK: true, Landing: landingStatus(got)}
	}
	return control.Response{Error: fmt.Sprintf("unknown operation %q", req.Op)}
}

// landingStatus is r as status shows it.
func landingStatus(r landing.Request) *control.LandingStatus {
	st := teamstatus.Landings([]landing.Request{r})[0]
	return &st
}

// rejectedNote tells an agent that the human rejected its branch in
// review, and why, as a failed landing tells it what to fix. It is a pure
// function.
func rejectedNote(r landing.Request, base, reason string) string {
	return fmt.Sprintf("[batty] your branch %s did not land on %s: the human reviewed it (at commit %s, verified) and rejected it:\n\n%s\n\n"+
		"%s is unchanged. Address this in your worktree, then run `batty merge %s` again.",
		r.Branch, base, shortCommit(r.Tip), reason, base, r.Agent)
}

// shortCommit abbreviates a commit id for a message. It is a pure
// function.
func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
