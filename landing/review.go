package landing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// The review gate (workspace.review: human, or `batty merge --review`): a
// request that asks for review is merged and verified as any other, then
// waits in state Review, base unchanged, for the human. The queue goes on
// with the others meanwhile: only the advance of base is one at a time.
//
// An approval is of the branch's commit the request merged and verified
// (Request.Tip), the one `batty review` shows. Approving checks the branch
// first: when it moved since (the agent committed again), the request is
// queued again unapproved, and its new tip is verified and waits for
// review again. An approved request is queued again and lands as any other:
// merged onto base's tip as it is then and verified again (base may have
// moved while the request waited), and it advances base without another
// review as long as the tip it merges is the approved one; a tip that
// moved in between waits for review again. A rejection fails the request
// with the human's reason, which the agent is told.

// NeedsReview reports whether r, whose last attempt merged r.Tip and passed
// verify, waits for the human's review before base advances: it asks for
// review or its merge changes protected paths (r.Protected), and the human
// has not approved that tip. It is a pure function.
func NeedsReview(r Request) bool {
	return r.Reviewed() && (r.Tip == "" || r.Approved != r.Tip)
}

// DecideApproval decides what the human's approval of r does, the branch's
// commit being tip now ("" when the branch is gone): ActApprove, ActRequeue
// when the branch moved since r was verified, or ActRefuse when r does not
// wait for review or its branch is gone. It is a pure function.
func DecideApproval(r Request, tip string) Decision {
	switch {
	case r.State != Review:
		return Decision{ActRefuse, fmt.Sprintf("landing request %s of %s is %s, not waiting for review", r.ID, r.Agent, r.State)}
	case tip == "":
		return Decision{ActRefuse, fmt.Sprintf("branch %s does not exist any more; reject the request", r.Branch)}
	case tip != r.Tip:
		return Decision{ActRequeue, fmt.Sprintf("%s moved from %s to %s since it was verified: the new commits are verified and wait for your review again",
			r.Branch, short(r.Tip), short(tip))}
	}
	return Decision{Action: ActApprove}
}

// DecideRejection decides what the human's rejection of r for reason does:
// ActReject (Reason the human's reason, trimmed), or ActRefuse when r does
// not wait for review or the reason is blank, too long or not UTF-8. It is
// a pure function.
func DecideRejection(r Request, reason string) Decision {
	reason = strings.TrimSpace(reason)
	switch {
	case r.State != Review:
		return Decision{ActRefuse, fmt.Sprintf("landing request %s of %s is %s, not waiting for review", r.ID, r.Agent, r.State)}
	case reason == "":
		return Decision{ActRefuse, "say why: the agent is told the reason, to act on it"}
	case len(reason) > MaxReasonLen || !utf8.ValidString(reason):
		return Decision{ActRefuse, fmt.Sprintf("the reason is longer than %d bytes or not UTF-8", MaxReasonLen)}
	}
	return Decision{ActReject, reason}
}

// ErrNoReview is the error of FindReview for an argument that names no
// request waiting for review.
var ErrNoReview = errors.New("no landing waits for review")

// FindReview returns the request that arg names among reqs (queue order),
// as `batty approve` and `batty reject` take it: an agent's name names its
// request waiting for review (else its latest unfinished one, else its
// latest); otherwise arg is a request's id, its short form (the part after
// the last dash, as `batty status` shows it) or a prefix of one id. An arg
// that names no request, or several, is an error (ErrNoReview for none).
// It is a pure function.
func FindReview(reqs []Request, arg string) (Request, error) {
	if arg == "" {
		return Request{}, fmt.Errorf("%w: name an agent or a request", ErrNoReview)
	}
	if team.ValidName(arg) {
		var latest, unfinished *Request
		for i := range reqs {
			r := &reqs[i]
			if r.Agent != arg {
				continue
			}
			if r.State == Review {
				return clone(*r), nil
			}
			latest = r
			if !r.State.Finished() {
				unfinished = r
			}
		}
		if unfinished != nil {
			return clone(*unfinished), nil
		}
		if latest != nil {
			return clone(*latest), nil
		}
	}
	var found []Request
	for _, r := range reqs {
		if r.ID == arg {
			return clone(r), nil
		}
		if strings.HasPrefix(r.ID, arg) || shortID(r.ID) == arg {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return Request{}, fmt.Errorf("%w: no agent has a landing request and no request's id is %s", ErrNoReview, strconv.Quote(arg))
	case 1:
		return clone(found[0]), nil
	}
	ids := make([]string, len(found))
	for i, r := range found {
		ids[i] = r.ID
	}
	return Request{}, fmt.Errorf("%s names %d landing requests (%s): give more of the id", strconv.Quote(arg), len(found), strings.Join(ids, ", "))
}

// shortID is the part of a request's id after its last dash. Pure.
func shortID(id string) string {
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		return id[i+1:]
	}
	return id
}

// Approve records the human's approval of request id, waiting for review,
// as DecideApproval decides it against the branch's commit now: approved
// at its Tip and queued again (it lands once merged onto base's tip and
// verified again), or, when the branch moved since it was verified,
// queued again unapproved. A refusal changes nothing (its Reason says
// why). It returns the request as recorded and the decision; the error is
// for git or the state file failing, or no such request.
func (q *Queue) Approve(ctx context.Context, id string) (Request, Decision, error) {
	r, ok := q.Get(id)
	if !ok {
		return Request{}, Decision{}, fmt.Errorf("approve %s: no such request", id)
	}
	tip := ""
	if r.State == Review {
		var err error
		if tip, err = q.resolve(ctx, "refs/heads/"+r.Branch); err != nil {
			return r, Decision{}, fmt.Errorf("approve %s: %w", id, err)
		}
	}
	d := DecideApproval(r, tip)
	if d.Action == ActRefuse {
		return r, d, nil
	}
	return q.decided(r, d, "approve")
}

// Reject records the human's rejection of request id, waiting for review,
// for reason, as DecideRejection decides it: failed, with the reason in
// Rejection. A refusal changes nothing. It returns the request as
// recorded and the decision; the error is for the state file failing, or
// no such request.
func (q *Queue) Reject(id, reason string) (Request, Decision, error) {
	r, ok := q.Get(id)
	if !ok {
		return Request{}, Decision{}, fmt.Errorf("reject %s: no such request", id)
	}
	d := DecideRejection(r, reason)
	if d.Action == ActRefuse {
		return r, d, nil
	}
	return q.decided(r, d, "reject")
}

// decided records d, the human's decision on r as it was read (waiting for
// review); a request that changed meanwhile is refused.
func (q *Queue) decided(seen Request, d Decision, what string) (Request, Decision, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.IndexFunc(q.reqs, func(x Request) bool { return x.ID == seen.ID })
	if i < 0 || q.reqs[i].State != Review || q.reqs[i].Tip != seen.Tip {
		return seen, Decision{ActRefuse, fmt.Sprintf("landing request %s changed meanwhile: look again with batty review", seen.ID)}, nil
	}
	r := clone(q.reqs[i])
	switch d.Action {
	case ActApprove:
		r.State, r.Approved, r.Error = Queued, r.Tip, "approved in review at "+short(r.Tip)+": lands once verified on the latest base"
	case ActRequeue:
		r.State, r.Approved, r.Error = Queued, "", clipText(d.Reason, maxErrorLen)
	case ActReject:
		r.State, r.Rejection, r.FinishedAt = Failed, d.Reason, q.opt.Now().UTC()
		r.Error = clipText("rejected in review: "+d.Reason, maxErrorLen)
	default:
		return seen, Decision{}, fmt.Errorf("%s %s: unexpected decision %s", what, seen.ID, d.Action)
	}
	if err := r.Validate(); err != nil {
		return seen, Decision{}, fmt.Errorf("%s %s: not recorded: %w", what, seen.ID, err)
	}
	old := q.reqs
	q.reqs = slices.Clone(q.reqs)
	q.reqs[i] = r
	q.reqs = trimFinished(q.reqs, MaxFinished)
	if err := q.saveLocked(); err != nil {
		q.reqs = old
		return seen, Decision{}, fmt.Errorf("%s %s: %w", what, seen.ID, err)
	}
	return clone(r), d, nil
}

// Summary is what a request waiting for review brings to base: the
// branch's commits and the files they change since base's commit the
// request was merged onto, each list cut at MaxSummary.
type Summary struct {
	// Commits are "<short id> <subject>", newest first.
	Commits []string
	// MoreCommits counts the commits left out.
	MoreCommits int
	// Files are "<status>\t<path>" as `git diff --name-status` prints
	// them (a rename "R<score>\t<old>\t<new>").
	Files []string
	// MoreFiles counts the files left out.
	MoreFiles int
}

// MaxSummary bounds each list of a Summary.
const MaxSummary = 50

// Summarize lists what r, waiting for review (merged r.Tip onto
// r.BaseBefore), brings: its commits (BaseBefore..Tip) and the files it
// changes (since the branch's merge base with BaseBefore), running git
// with g (its Dir the repository). The names and subjects are the agent's:
// clean them before showing them. It only reads.
func Summarize(ctx context.Context, g workspaces.Git, r Request) (Summary, error) {
	if !validCommit(r.Tip) || !validCommit(r.BaseBefore) {
		return Summary{}, fmt.Errorf("summarize %s: no verified tip to look at", r.ID)
	}
	var s Summary
	out, err := g.Run(ctx, "log", "--no-decorate", "--no-show-signature", "--format=%h %s", r.BaseBefore+".."+r.Tip)
	if err != nil {
		return Summary{}, fmt.Errorf("summarize %s: %w", r.ID, err)
	}
	s.Commits, s.MoreCommits = firstLines(out, "\n", MaxSummary)
	out, err = g.Run(ctx, "diff", "--name-status", "-z", "--no-renames", r.BaseBefore+"..."+r.Tip)
	if err != nil {
		return Summary{}, fmt.Errorf("summarize %s: %w", r.ID, err)
	}
	fields := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	var files []string
	for i := 0; i+1 < len(fields); i += 2 {
		files = append(files, fields[i]+"\t"+fields[i+1])
	}
	if len(files) > MaxSummary {
		s.Files, s.MoreFiles = files[:MaxSummary], len(files)-MaxSummary
	} else {
		s.Files = files
	}
	return s, nil
}

// firstLines splits out by sep, dropping empty parts, and keeps the first
// max; more counts the others. Pure.
func firstLines(out, sep string, max int) (lines []string, more int) {
	for l := range strings.SplitSeq(out, sep) {
		if l == "" {
			continue
		}
		if len(lines) == max {
			more++
			continue
		}
		lines = append(lines, l)
	}
	return lines, more
}

// RequestBody is the body of a landing inbox message asking to land
// agent's branch, with review when the human asks for it (`batty merge
// --review`): "<agent>" or "<agent> --review". It is a pure function.
func RequestBody(agent string, review bool) string {
	if review {
		return agent + " " + reviewFlag
	}
	return agent
}

// ParseRequestBody reads a landing inbox message's body (RequestBody):
// the agent, and whether the sender asked for review. Surrounding space is
// ignored; anything else is the agent's name as written (checked by the
// caller). It is a pure function.
func ParseRequestBody(body string) (agent string, review bool) {
	body = strings.TrimSpace(body)
	if a, ok := strings.CutSuffix(body, " "+reviewFlag); ok {
		return strings.TrimSpace(a), true
	}
	return body, false
}

const reviewFlag = "--review"
