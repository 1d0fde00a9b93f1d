package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/battyhq/batty/blame"
	"github.com/battyhq/batty/console"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/searchindex"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/threads"
	"github.com/battyhq/batty/usage"
	"github.com/battyhq/batty/workspaces"
)

// ConsoleTeam is the team as the console, served in the daemon's own
// process, sees and changes it (console.Team): the daemon's own handlers
// called directly — the control requests through Run's goroutine as the
// control socket's are served, without the socket and without judging
// the daemon's own pid (the console judges each browser's connection) —
// and the daemon's inboxes, merge queue, repository and files. Safe from
// any goroutine; what needs the running team waits for Ready.
type ConsoleTeam struct{ d *Daemon }

var _ console.Team = ConsoleTeam{}

// ConsoleTeam returns the console's view of the team.
func (d *Daemon) ConsoleTeam() ConsoleTeam { return ConsoleTeam{d} }

// errNotRunning is what a console's request gets of a daemon that has
// stopped (or stopped before it was ready).
var errNotRunning = errors.New("the daemon is not running")

// ready waits until the daemon serves requests, ctx ends or Run returns.
func (t ConsoleTeam) ready(ctx context.Context) error {
	select {
	case <-t.d.ready:
		return nil
	case <-t.d.stopped:
		return errNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ask serves req on Run's goroutine, as a request of the control socket
// is served (serve), and returns its response; a refused request is an
// error.
func (t ConsoleTeam) ask(ctx context.Context, req control.Request) (control.Response, error) {
	if err := t.ready(ctx); err != nil {
		return control.Response{}, err
	}
	got := make(chan control.Response, 1)
	select {
	case t.d.local <- control.InProcess(req, func(r control.Response) { got <- r }):
	case <-t.d.stopped:
		return control.Response{}, errNotRunning
	case <-ctx.Done():
		return control.Response{}, ctx.Err()
	}
	select {
	case r := <-got:
		if r.Error != "" {
			return r, errors.New(r.Error)
		}
		return r, nil
	case <-ctx.Done():
		return control.Response{}, ctx.Err()
	}
}

// Status implements console.Team: the status `batty status` shows.
func (t ConsoleTeam) Status(ctx context.Context) (*control.Status, error) {
	if err := t.ready(ctx); err != nil {
		return nil, fmt.Errorf("the team's status: %w", err)
	}
	st := t.d.Status()
	return &st, nil
}

// Pause implements console.Team (`batty pause`).
func (t ConsoleTeam) Pause(ctx context.Context) error {
	if _, err := t.ask(ctx, control.Request{Op: control.OpPause, Reason: "paused from the console"}); err != nil {
		return fmt.Errorf("pause the team: %w", err)
	}
	return nil
}

// Resume implements console.Team (`batty resume`).
func (t ConsoleTeam) Resume(ctx context.Context) error {
	if _, err := t.ask(ctx, control.Request{Op: control.OpResume}); err != nil {
		return fmt.Errorf("resume the team: %w", err)
	}
	return nil
}

// Cancel implements console.Team (`batty cancel`, `--interrupt`).
func (t ConsoleTeam) Cancel(ctx context.Context, id string, interrupt bool) (control.CancelResult, error) {
	resp, err := t.ask(ctx, control.Request{Op: control.OpCancel, IDs: []string{id}, Interrupt: interrupt})
	if err != nil {
		return control.CancelResult{}, fmt.Errorf("cancel %s: %w", id, err)
	}
	if len(resp.Cancels) != 1 {
		return control.CancelResult{}, fmt.Errorf("cancel %s: the daemon answered %d results", id, len(resp.Cancels))
	}
	return resp.Cancels[0], nil
}

// Reset implements console.Team (`batty reset`).
func (t ConsoleTeam) Reset(ctx context.Context, agent, reason string) (bool, error) {
	resp, err := t.ask(ctx, control.Request{Op: control.OpReset, Agent: agent, Reason: reason})
	if err != nil {
		return false, fmt.Errorf("reset %s: %w", agent, err)
	}
	return len(resp.Pending) > 0, nil
}

// Approve implements console.Team (`batty approve`).
func (t ConsoleTeam) Approve(ctx context.Context, id string) (control.Response, error) {
	return t.review(ctx, control.Request{Op: control.OpApprove, Landing: id})
}

// Reject implements console.Team (`batty reject --reason`).
func (t ConsoleTeam) Reject(ctx context.Context, id, reason string) (control.Response, error) {
	return t.review(ctx, control.Request{Op: control.OpReject, Landing: id, Reason: reason})
}

// review asks an approve or reject; an answer without the request is an
// error.
func (t ConsoleTeam) review(ctx context.Context, req control.Request) (control.Response, error) {
	resp, err := t.ask(ctx, req)
	if err != nil {
		return resp, fmt.Errorf("%s %s: %w", req.Op, req.Landing, err)
	}
	if resp.Landing == nil {
		return resp, fmt.Errorf("%s %s: the daemon's answer has no landing request", req.Op, req.Landing)
	}
	return resp, nil
}

// Send implements console.Team: body queued for agent as the human's
// message (`batty send`), refused by a full inbox (backlog_limit).
func (t ConsoleTeam) Send(_ context.Context, agent, body string) (string, error) {
	return t.deliver(inbox.Message{From: team.Human, To: agent, Body: body})
}

// Reply implements console.Team: the human's answer to message inReplyTo.
func (t ConsoleTeam) Reply(_ context.Context, agent, inReplyTo, body string) (string, error) {
	return t.deliver(inbox.Message{From: team.Human, To: agent, Body: body, InReplyTo: inReplyTo})
}

// deliver queues m in its recipient's inbox, within the backlog limit.
func (t ConsoleTeam) deliver(m inbox.Message) (string, error) {
	box, err := t.d.store.Box(m.To)
	if err != nil {
		return "", fmt.Errorf("send to %s: %w", m.To, err)
	}
	box.Limit = t.d.cfg.BacklogLimit
	sent, err := box.Deliver(m)
	if err != nil {
		return "", fmt.Errorf("send to %s: %w", m.To, err)
	}
	return sent.ID, nil
}

// box opens the inbox name (an agent's or the human's).
func (t ConsoleTeam) box(name string) (*inbox.Box, error) {
	b, err := t.d.store.Box(name)
	if err != nil {
		return nil, fmt.Errorf("open the inbox of %s: %w", name, err)
	}
	return b, nil
}

// Messages implements console.Team.
func (t ConsoleTeam) Messages(box string, limit int) ([]inbox.Listed, error) {
	b, err := t.box(box)
	if err != nil {
		return nil, err
	}
	ms, errs := b.Recent(limit)
	return ms, errors.Join(errs...)
}

// MessageIDs implements console.Team.
func (t ConsoleTeam) MessageIDs(box string) ([]string, error) {
	b, err := t.box(box)
	if err != nil {
		return nil, err
	}
	return b.IDs()
}

// Message implements console.Team.
func (t ConsoleTeam) Message(box, id string) (inbox.Message, error) {
	b, err := t.box(box)
	if err != nil {
		return inbox.Message{}, err
	}
	m, _, err := b.Get(id)
	return m, err
}

// LoadMarks implements console.Team: the state directory's marks.
func (t ConsoleTeam) LoadMarks() (console.Marks, error) { return console.ReadMarks(t.d.layout) }

// SaveMarks implements console.Team.
func (t ConsoleTeam) SaveMarks(m console.Marks) error { return console.WriteMarks(t.d.layout, m) }

// Landings implements console.Team: the merge queue's requests as the
// daemon's queue holds them; none for a team without worktree agents.
func (t ConsoleTeam) Landings(ctx context.Context) ([]landing.Request, error) {
	if err := t.ready(ctx); err != nil {
		return nil, fmt.Errorf("the merge queue: %w", err)
	}
	if t.d.lander == nil {
		return nil, nil
	}
	return t.d.lander.q.List(), nil
}

// gitWait bounds a diff of the console.
const gitWait = 30 * time.Second

// Diff implements console.Team: what agent's branch adds to the base
// (`batty diff`), by the daemon's repository (its git commands started
// by the daemon's reaper).
func (t ConsoleTeam) Diff(ctx context.Context, agent string, w io.Writer) error {
	if err := t.ready(ctx); err != nil {
		return fmt.Errorf("diff of %s: %w", agent, err)
	}
	if t.d.repo == nil {
		return fmt.Errorf("diff of %s: the team has no worktree agents", agent)
	}
	ctx, cancel := context.WithTimeout(ctx, gitWait)
	defer cancel()
	return t.d.repo.Diff(ctx, agent, t.d.base, w, false)
}

// Transcript implements console.Team.
func (t ConsoleTeam) Transcript(agent string) string { return t.d.layout.Transcript(agent) }

// EventsLog implements console.Team.
func (t ConsoleTeam) EventsLog() string { return t.d.layout.EventsLog() }

// Usage implements console.Team: the usage ledger since since (`batty
// usage`).
func (t ConsoleTeam) Usage(_ context.Context, since time.Time) (usage.Data, error) {
	d, err := usage.Read(t.d.layout, since, time.Time{})
	if err != nil {
		return usage.Data{}, fmt.Errorf("read the usage ledger: %w", err)
	}
	return d, nil
}

// roles is the team's agents' roles, by agent.
func (t ConsoleTeam) roles() map[string]string {
	m := map[string]string{}
	for _, a := range t.d.cfg.Agents() {
		m[a.Name] = a.Role
	}
	return m
}

// Threads implements console.Team: every thread of every agent (`batty
// threads --all`), from the state directory's records.
func (t ConsoleTeam) Threads(context.Context) ([]threads.Thread, error) {
	ld, err := threads.Load(t.d.layout, t.roles())
	if err != nil {
		return nil, fmt.Errorf("the threads: %w", err)
	}
	return threads.Build(ld.Records), nil
}

// Conversation implements console.Team (`batty threads show`, redacted).
func (t ConsoleTeam) Conversation(_ context.Context, id string) (threads.Show, error) {
	ld, err := threads.Load(t.d.layout, t.roles())
	if err != nil {
		return threads.Show{}, fmt.Errorf("the threads: %w", err)
	}
	th, err := threads.Find(threads.Build(ld.Records), id)
	if err != nil {
		return threads.Show{}, err
	}
	return threads.Show{Thread: th, Turns: threads.Conversation(ld.Journal, th.Agent, th.ID)}.Redact(), nil
}

// Search implements console.Team (`batty search`): the index read-only,
// every hit read back from the journal.
func (t ConsoleTeam) Search(ctx context.Context, q searchindex.Query) (searchindex.Result, error) {
	return searchindex.Search(ctx, t.d.layout, q)
}

// blameSource is where the console's blame reads: the project's
// repository (git started by the daemon's reaper) and the state
// directory.
func (t ConsoleTeam) blameSource(ctx context.Context) (blame.Source, error) {
	if err := t.ready(ctx); err != nil {
		return blame.Source{}, err
	}
	if t.d.repo == nil {
		return blame.Source{}, errors.New("the team has no worktree agents")
	}
	var starter workspaces.Starter
	if t.d.reaper != nil {
		starter = t.d.reaper
	}
	return blame.Source{Git: blame.Git(t.d.repo.TopLevel(), starter), Layout: t.d.layout}, nil
}

// Blame implements console.Team (`batty blame`): rev "" is the team's
// base branch.
func (t ConsoleTeam) Blame(ctx context.Context, rev, path string, rg blame.Range) (blame.Result, error) {
	src, err := t.blameSource(ctx)
	if err != nil {
		return blame.Result{}, fmt.Errorf("blame %s: %w", path, err)
	}
	if rev == "" {
		rev = t.d.base
	}
	ctx, cancel := context.WithTimeout(ctx, gitWait)
	defer cancel()
	return blame.Blame(ctx, src, rev, path, rg)
}

// Show implements console.Team (`batty show`), landings on the team's
// base branch.
func (t ConsoleTeam) Show(ctx context.Context, what string) (blame.Shown, error) {
	src, err := t.blameSource(ctx)
	if err != nil {
		return blame.Shown{}, fmt.Errorf("show %s: %w", what, err)
	}
	ctx, cancel := context.WithTimeout(ctx, gitWait)
	defer cancel()
	return blame.Show(ctx, src, t.d.base, what)
}
