package console

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/usage"
	"github.com/battyhq/batty/workspaces"
)

// Backend is what the console reads and does: the team's status, its
// pause and resume, a message from the human, an agent's transcript.
type Backend interface {
	// Status is the team's status (control.Status, the documented shape).
	Status(ctx context.Context) (*control.Status, error)
	// Pause and Resume pause and resume the team's dispatch, as `batty
	// pause` and `batty resume` do.
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	// Send queues body for agent as the human's message and returns its id.
	Send(ctx context.Context, agent, body string) (string, error)
	// Transcript is the path of agent's transcript (ptylog's file).
	Transcript(agent string) string
	// Usage is the usage ledger's entries since since (zero: all), as
	// `batty usage` reads them.
	Usage(ctx context.Context, since time.Time) (usage.Data, error)
	// Pages is what the other pages read and do.
	Pages
}

// callTimeout bounds one control request of DaemonBackend.
const callTimeout = 30 * time.Second

// DaemonBackend is the Backend of a running daemon: its control socket
// (the very requests of `batty status`, `pause`, `resume`) and its
// inboxes (`batty send` as the human).
type DaemonBackend struct {
	Layout project.Layout
	// BacklogLimit is the team's backlog_limit: a message to a full inbox
	// is refused.
	BacklogLimit int
	// Base is the team file's workspace.base ("": as `batty diff`
	// resolves it).
	Base string
	// Starter starts the git processes of the pages (a diff, the base):
	// in the daemon's process, a child subreaper, the daemon's starter
	// of its children, so that its reaper leaves them to their Wait; nil
	// starts them plainly.
	Starter workspaces.Starter
}

// Status implements Backend.
func (b DaemonBackend) Status(context.Context) (*control.Status, error) {
	resp, err := control.Call(b.Layout, control.Request{Op: control.OpStatus}, callTimeout)
	if err != nil {
		return nil, fmt.Errorf("ask the daemon for the status: %w", err)
	}
	if resp.Status == nil {
		return nil, errors.New("the daemon answered the status request without a status")
	}
	return resp.Status, nil
}

// Pause implements Backend.
func (b DaemonBackend) Pause(context.Context) error {
	if _, err := control.Call(b.Layout, control.Request{Op: control.OpPause, Reason: "paused from the console"}, callTimeout); err != nil {
		return fmt.Errorf("pause the team: %w", err)
	}
	return nil
}

// Resume implements Backend.
func (b DaemonBackend) Resume(context.Context) error {
	if _, err := control.Call(b.Layout, control.Request{Op: control.OpResume}, callTimeout); err != nil {
		return fmt.Errorf("resume the team: %w", err)
	}
	return nil
}

// Send implements Backend.
func (b DaemonBackend) Send(_ context.Context, agent, body string) (string, error) {
	store, err := b.Layout.OpenInboxes()
	if err != nil {
		return "", fmt.Errorf("send to %s: %w", agent, err)
	}
	box, err := store.Box(agent)
	if err != nil {
		return "", fmt.Errorf("send to %s: %w", agent, err)
	}
	box.Limit = b.BacklogLimit
	m, err := box.Deliver(inbox.Message{From: team.Human, To: agent, Body: body})
	if err != nil {
		return "", fmt.Errorf("send to %s: %w", agent, err)
	}
	return m.ID, nil
}

// Usage implements Backend.
func (b DaemonBackend) Usage(_ context.Context, since time.Time) (usage.Data, error) {
	d, err := usage.Read(b.Layout, since, time.Time{})
	if err != nil {
		return usage.Data{}, fmt.Errorf("read the usage ledger: %w", err)
	}
	return d, nil
}

// Transcript implements Backend.
func (b DaemonBackend) Transcript(agent string) string { return b.Layout.Transcript(agent) }
