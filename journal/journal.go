// Package journal is the turn journal: one line per finished turn of an
// agent — the message it was given (from, id, time, text), its reply, its
// tokens, the thread it ran on, the commit it made and, when the shim
// reports them, the commands it ran with their output and the files it
// changed — appended by the daemon as the turn ends, in
// <state>/journal/<agent>.jsonl.
//
// It is what `batty threads show` and `batty search` read, and what the
// search index (package searchindex) is built from: the index is a cache of
// the journal, the journal is the record. A file is append-only, written
// with O_APPEND in one write per line and fsynced before Append returns,
// 0600, never through a symbolic link; a line cut short by a crash is ended
// before the next one is written, and the reader skips and reports it.
// Lines are read back as outside input (Decode is strict and fuzzed).
//
// A line is keyed as the usage ledger keys a turn (usage.TurnKey: agent,
// message, attempt), so a journal line and a ledger line of one turn name
// each other.
package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/textclip"
	"github.com/battyhq/batty/usage"
)

// Version is the version of a journal line ("v").
const Version = 1

// Bounds of a line. A text is clipped to its bound with
// textclip.Truncated; a longer line than MaxLine is corrupt.
const (
	// MaxText bounds the message's text and the reply.
	MaxText = 256 << 10
	// MaxCommands bounds the commands kept of one turn (the last are
	// kept), MaxOutput the output kept of one command (its tail), and
	// MaxFiles the changed files named.
	MaxCommands = 200
	MaxOutput   = 8 << 10
	MaxFiles    = 1000
	// MaxLine bounds one line: the texts above, the commands, the files
	// and the fields around them.
	MaxLine = 2*MaxText + MaxCommands*(MaxOutput+maxField) + MaxFiles*maxField + 64<<10
	// maxField bounds a name, an id, a status, a path or a command line.
	maxField = 4 << 10
)

// Tokens is what a turn used, as Codex reported it (see usage.Tokens).
type Tokens = usage.Tokens

// Message is the message a turn ran: who sent it, its id, when, to whom
// and its text.
type Message struct {
	ID        string    `json:"id"`
	From      string    `json:"from"`
	To        string    `json:"to,omitempty"`
	InReplyTo string    `json:"in_reply_to,omitempty"`
	At        time.Time `json:"at"`
	Body      string    `json:"body"`
}

// Command is one command the agent ran in the turn, with the tail of its
// output and its exit code (nil when it did not end: killed, interrupted).
type Command struct {
	Command  string `json:"command"`
	Output   string `json:"output,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
}

// Commit is the commit the turn's edits made on the agent's branch.
type Commit struct {
	SHA    string `json:"sha"`
	Branch string `json:"branch,omitempty"`
}

// Record is one finished turn: one line of an agent's journal.
type Record struct {
	V int `json:"v"`
	// Key is usage.TurnKey(Agent, Message.ID, Attempt).
	Key string `json:"key"`
	// At is when the turn ended, in UTC; Started when it began (At less
	// its duration).
	At      time.Time `json:"at"`
	Started time.Time `json:"started"`
	Agent   string    `json:"agent"`
	Role    string    `json:"role,omitempty"`
	Account string    `json:"account,omitempty"` // the account's name, else its CODEX_HOME; "" for the environment's
	Host    string    `json:"host,omitempty"`    // "" for this machine
	// Thread is the Codex thread the turn ran on ("" when none started).
	Thread  string  `json:"thread_id,omitempty"`
	Attempt int     `json:"attempt"`
	Message Message `json:"message"`
	// Status is the turn's status (completed, failed, interrupted,
	// timed_out), Failure its failure kind and Error its message.
	Status  string `json:"status"`
	Failure string `json:"failure,omitempty"`
	Error   string `json:"error,omitempty"`
	// Again says the message goes back to the queue to run again: its
	// next turn is another line.
	Again  bool   `json:"again,omitempty"`
	Reply  string `json:"reply,omitempty"`
	Tokens Tokens `json:"tokens"`
	// ThreadTokens is the thread's running total after the turn.
	ThreadTokens Tokens    `json:"thread_tokens,omitzero"`
	DurationMS   int64     `json:"duration_ms"`
	Commands     []Command `json:"commands,omitempty"`
	Files        []string  `json:"files,omitempty"`
	Commit       *Commit   `json:"commit,omitempty"`
}

// Turn is what the daemon has of a turn when it ends: the input of Build.
type Turn struct {
	Agent, Role, Account, Host string
	// Message is the message in flight (its Attempt is the delivery's).
	Message inbox.Message
	// Finished is the turn's end as the shim's client handed it over
	// (the whole reply joined).
	Finished protocol.TurnFinished
	// At is when the turn's end reached the daemon.
	At time.Time
	// Again: the message goes back to the queue.
	Again bool
	// Commit is the commit the turn's edits made ("" SHA: none), Branch
	// the agent's branch.
	Commit Commit
	// Commands are the commands the turn ran (protocol.TurnFinished.Commands),
	// Files the paths its commit changed (workspaces.Committed.Files).
	Commands []Command
	Files    []string
}

// Build makes the journal line of turn t: every text clipped to its bound,
// the key the ledger's. It is a pure function.
func Build(t Turn) Record {
	f := t.Finished
	at := t.At.UTC()
	r := Record{
		V: Version, Key: usage.TurnKey(t.Agent, t.Message.ID, t.Message.Attempt),
		At: at, Started: at.Add(-max(f.Duration, 0)),
		Agent: t.Agent, Role: t.Role, Account: clipField(t.Account), Host: t.Host,
		Thread: clipField(f.ThreadID), Attempt: max(t.Message.Attempt, 0),
		Message: Message{ID: t.Message.ID, From: clipField(t.Message.From), To: clipField(t.Message.To), InReplyTo: t.Message.InReplyTo,
			At: t.Message.CreatedAt.UTC(), Body: clipText(t.Message.Body)},
		Status: clipField(string(f.Status)), Failure: clipField(string(f.Failure)), Error: clipText(f.Error), Again: t.Again,
		Reply:        clipText(f.Reply),
		Tokens:       Tokens{Input: max(f.Usage.Input, 0), CachedInput: max(f.Usage.CachedInput, 0), Output: max(f.Usage.Output, 0), ReasoningOutput: max(f.Usage.ReasoningOutput, 0)},
		ThreadTokens: Tokens{Input: max(f.Thread.Input, 0), CachedInput: max(f.Thread.CachedInput, 0), Output: max(f.Thread.Output, 0), ReasoningOutput: max(f.Thread.ReasoningOutput, 0)},
		DurationMS:   max(f.Duration.Milliseconds(), 0),
	}
	if t.Commit.SHA != "" {
		r.Commit = &Commit{SHA: clipField(t.Commit.SHA), Branch: clipField(t.Commit.Branch)}
	}
	cmds := t.Commands
	if len(cmds) > MaxCommands {
		cmds = cmds[len(cmds)-MaxCommands:]
	}
	for _, c := range cmds {
		r.Commands = append(r.Commands, Command{Command: clipCommand(c.Command), Output: textclip.Tail(strings.ToValidUTF8(c.Output, "\uFFFD"), MaxOutput, "… "), ExitCode: c.ExitCode})
	}
	for i, p := range t.Files {
		if i == MaxFiles {
			break
		}
		r.Files = append(r.Files, clipField(p))
	}
	return r
}

// clipText makes s valid UTF-8 and clips it to MaxText bytes.
func clipText(s string) string {
	return textclip.Bytes(strings.ToValidUTF8(s, "\uFFFD"), MaxText, textclip.Truncated)
}

// clipCommand makes a command line valid UTF-8 clipped to maxField bytes
// (a command keeps its line breaks).
func clipCommand(s string) string {
	return textclip.Bytes(strings.ToValidUTF8(s, "\uFFFD"), maxField, textclip.Truncated)
}

// clipField makes s a clean field: valid UTF-8, a control character
// shown as U+FFFD, at most maxField bytes.
func clipField(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return textclip.Bytes(s, maxField, textclip.Truncated)
}

// Encode is r's line, without its line break.
func Encode(r Record) ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("journal line of turn %s: %w", r.Key, err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode journal line of turn %s: %w", r.Key, err)
	}
	if len(b) > MaxLine {
		return nil, fmt.Errorf("journal line of turn %s: %d bytes, over %d", r.Key, len(b), MaxLine)
	}
	return b, nil
}

// Decode reads one line of a journal (without its line break). It is
// strict — unknown fields, a wrong version, a missing key, agent, message
// or time, a key that is not the turn's, negative counts, text that is
// not UTF-8 or over its bound are errors — and never panics.
func Decode(line []byte) (Record, error) {
	if len(line) > MaxLine {
		return Record{}, fmt.Errorf("decode journal line: %d bytes, over %d", len(line), MaxLine)
	}
	var r Record
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("decode journal line: %w", err)
	}
	if dec.More() {
		return Record{}, errors.New("decode journal line: data after the record")
	}
	if err := r.validate(); err != nil {
		return Record{}, fmt.Errorf("decode journal line: %w", err)
	}
	return r, nil
}

// agentName is an agent's name as a journal's file names it (inbox's box
// names without the role queues).
var agentName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// ValidAgent reports whether name may name an agent's journal.
func ValidAgent(name string) bool {
	return len(name) <= inbox.MaxNameLen && agentName.MatchString(name)
}

func (r Record) validate() error {
	switch {
	case r.V != Version:
		return fmt.Errorf("version %d, want %d", r.V, Version)
	case r.At.IsZero():
		return errors.New("no time")
	case !ValidAgent(r.Agent):
		return fmt.Errorf("agent %.40q is not an agent's name", r.Agent)
	case r.Message.ID == "":
		return errors.New("no message id")
	case r.Attempt < 0 || r.DurationMS < 0:
		return errors.New("negative attempt or duration")
	case r.Key != usage.TurnKey(r.Agent, r.Message.ID, r.Attempt):
		return fmt.Errorf("key %.80q is not the turn's", r.Key)
	case r.Tokens.Input < 0 || r.Tokens.CachedInput < 0 || r.Tokens.Output < 0 || r.Tokens.ReasoningOutput < 0,
		r.ThreadTokens.Input < 0 || r.ThreadTokens.CachedInput < 0 || r.ThreadTokens.Output < 0 || r.ThreadTokens.ReasoningOutput < 0:
		return errors.New("negative token count")
	case len(r.Commands) > MaxCommands:
		return fmt.Errorf("%d commands, over %d", len(r.Commands), MaxCommands)
	case len(r.Files) > MaxFiles:
		return fmt.Errorf("%d files, over %d", len(r.Files), MaxFiles)
	}
	if err := fields(maxField, r.Key, r.Agent, r.Role, r.Account, r.Host, r.Thread, r.Message.ID, r.Message.From, r.Message.To,
		r.Message.InReplyTo, r.Status, r.Failure); err != nil {
		return err
	}
	if r.Commit != nil {
		if err := fields(maxField, r.Commit.SHA, r.Commit.Branch); err != nil {
			return err
		}
	}
	if err := texts(MaxText, r.Message.Body, r.Reply, r.Error); err != nil {
		return err
	}
	for _, c := range r.Commands {
		if err := texts(maxField, c.Command); err != nil {
			return err
		}
		if err := texts(MaxOutput, c.Output); err != nil {
			return err
		}
	}
	return fields(maxField, r.Files...)
}

// fields checks names and ids: UTF-8, at most max bytes, no control
// character.
func fields(max int, vs ...string) error {
	for _, v := range vs {
		if len(v) > max {
			return fmt.Errorf("field of %d bytes, over %d", len(v), max)
		}
		if !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("field %.40q is not clean text", v)
		}
	}
	return nil
}

// texts checks texts: UTF-8, at most max bytes (control characters are
// kept: they are escaped where shown).
func texts(max int, vs ...string) error {
	for _, v := range vs {
		if len(v) > max {
			return fmt.Errorf("text of %d bytes, over %d", len(v), max)
		}
		if !utf8.ValidString(v) {
			return errors.New("text is not UTF-8")
		}
	}
	return nil
}
