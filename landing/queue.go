package landing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protect"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/textclip"
	"github.com/battyhq/batty/workspaces"
)

// Defaults of Options.
const (
	DefaultVerifyTimeout = 30 * time.Minute
	DefaultCommitter     = "batty <batty@localhost>"
	DefaultRetryWait     = time.Minute
	DefaultMaxAttempts   = 5
)

// IntegrationName is the integration worktree's name in the worktrees
// directory.
const IntegrationName = ".landing"

// Options configure a Queue.
type Options struct {
	// Layout is the project's state directory; the queue is kept in
	// state/landing.json.
	Layout project.Layout
	// TopLevel is the repository's top-level directory (its main work
	// tree), absolute.
	TopLevel string
	// WorktreesDir holds the worktrees, absolute; the integration
	// worktree is WorktreesDir/.landing.
	WorktreesDir string
	// Base is the branch agents' branches land onto (e.g. "main").
	Base string
	// Verify is the shell command a landing must pass; "" checks nothing.
	Verify string
	// VerifyTimeout limits one verify run (0: DefaultVerifyTimeout).
	VerifyTimeout time.Duration
	// Sandbox is how verify runs inside Codex's sandbox, writing only the
	// integration worktree and what it lists; nil runs verify without a
	// sandbox, as the daemon's user.
	Sandbox *sandbox.Policy
	// Committer is the author and committer of merge commits, "Name
	// <email>" ("": DefaultCommitter).
	Committer string
	// Env is the environment of git and verify (nil: os.Environ()).
	Env []string
	// Starter starts git and verify (nil: exec.Cmd.Start).
	Starter workspaces.Starter
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Lock, when set, is held around the landing's git writes (preparing
	// the integration worktree and merging; advancing base), never across
	// verify: the caller shares it with its other git writers.
	Lock sync.Locker
	// RetryWait is how long a waiting request waits before it is due
	// again (0: DefaultRetryWait).
	RetryWait time.Duration
	// MaxAttempts bounds the attempts of one Land when base keeps moving
	// (0: DefaultMaxAttempts); then the request waits.
	MaxAttempts int
	// Protected are path patterns (package protect) added to
	// protect.Defaults, which always apply: a landing whose merge changes
	// a path they match waits for the human's review (see protected.go).
	Protected []string
}

// Queue is the merge queue of one project: the requests (kept durably in
// state/landing.json) and the landing of one at a time. Its methods are
// safe for concurrent use; Land runs one landing at a time (a second call
// waits for the first).
type Queue struct {
	opt         Options
	env         []string
	name, email string
	integ       string
	protected   protect.Set

	landing chan struct{} // holds one token while a Land runs

	mu   sync.Mutex
	reqs []Request

	// common is the repository's common git directory once commonDir
	// has found it (it does not change while the queue is open).
	commonMu sync.Mutex
	common   string

	// beforeAdvance, when set (tests), is called just before base is
	// advanced, with the git lock held.
	beforeAdvance func(Decision)
	// afterCheck, when set (tests), is called in prepare once the
	// integration worktree was checked and before git runs in it: when
	// a writer of the worktree would swap its .git file.
	afterCheck func()
	// removeAll removes a directory tree (os.RemoveAll; tests make it
	// fail, as a directory written to while it is removed does).
	removeAll func(string) error
}

// Open validates o and loads the queue from the state file. A file that is
// corrupt, too large or a link is an error naming it and the fix. Open
// starts nothing; the caller drives landings with Next and Land.
func Open(o Options) (*Queue, error) {
	if o.Layout.Dir == "" {
		return nil, errors.New("landing: no state directory")
	}
	if !filepath.IsAbs(o.TopLevel) || !filepath.IsAbs(o.WorktreesDir) {
		return nil, fmt.Errorf("landing: top level %q and worktrees directory %q must be absolute", o.TopLevel, o.WorktreesDir)
	}
	if !validBranchName(o.Base) {
		return nil, fmt.Errorf("landing: %q is not a branch name", o.Base)
	}
	if o.VerifyTimeout <= 0 {
		o.VerifyTimeout = DefaultVerifyTimeout
	}
	if o.Committer == "" {
		o.Committer = DefaultCommitter
	}
	name, email, err := parseIdent(o.Committer)
	if err != nil {
		return nil, fmt.Errorf("landing: committer: %w", err)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RetryWait <= 0 {
		o.RetryWait = DefaultRetryWait
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	protected, err := protect.Compile(append(protect.Defaults(), o.Protected...))
	if err != nil {
		return nil, fmt.Errorf("landing: %w", err)
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	q := &Queue{opt: o, env: workspaces.CleanEnv(env), name: name, email: email, protected: protected,
		integ: filepath.Join(filepath.Clean(o.WorktreesDir), IntegrationName), landing: make(chan struct{}, 1), removeAll: os.RemoveAll}
	if q.reqs, err = load(o.Layout); err != nil {
		return nil, err
	}
	return q, nil
}

// StatePath is the queue's state file.
func StatePath(l project.Layout) string { return filepath.Join(l.StateDir(), stateFileName) }

const refixHint = "move it away to start the merge queue afresh (landings not done yet are forgotten: ask for them again)"

// load reads the state file; a missing one is an empty queue.
func load(l project.Layout) ([]Request, error) {
	path := StatePath(l)
	d, err := l.OpenDir(filepath.Base(l.StateDir()), false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	defer d.Close()
	f, err := d.OpenFile(stateFileName, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateFile+1))
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	if len(b) > maxStateFile {
		return nil, fmt.Errorf("state file %s is larger than %d bytes: %s", path, maxStateFile, refixHint)
	}
	reqs, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("state file %s is corrupt (%v): %s", path, err, refixHint)
	}
	return reqs, nil
}

// saveLocked writes the queue to the state file; q.mu is held.
func (q *Queue) saveLocked() error {
	return project.SaveJSON(q.opt.Layout, stateFileName, fileState{Requests: nonNil(q.reqs)})
}

// Enqueue queues the landing of agent's branch, asked by by ("human" or an
// agent's name); review says it waits, once verified, for the human's
// approval of the tip it merged (see Approve). An unfinished request for
// agent that has not started (queued, waiting, or waiting for the agent's
// turn) is returned instead of a new one (new is false), asking for
// review too when review is set; a waiting one becomes due at once (one
// waiting for the agent's turn still waits for it). One waiting for review is returned as
// it is: its approval finds a branch moved since and has it verified and
// reviewed again. The request is in the state file before Enqueue
// returns.
func (q *Queue) Enqueue(agent, by string, review bool) (Request, bool, error) {
	if !team.ValidName(agent) {
		return Request{}, false, fmt.Errorf("queue a landing: %q is not an agent name", agent)
	}
	if len(by) > maxByLen || !utf8.ValidString(by) {
		return Request{}, false, fmt.Errorf("queue a landing for %s: requester longer than %d bytes or not UTF-8", agent, maxByLen)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	unfinished := 0
	for i, r := range q.reqs {
		if r.State.Finished() {
			continue
		}
		unfinished++
		if r.Agent != agent || (r.State != Queued && r.State != Waiting && r.State != WaitingTurn && r.State != Review) {
			continue
		}
		if r.State == Review {
			return clone(r), false, nil
		}
		if (r.State == Waiting && !r.RetryAt.IsZero()) || (review && !r.Review) {
			old := q.reqs[i]
			q.reqs[i].RetryAt = time.Time{}
			q.reqs[i].Review = r.Review || review
			if err := q.saveLocked(); err != nil {
				q.reqs[i] = old
				return Request{}, false, fmt.Errorf("queue a landing for %s: %w", agent, err)
			}
		}
		return clone(q.reqs[i]), false, nil
	}
	if unfinished >= MaxUnfinished {
		return Request{}, false, fmt.Errorf("queue a landing for %s: %d landings are waiting already", agent, unfinished)
	}
	id, err := q.newIDLocked()
	if err != nil {
		return Request{}, false, fmt.Errorf("queue a landing for %s: %w", agent, err)
	}
	r := Request{ID: id, Agent: agent, Branch: BranchOf(agent), RequestedAt: q.opt.Now().UTC(), RequestedBy: by, State: Queued, Review: review}
	q.reqs = append(q.reqs, r)
	if err := q.saveLocked(); err != nil {
		q.reqs = q.reqs[:len(q.reqs)-1]
		return Request{}, false, fmt.Errorf("queue a landing for %s: %w", agent, err)
	}
	return clone(r), true, nil
}

// HoldForTurn makes request id wait for its agent's turn (WaitingTurn,
// Error saying so: TurnReason), as DecideTurn decides with the agent
// busy; a request it would not hold is returned as it is. The request is
// in the state file before HoldForTurn returns.
func (q *Queue) HoldForTurn(id string) (Request, error) {
	return q.turnStep(id, true)
}

// ReleaseTurn queues again request id, held for its agent's turn
// (WaitingTurn): it is due at once and lands the branch as that turn left
// it. A request in another state is returned as it is. The request is in
// the state file before ReleaseTurn returns.
func (q *Queue) ReleaseTurn(id string) (Request, error) {
	return q.turnStep(id, false)
}

// turnStep applies DecideTurn to request id with the agent busy or not,
// holding or releasing it.
func (q *Queue) turnStep(id string, busy bool) (Request, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.IndexFunc(q.reqs, func(x Request) bool { return x.ID == id })
	if i < 0 {
		return Request{}, fmt.Errorf("landing %s: no such request", id)
	}
	r := q.reqs[i]
	switch DecideTurn(r, busy) {
	case TurnHold:
		r.State, r.Error, r.RetryAt = WaitingTurn, TurnReason(r.Agent), time.Time{}
	case TurnRelease:
		r.State, r.Error = Queued, ""
	default:
		return clone(r), nil
	}
	old := q.reqs[i]
	q.reqs[i] = r
	if err := q.saveLocked(); err != nil {
		q.reqs[i] = old
		return Request{}, fmt.Errorf("landing %s: %w", id, err)
	}
	return clone(r), nil
}

// newIDLocked returns an id no request has: the time and random hex.
func (q *Queue) newIDLocked() (string, error) {
	for {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("request id: %w", err)
		}
		id := q.opt.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
		if !slices.ContainsFunc(q.reqs, func(r Request) bool { return r.ID == id }) {
			return id, nil
		}
	}
}

// Next returns the oldest unfinished request that may land now: queued, or
// found landing (after a restart), or waiting with its retry due; one
// waiting for review or for its agent's turn is never due (it holds no
// one up). ok is false when there is none.
func (q *Queue) Next() (Request, bool) {
	now := q.opt.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range q.reqs {
		if due(r, now) {
			return clone(r), true
		}
	}
	return Request{}, false
}

// due reports whether r may land at now. Pure.
func due(r Request, now time.Time) bool {
	switch r.State {
	case Queued, Landing:
		return true
	case Waiting:
		return !now.Before(r.RetryAt)
	}
	return false
}

// List returns all requests, in queue order (finished ones first among
// them as they were queued). The caller owns the copy.
func (q *Queue) List() []Request {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Request, len(q.reqs))
	for i, r := range q.reqs {
		out[i] = clone(r)
	}
	return out
}

// Get returns the request id.
func (q *Queue) Get(id string) (Request, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range q.reqs {
		if r.ID == id {
			return clone(r), true
		}
	}
	return Request{}, false
}

func clone(r Request) Request {
	r.Conflicts = slices.Clone(r.Conflicts)
	r.Protected = slices.Clone(r.Protected)
	return r
}

// record stores r (by id) and saves the state file.
func (q *Queue) record(r Request) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.IndexFunc(q.reqs, func(x Request) bool { return x.ID == r.ID })
	if i < 0 {
		return fmt.Errorf("land %s: the request is gone", r.ID)
	}
	if err := r.Validate(); err != nil {
		// A file that would not load again is never written.
		return fmt.Errorf("land %s: not recorded: %w", r.ID, err)
	}
	q.reqs[i] = clone(r)
	q.reqs = trimFinished(q.reqs, MaxFinished)
	if err := q.saveLocked(); err != nil {
		return fmt.Errorf("land %s: %w", r.ID, err)
	}
	return nil
}

// Land runs the landing of request id to its end: landed, failed, nothing,
// waiting, or waiting for review (verified, when the request asks for a
// review of a tip the human has not approved), saving the request at each
// step; a finished request is returned as it is, and a waiting one is
// tried whatever its RetryAt. Each
// attempt lands the branch's tip as it is when the attempt begins (later
// commits need another request). It blocks while another Land runs. Git
// or verify failing to run makes the request wait (Error says why). The
// error is for what left the request unfinished: ctx ended (the request is
// queued again, verify killed, base untouched unless it was already
// advanced, which the next Land records), its state could not be saved,
// or no such request.
func (q *Queue) Land(ctx context.Context, id string) (Request, error) {
	select {
	case q.landing <- struct{}{}:
	case <-ctx.Done():
		return Request{}, fmt.Errorf("land %s: %w", id, ctx.Err())
	}
	defer func() { <-q.landing }()
	r, ok := q.Get(id)
	if !ok {
		return Request{}, fmt.Errorf("land %s: no such request", id)
	}
	if r.State.Finished() {
		return r, nil
	}
	for attempt := 1; ; attempt++ {
		next, done, err := q.attempt(ctx, r, attempt)
		r = next
		if done || err != nil {
			return r, err
		}
	}
}

// attempt lands r once onto base's current tip. done is false when base
// moved before it could advance, and the landing is to be redone.
func (q *Queue) attempt(ctx context.Context, r Request, attempt int) (_ Request, done bool, _ error) {
	q.lockGit()
	f, err := q.observe(ctx, r)
	q.unlockGit()
	if err != nil {
		return q.stop(ctx, r, err)
	}
	if d := DecideStart(q.opt.Base, r, f); d.Action != ActMerge {
		return q.finish(r, d, nil, "")
	}
	r.State, r.BaseBefore, r.Merged, r.Tip, r.RetryAt = Landing, f.BaseTip, "", f.BranchTip, time.Time{}
	r.Error, r.Conflicts, r.OutputTail, r.Protected, r.ProtectedTotal = "", nil, "", nil, 0
	r.Attempts++
	r.MergeAt, r.VerifyAt, r.VerifyEndedAt = q.opt.Now().UTC(), time.Time{}, time.Time{}
	if err := q.record(r); err != nil {
		return r, true, err
	}
	q.lockGit()
	merged, conflicts, err := func() (string, []string, error) {
		g, err := q.prepare(ctx, f.BaseTip)
		if err != nil {
			return "", nil, err
		}
		return q.merge(ctx, g, r, f)
	}()
	q.unlockGit()
	if err != nil {
		return q.stop(ctx, r, err)
	}
	if len(conflicts) > 0 {
		reason := fmt.Sprintf("merging %s onto %s conflicts in %d file(s)", r.Branch, q.opt.Base, len(conflicts))
		return q.finish(r, Decision{ActFail, reason}, conflicts, "")
	}
	r.Merged = merged
	if r.Protected, r.ProtectedTotal, err = q.protectedChanges(ctx, f.BaseTip, merged); err != nil {
		return q.stop(ctx, r, err)
	}
	if err := q.record(r); err != nil {
		return r, true, err
	}
	r.VerifyAt = q.opt.Now().UTC()
	res, err := q.verify(ctx, r)
	r.VerifyEndedAt = q.opt.Now().UTC()
	if err != nil {
		return q.stop(ctx, r, err)
	}
	if !res.Passed {
		return q.finish(r, Decision{ActFail, res.Reason}, nil, res.Tail)
	}
	if NeedsReview(r) {
		// Base stays as it is until the human approves this tip.
		return q.finish(r, Decision{Action: ActReview}, nil, "")
	}
	advErr := ""
	for {
		d, err := q.tryAdvance(ctx, r, attempt, &advErr)
		switch {
		case err != nil:
			return q.stop(ctx, r, err)
		case d.Action == ActRedo:
			return r, false, nil
		case d.Action == ActAdvanceRef || d.Action == ActAdvanceCheckout:
			continue // it failed: look again
		}
		return q.finish(r, d, nil, "")
	}
}

// tryAdvance observes the repository, decides and, when the decision is
// to advance, advances base. A failed advance is left in *advErr and
// returned as the decision taken; a successful one as ActLanded.
func (q *Queue) tryAdvance(ctx context.Context, r Request, attempt int, advErr *string) (Decision, error) {
	q.lockGit()
	defer q.unlockGit()
	f, err := q.observe(ctx, r)
	if err != nil {
		return Decision{}, err
	}
	f.AdvanceError = *advErr
	d := DecideAdvance(q.opt.Base, r, f, attempt, q.opt.MaxAttempts)
	if d.Action != ActAdvanceRef && d.Action != ActAdvanceCheckout {
		return d, nil
	}
	if q.beforeAdvance != nil {
		q.beforeAdvance(d)
	}
	if err := q.advance(ctx, r, d, f); err != nil {
		if ctx.Err() != nil {
			return Decision{}, err
		}
		*advErr = clipText(err.Error(), maxErrorLen/2)
		return d, nil
	}
	return Decision{Action: ActLanded}, nil
}

// finish records the end of r's landing that d decided: landed, nothing,
// failed (with conflicts or verify's output tail) or waiting.
func (q *Queue) finish(r Request, d Decision, conflicts []string, outputTail string) (Request, bool, error) {
	now := q.opt.Now().UTC()
	r.Error, r.Conflicts, r.OutputTail, r.RetryAt = "", nil, "", time.Time{}
	switch d.Action {
	case ActLanded:
		r.State, r.LandedCommit = Landed, r.Merged
	case ActNothing:
		r.State, r.Error = Nothing, d.Reason
	case ActWait:
		r.State, r.Error, r.RetryAt = Waiting, d.Reason, now.Add(q.opt.RetryWait)
	case ActReview:
		r.State = Review
	default:
		r.State, r.Error = Failed, d.Reason
		if len(conflicts) > MaxConflicts {
			conflicts = conflicts[:MaxConflicts]
		}
		for _, c := range conflicts {
			r.Conflicts = append(r.Conflicts, clipText(c, maxPathLen))
		}
		r.OutputTail = outputTail
	}
	r.Error = clipText(r.Error, maxErrorLen)
	if r.State.Finished() {
		r.FinishedAt = now
	}
	return r, true, q.record(r)
}

// stop ends an attempt that err interrupted: when ctx ended, the request
// is queued again (it lands from scratch next time) and the error
// returned; any other error (git or verify could not run) makes it wait.
func (q *Queue) stop(ctx context.Context, r Request, err error) (Request, bool, error) {
	if ctx.Err() == nil {
		return q.finish(r, Decision{ActWait, err.Error()}, nil, "")
	}
	r.State, r.Error = Queued, clipText("the last attempt was interrupted: "+err.Error(), maxErrorLen)
	if serr := q.record(r); serr != nil {
		return r, true, fmt.Errorf("land %s: %w (and %v)", r.ID, err, serr)
	}
	return r, true, fmt.Errorf("land %s: %w", r.ID, err)
}

// clipText makes s fit a request's field of max bytes: invalid UTF-8 (a
// file name, a command's output) replaced, so that the text stays the same
// size through JSON, then clipped. Pure.
func clipText(s string, max int) string {
	return textclip.Bytes(strings.ToValidUTF8(s, "\uFFFD"), max, textclip.Truncated)
}

func (q *Queue) lockGit() {
	if q.opt.Lock != nil {
		q.opt.Lock.Lock()
	}
}

func (q *Queue) unlockGit() {
	if q.opt.Lock != nil {
		q.opt.Lock.Unlock()
	}
}

// parseIdent splits "Name <email>". Pure.
func parseIdent(s string) (name, email string, err error) {
	open := strings.LastIndexByte(s, '<')
	if open < 0 || !strings.HasSuffix(s, ">") {
		return "", "", fmt.Errorf("%q: want \"Name <email>\"", s)
	}
	name, email = strings.TrimSpace(s[:open]), s[open+1:len(s)-1]
	if name == "" || email == "" || strings.ContainsAny(s[:open], "<>\r\n\x00") || strings.ContainsAny(email, "<>\n\x00 ") {
		return "", "", fmt.Errorf("%q: want \"Name <email>\"", s)
	}
	return name, email, nil
}

// validBranchName reports whether s is a plausible branch name for git's
// command line: what `git check-ref-format --branch` accepts, roughly, and
// never an option. Pure.
func validBranchName(s string) bool {
	if s == "" || len(s) > 255 || s[0] == '-' || s[0] == '/' || strings.HasSuffix(s, "/") ||
		strings.HasSuffix(s, ".") || strings.HasSuffix(s, ".lock") || s == "@" ||
		strings.Contains(s, "..") || strings.Contains(s, "//") || strings.Contains(s, "@{") || strings.Contains(s, "/.") || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return false
		}
	}
	return true
}

// Read returns the merge queue's requests as its state file holds them
// (the unfinished ones and the last MaxFinished finished), without
// opening the queue: for the commands that only read it (batty blame,
// batty show). A project without one has none.
func Read(l project.Layout) ([]Request, error) { return load(l) }
