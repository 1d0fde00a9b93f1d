package console

import (
	"context"
	"io"
	"time"

	"github.com/battyhq/batty/blame"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/searchindex"
	"github.com/battyhq/batty/threads"
	"github.com/battyhq/batty/usage"
)

// Team is the one way the console sees and changes the team: the daemon
// that serves the console implements it in its own process
// (orchestrator.ConsoleTeam), calling its own handlers — never its control
// socket. Every action is the human's, as the commands that do the same
// (batty pause, resume, cancel, reset, approve, reject, send, diff,
// usage); the console decides first who may ask (Decide, the peer's
// judge).
type Team interface {
	// Status is the team's status (control.Status, the documented shape),
	// its merge queue's requests included.
	Status(ctx context.Context) (*control.Status, error)
	// Pause and Resume pause and resume the team's dispatch, as `batty
	// pause` and `batty resume` do.
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
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

	// Send queues body for agent as the human's message and returns its id.
	Send(ctx context.Context, agent, body string) (string, error)
	// Reply queues body for agent as the human's answer to message
	// inReplyTo (a message with in_reply_to) and returns its id.
	Reply(ctx context.Context, agent, inReplyTo, body string) (string, error)
	// Messages returns at most limit of box's messages (an agent's or
	// the human's), newest first; the files that cannot be read are left
	// out and named in the error, the others returned all the same.
	Messages(box string, limit int) ([]inbox.Listed, error)
	// MessageIDs returns the ids of box's messages, read from their names
	// only.
	MessageIDs(box string) ([]string, error)
	// Message returns the message id of box.
	Message(box, id string) (inbox.Message, error)
	// LoadMarks and SaveMarks read and write what the human has read
	// (ReadMarks, WriteMarks).
	LoadMarks() (Marks, error)
	SaveMarks(Marks) error

	// Landings returns the merge queue's requests whole, as the daemon's
	// queue holds them (verify's output, conflicts, the rejection: what a
	// landing's page adds to its status).
	Landings(ctx context.Context) ([]landing.Request, error)
	// Diff writes what agent's branch adds to the base branch (`batty
	// diff`), git's bytes as they are.
	Diff(ctx context.Context, agent string, w io.Writer) error
	// Transcript is the path of agent's transcript (ptylog's file), and
	// EventsLog the team's event log ("" for none): the console follows
	// their tails.
	Transcript(agent string) string
	EventsLog() string
	// Usage is the usage ledger's entries since since (zero: all), as
	// `batty usage` reads them.
	Usage(ctx context.Context, since time.Time) (usage.Data, error)

	// Threads is every thread of every agent, current or left (`batty
	// threads --all`); Conversation is thread's turns (`batty threads
	// show`, the thread named by its id or a prefix), secrets redacted.
	Threads(ctx context.Context) ([]threads.Thread, error)
	Conversation(ctx context.Context, thread string) (threads.Show, error)
	// Search is `batty search` (its snippets not yet redacted).
	Search(ctx context.Context, q searchindex.Query) (searchindex.Result, error)
	// Blame is `batty blame` of path's lines rg (zero: all) on rev, the
	// team's base branch when "" (messages' texts not yet redacted).
	Blame(ctx context.Context, rev, path string, rg blame.Range) (blame.Result, error)
	// Show is `batty show` of what, a message id or a commit, landings
	// on the team's base branch (messages' texts not yet redacted).
	Show(ctx context.Context, what string) (blame.Shown, error)
}
