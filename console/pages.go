package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// Pages is what the Agent, Inbox, Landings and Alerts pages read and do,
// each through the very request or file of the command that does it
// (batty inbox, cancel, reset, diff, approve, reject, the event log).
type Pages interface {
	// Messages returns at most limit of box's messages (an agent's or
	// the human's), newest first; the files that cannot be read are left
	// out and named in the error, the others returned all the same.
	Messages(box string, limit int) ([]inbox.Listed, error)
	// MessageIDs returns the ids of box's messages, read from their names
	// only.
	MessageIDs(box string) ([]string, error)
	// Message returns the message id of box.
	Message(box, id string) (inbox.Message, error)
	// Reply queues body for agent as the human's answer to message
	// inReplyTo (a message with in_reply_to) and returns its id.
	Reply(ctx context.Context, agent, inReplyTo, body string) (string, error)
	// Cancel withdraws message id (`batty cancel`; with interrupt, one in
	// flight too: `--interrupt`).
	Cancel(ctx context.Context, id string, interrupt bool) (control.CancelResult, error)
	// Reset archives agent's thread (`batty reset`); pending says it is
	// applied once the agent's git or ssh step ends.
	Reset(ctx context.Context, agent, reason string) (pending bool, err error)
	// Approve and Reject decide on the landing request id waiting for
	// review (`batty approve`, `batty reject --reason`).
	Approve(ctx context.Context, id string) (control.Response, error)
	Reject(ctx context.Context, id, reason string) (control.Response, error)
	// Landings returns the merge queue's requests as its state file holds
	// them (with verify's output).
	Landings(ctx context.Context) ([]landing.Request, error)
	// Diff writes what agent's branch adds to the base branch (`batty
	// diff`), git's bytes as they are.
	Diff(ctx context.Context, agent string, w io.Writer) error
	// EventsLog is the path of the team's event log, "" for none.
	EventsLog() string
	// LoadMarks and SaveMarks read and write the console's marks (what
	// the human has read).
	LoadMarks() (Marks, error)
	SaveMarks(Marks) error
}

// Messages implements Pages.
func (b DaemonBackend) Messages(box string, limit int) ([]inbox.Listed, error) {
	bx, err := b.box(box)
	if err != nil {
		return nil, err
	}
	ms, errs := bx.Recent(limit)
	return ms, errors.Join(errs...)
}

// MessageIDs implements Pages.
func (b DaemonBackend) MessageIDs(box string) ([]string, error) {
	bx, err := b.box(box)
	if err != nil {
		return nil, err
	}
	return bx.IDs()
}

// Message implements Pages.
func (b DaemonBackend) Message(box, id string) (inbox.Message, error) {
	bx, err := b.box(box)
	if err != nil {
		return inbox.Message{}, err
	}
	m, _, err := bx.Get(id)
	return m, err
}

// box opens the inbox box.
func (b DaemonBackend) box(box string) (*inbox.Box, error) {
	store, err := b.Layout.OpenInboxes()
	if err != nil {
		return nil, fmt.Errorf("open the inboxes: %w", err)
	}
	bx, err := store.Box(box)
	if err != nil {
		return nil, fmt.Errorf("open the inbox of %s: %w", box, err)
	}
	return bx, nil
}

// Reply implements Pages.
func (b DaemonBackend) Reply(_ context.Context, agent, inReplyTo, body string) (string, error) {
	bx, err := b.box(agent)
	if err != nil {
		return "", fmt.Errorf("answer %s: %w", agent, err)
	}
	bx.Limit = b.BacklogLimit
	m, err := bx.Deliver(inbox.Message{From: team.Human, To: agent, Body: body, InReplyTo: inReplyTo})
	if err != nil {
		return "", fmt.Errorf("answer %s: %w", agent, err)
	}
	return m.ID, nil
}

// Cancel implements Pages.
func (b DaemonBackend) Cancel(_ context.Context, id string, interrupt bool) (control.CancelResult, error) {
	resp, err := control.Call(b.Layout, control.Request{Op: control.OpCancel, IDs: []string{id}, Interrupt: interrupt}, callTimeout)
	if err != nil {
		return control.CancelResult{}, fmt.Errorf("cancel %s: %w", id, err)
	}
	if len(resp.Cancels) != 1 {
		return control.CancelResult{}, fmt.Errorf("cancel %s: the daemon answered %d results", id, len(resp.Cancels))
	}
	return resp.Cancels[0], nil
}

// Reset implements Pages.
func (b DaemonBackend) Reset(_ context.Context, agent, reason string) (bool, error) {
	resp, err := control.Call(b.Layout, control.Request{Op: control.OpReset, Agent: agent, Reason: reason}, callTimeout)
	if err != nil {
		return false, fmt.Errorf("reset %s: %w", agent, err)
	}
	return len(resp.Pending) > 0, nil
}

// Approve implements Pages.
func (b DaemonBackend) Approve(_ context.Context, id string) (control.Response, error) {
	return b.review(control.Request{Op: control.OpApprove, Landing: id})
}

// Reject implements Pages.
func (b DaemonBackend) Reject(_ context.Context, id, reason string) (control.Response, error) {
	return b.review(control.Request{Op: control.OpReject, Landing: id, Reason: reason})
}

// review sends an approve or reject request; an answer without the
// request is an error.
func (b DaemonBackend) review(req control.Request) (control.Response, error) {
	resp, err := control.Call(b.Layout, req, callTimeout)
	if err != nil {
		return resp, fmt.Errorf("%s %s: %w", req.Op, req.Landing, err)
	}
	if resp.Landing == nil {
		return resp, fmt.Errorf("%s %s: the daemon's answer has no landing request", req.Op, req.Landing)
	}
	return resp, nil
}

// gitWait bounds the git commands of a page (a diff, the base).
const gitWait = 30 * time.Second

// repo opens the project's repository and resolves the team's base
// branch, as `batty diff` does.
func (b DaemonBackend) repo(ctx context.Context) (*workspaces.Repo, string, error) {
	repo, err := workspaces.Open(ctx, workspaces.Options{ProjectDir: b.Layout.Root(), WorktreesDir: b.Layout.WorktreesDir(), LockFile: b.Layout.GitLock(),
		Starter: b.Starter})
	if err != nil {
		return nil, "", err
	}
	base, err := repo.ResolveBase(ctx, b.Base)
	if err != nil {
		return nil, "", err
	}
	return repo, base, nil
}

// Landings implements Pages.
func (b DaemonBackend) Landings(ctx context.Context) ([]landing.Request, error) {
	ctx, cancel := context.WithTimeout(ctx, gitWait)
	defer cancel()
	repo, base, err := b.repo(ctx)
	if err != nil {
		return nil, fmt.Errorf("the merge queue: %w", err)
	}
	// Open starts nothing: it reads the queue's state file.
	q, err := landing.Open(landing.Options{Layout: b.Layout, TopLevel: repo.TopLevel(), WorktreesDir: b.Layout.WorktreesDir(), Base: base})
	if err != nil {
		return nil, fmt.Errorf("the merge queue: %w", err)
	}
	return q.List(), nil
}

// Diff implements Pages.
func (b DaemonBackend) Diff(ctx context.Context, agent string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, gitWait)
	defer cancel()
	repo, base, err := b.repo(ctx)
	if err != nil {
		return fmt.Errorf("diff of %s: %w", agent, err)
	}
	return repo.Diff(ctx, agent, base, w, false)
}

// EventsLog implements Pages.
func (b DaemonBackend) EventsLog() string { return b.Layout.EventsLog() }

// marksSub and marksName are where DaemonBackend keeps the marks: the
// state directory's console.json.
const (
	marksSub  = "state"
	marksName = "console.json"
)

// LoadMarks implements Pages: no file is no marks.
func (b DaemonBackend) LoadMarks() (Marks, error) {
	d, err := b.Layout.OpenDir(marksSub, false)
	if errors.Is(err, fs.ErrNotExist) {
		return Marks{}, nil
	}
	if err != nil {
		return Marks{}, fmt.Errorf("read the console's marks: %w", err)
	}
	defer d.Close()
	f, err := d.OpenFile(marksName, 0, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Marks{}, nil
	}
	if err != nil {
		return Marks{}, fmt.Errorf("read the console's marks: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMarksFile+1))
	if err != nil {
		return Marks{}, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	m, err := DecodeMarks(data)
	if err != nil {
		return Marks{}, fmt.Errorf("%s: %w (remove it: the marks start afresh)", f.Name(), err)
	}
	return m, nil
}

// SaveMarks implements Pages: an atomic write, mode 0600.
func (b DaemonBackend) SaveMarks(m Marks) error {
	d, err := b.Layout.OpenDir(marksSub, true)
	if err != nil {
		return fmt.Errorf("write the console's marks: %w", err)
	}
	defer d.Close()
	if err := d.WriteJSON(marksName, m, 0o600); err != nil {
		return fmt.Errorf("write the console's marks: %w", err)
	}
	return nil
}
