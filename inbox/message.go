package inbox

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/textclip"
)

// Outcome statuses.
const (
	StatusCompleted   = "completed"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
	StatusTimedOut    = "timed_out"
	StatusRejected    = "rejected"
	// StatusCancelled: the user withdrew the message (`batty cancel`)
	// before it ran, or interrupted its turn to withdraw it.
	StatusCancelled = "cancelled"
)

// Limits enforced by Decode and Encode.
const (
	// MaxNameLen is the maximum length of an agent or role name.
	MaxNameLen = team.MaxNameLen
	// MaxIDLen is the maximum length of a message id.
	MaxIDLen = 128
	// MaxBodyLen is the maximum size of a message body, in bytes: room for
	// the longest body batty send accepts (codex.MaxBodyChars characters,
	// Codex's limit for one turn, at up to 4 bytes each in UTF-8).
	MaxBodyLen = 4 << 20
	// MaxInlineBody is the largest body a message to the human keeps in its
	// file; a longer one is kept whole in a text file of its box (see
	// Message.BodyFile), whatever its size.
	MaxInlineBody = 1 << 20
	// MaxReplyLen is the maximum size of Outcome.Reply kept in the message
	// file, in bytes. A longer reply is kept whole in a text file of the
	// box (see Outcome.ReplyFile).
	MaxReplyLen = 1 << 20
	// PreviewLen is how much of a text kept in a text file its message file
	// still holds (cut at a UTF-8 boundary).
	PreviewLen = 64 << 10
	// MaxErrorLen is the maximum size of Outcome.Error, in bytes.
	MaxErrorLen = 64 << 10
	// MaxShortLen is the maximum size of Outcome.Failure and
	// Outcome.ThreadID, in bytes.
	MaxShortLen = 256
	// MaxAttempt is the largest valid Message.Attempt.
	MaxAttempt = 1_000_000
	// MaxFileLen is the maximum size of an encoded message. Every valid
	// message encodes to less (even a body made only of characters JSON
	// escapes as \u00XX).
	MaxFileLen = 32 << 20
)

// Message is one message of an inbox, as stored in a file.
type Message struct {
	// ID identifies the message in its box and names its file. Deliver
	// assigns one when empty: "<UTC time>-<8 random hex digits>", e.g.
	// "20261121T125100.123456789Z-1f2e3d4c", which sorts by creation time
	// and is unique across processes. IDs match [A-Za-z0-9][A-Za-z0-9._-]*
	// and are at most MaxIDLen bytes long.
	ID string `json:"id"`
	// From is the sender: an agent name or "human".
	From string `json:"from"`
	// To is the recipient as the sender wrote it: an agent, "human", a role,
	// or "@" + role.
	To string `json:"to"`
	// Body is the text of the message; never empty, at most MaxBodyLen bytes.
	// When BodyFile is set it is the first PreviewLen bytes of the text.
	Body string `json:"body"`
	// BodyFile, set by Deliver for a message to the human longer than
	// MaxInlineBody, names the file holding the whole body, relative to the
	// box directory: always "texts/<id>.body". Read it with Box.FullBody.
	BodyFile string `json:"body_file,omitempty"`
	// BodySize is the size of the whole body in bytes when BodyFile is set.
	BodySize int64 `json:"body_size,omitempty"`
	// CreatedAt is when the message was sent, in UTC.
	CreatedAt time.Time `json:"created_at"`
	// InReplyTo is the id of the message this one answers, if any.
	InReplyTo string `json:"in_reply_to,omitempty"`
	// Attempt counts the deliveries started: Claim increments it.
	Attempt int `json:"attempt,omitempty"`
	// Transient, set by Box.RetryLater, records the failed attempts of the
	// message that may pass when it is tried again; nil when there were
	// none.
	Transient *TransientRetry `json:"transient,omitempty"`
	// Retry says why the last delivery ended without an outcome, as
	// RequeueFor was told ("quota", "auth"; "" when it was cut off). At
	// most MaxRetryLen bytes of [a-z_].
	Retry string `json:"retry,omitempty"`
	// Outcome is the recorded outcome; set on messages in done/.
	Outcome *Outcome `json:"outcome,omitempty"`
}

// TransientRetry is why a message waits to be tried again after attempts
// that failed in a way that may pass by itself, and when it may be.
type TransientRetry struct {
	// Failures counts the attempts that failed in a way that may pass by
	// itself (at least 1).
	Failures int `json:"failures"`
	// Note says why the next delivery is a retry, for its prompt header
	// (at most MaxErrorLen bytes). Box.Requeue clears it: a delivery that
	// was cut off is not the retry the note describes.
	Note string `json:"note,omitempty"`
	// LastError is the error of the last failed attempt (at most
	// MaxErrorLen bytes).
	LastError string `json:"last_error,omitempty"`
	// NotBefore is when the message may be tried again (its back-off);
	// zero means at once. Box.Requeue clears it.
	NotBefore time.Time `json:"not_before,omitzero"`
}

// Validate reports the first way r is not a valid retry record, or nil. It
// is a pure function.
func (r *TransientRetry) Validate() error {
	switch {
	case r.Failures < 1 || r.Failures > MaxAttempt:
		return fmt.Errorf("invalid retry failures %d", r.Failures)
	case len(r.Note) > MaxErrorLen || !utf8.ValidString(r.Note):
		return errors.New("retry note is too long or not valid UTF-8")
	case len(r.LastError) > MaxErrorLen || !utf8.ValidString(r.LastError):
		return errors.New("retry last_error is too long or not valid UTF-8")
	case !r.NotBefore.IsZero() && !validTime(r.NotBefore):
		return fmt.Errorf("invalid retry not_before %v", r.NotBefore)
	}
	return nil
}

// Outcome is the recorded result of delivering a message.
type Outcome struct {
	// Status is one of the Status constants.
	Status string `json:"status"`
	// Failure is the failure class when Status is not "completed".
	Failure string `json:"failure,omitempty"`
	// Error is a human-readable error, at most MaxErrorLen bytes.
	Error string `json:"error,omitempty"`
	// Reply is the agent's final answer, at most MaxReplyLen bytes. When
	// ReplyFile is set it is the first PreviewLen bytes of the answer.
	Reply string `json:"reply,omitempty"`
	// ReplyFile, set by Complete for an answer longer than MaxReplyLen,
	// names the file holding the whole answer, relative to the box
	// directory: always "texts/<id>.reply". Read it with Box.FullReply.
	ReplyFile string `json:"reply_file,omitempty"`
	// ReplySize is the size of the whole answer in bytes when ReplyFile is
	// set.
	ReplySize int64 `json:"reply_size,omitempty"`
	// Agent is the agent that ran the message.
	Agent string `json:"agent,omitempty"`
	// ThreadID is the Codex thread the message ran on.
	ThreadID string `json:"thread_id,omitempty"`
	// InputTokens and OutputTokens are the tokens the delivery used.
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// FinishedAt is when the delivery ended, in UTC.
	FinishedAt time.Time `json:"finished_at"`
}

// ValidBoxName reports whether s names a box: an agent name or "human"
// (^[a-z0-9][a-z0-9-]*$, at most MaxNameLen bytes), or a role queue, "@"
// followed by a role name. A valid box name is a single, non-hidden path
// element. It is a pure function, safe for concurrent use.
func ValidBoxName(s string) bool {
	if len(s) > 1 && s[0] == '@' {
		return team.ValidName(s[1:])
	}
	return team.ValidName(s)
}

// ValidID reports whether s can be a message id: it matches
// ^[A-Za-z0-9][A-Za-z0-9._-]*$ and is at most MaxIDLen bytes long, so that
// "<id>.json" is a single, non-hidden path element. It is a pure function,
// safe for concurrent use.
func ValidID(s string) bool {
	if s == "" || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

var validStatus = map[string]bool{
	StatusCompleted:   true,
	StatusFailed:      true,
	StatusInterrupted: true,
	StatusTimedOut:    true,
	StatusRejected:    true,
	StatusCancelled:   true,
}

// validTime reports whether t is set and encodes as RFC 3339 in UTC.
func validTime(t time.Time) bool {
	if t.IsZero() {
		return false
	}
	y := t.UTC().Year()
	return y >= 1 && y <= 9999
}

// MaxRetryLen bounds Message.Retry.
const MaxRetryLen = 32

// validRetry reports whether s may be a Message.Retry: empty, or up to
// MaxRetryLen bytes of lowercase ASCII letters and '_'.
func validRetry(s string) bool {
	if len(s) > MaxRetryLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}

// Validate reports the first way m is not a valid stored message, or nil.
// Decode accepts, and Encode writes, only valid messages. It is a pure
// function, safe for concurrent use.
func (m *Message) Validate() error {
	switch {
	case !ValidID(m.ID):
		return fmt.Errorf("invalid id %q", trim(m.ID))
	case !team.ValidName(m.From):
		return fmt.Errorf("invalid from %q", trim(m.From))
	case !ValidBoxName(m.To):
		return fmt.Errorf("invalid to %q", trim(m.To))
	case m.Body == "":
		return errors.New("empty body")
	case len(m.Body) > MaxBodyLen:
		return fmt.Errorf("body is %d bytes, more than %d", len(m.Body), MaxBodyLen)
	case !utf8.ValidString(m.Body):
		return errors.New("body is not valid UTF-8")
	case !validTime(m.CreatedAt):
		return fmt.Errorf("invalid created_at %v", m.CreatedAt)
	case m.InReplyTo != "" && !ValidID(m.InReplyTo):
		return fmt.Errorf("invalid in_reply_to %q", trim(m.InReplyTo))
	case m.Attempt < 0 || m.Attempt > MaxAttempt:
		return fmt.Errorf("invalid attempt %d", m.Attempt)
	case !validRetry(m.Retry):
		return fmt.Errorf("invalid retry %q", trim(m.Retry))
	}
	if err := validTextFile("body", m.BodyFile, textFile(m.ID, bodyExt), m.BodySize, len(m.Body)); err != nil {
		return err
	}
	if m.BodyFile != "" && m.To != team.Human {
		return fmt.Errorf("body_file in a message to %q: only messages to %s keep their body in a file", trim(m.To), team.Human)
	}
	if m.Transient != nil {
		if err := m.Transient.Validate(); err != nil {
			return err
		}
	}
	if m.Outcome != nil {
		if err := m.Outcome.Validate(); err != nil {
			return fmt.Errorf("outcome: %w", err)
		}
		if err := validTextFile("outcome reply", m.Outcome.ReplyFile, textFile(m.ID, replyExt), m.Outcome.ReplySize, len(m.Outcome.Reply)); err != nil {
			return err
		}
	}
	return nil
}

// validTextFile checks the file and size fields of a text kept in a text
// file: both unset, or the canonical file name with a size larger than the
// preview.
func validTextFile(what, file, canonical string, size int64, preview int) error {
	switch {
	case file == "" && size == 0:
		return nil
	case file == "":
		return fmt.Errorf("%s_size %d without a file", what, size)
	case file != canonical:
		return fmt.Errorf("%s file %q, want %q", what, trim(file), canonical)
	case size <= int64(preview):
		return fmt.Errorf("%s_size %d is not larger than its preview (%d bytes)", what, size, preview)
	}
	return nil
}

// Validate reports the first way o is not a valid outcome, or nil. It is a
// pure function, safe for concurrent use.
func (o *Outcome) Validate() error {
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"failure", o.Failure, MaxShortLen},
		{"error", o.Error, MaxErrorLen},
		{"reply", o.Reply, MaxReplyLen},
		{"thread_id", o.ThreadID, MaxShortLen},
	} {
		if len(f.v) > f.max {
			return fmt.Errorf("%s is %d bytes, more than %d", f.name, len(f.v), f.max)
		}
		if !utf8.ValidString(f.v) {
			return fmt.Errorf("%s is not valid UTF-8", f.name)
		}
	}
	switch {
	case !validStatus[o.Status]:
		return fmt.Errorf("invalid status %q", trim(o.Status))
	case o.Agent != "" && !team.ValidName(o.Agent):
		return fmt.Errorf("invalid agent %q", trim(o.Agent))
	case o.InputTokens < 0 || o.OutputTokens < 0:
		return fmt.Errorf("negative token count (%d in, %d out)", o.InputTokens, o.OutputTokens)
	case !validTime(o.FinishedAt):
		return fmt.Errorf("invalid finished_at %v", o.FinishedAt)
	}
	return nil
}

// trim shortens s for an error message.
func trim(s string) string {
	return textclip.Bytes(s, 64+len(textclip.Ellipsis), textclip.Ellipsis)
}

// normalize puts the times of m in UTC without a monotonic reading, so that
// equal instants compare equal with ==.
func normalize(m *Message) {
	m.CreatedAt = m.CreatedAt.UTC().Round(0)
	if m.Outcome != nil {
		m.Outcome.FinishedAt = m.Outcome.FinishedAt.UTC().Round(0)
	}
}

// Decode parses one stored message strictly: data must be a single JSON
// object of at most MaxFileLen bytes, in valid UTF-8 with no lone surrogate
// escape (which encoding/json would silently replace), with no unknown
// field, followed only by white space, and the message must be valid (see
// Message.Validate).
// Times are returned in UTC. Decode never panics; it is safe for concurrent
// use.
func Decode(data []byte) (Message, error) {
	if len(data) > MaxFileLen {
		return Message{}, fmt.Errorf("decode message: %d bytes, more than %d", len(data), MaxFileLen)
	}
	if err := validUnicode(data); err != nil {
		return Message{}, fmt.Errorf("decode message: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Message
	if err := dec.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("decode message: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Message{}, errors.New("decode message: data after the JSON object")
	}
	if err := m.Validate(); err != nil {
		return Message{}, fmt.Errorf("decode message: %w", err)
	}
	normalize(&m)
	return m, nil
}

// Encode returns the stored form of m: indented JSON followed by a newline.
// It fails, writing nothing, if m is not valid (see Message.Validate).
// Decode(Encode(m)) equals m with its times in UTC. It is safe for
// concurrent use.
func Encode(m Message) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("encode message %q: %w", trim(m.ID), err)
	}
	normalize(&m)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&m); err != nil {
		return nil, fmt.Errorf("encode message %s: %w", m.ID, err)
	}
	return buf.Bytes(), nil
}

// idClock makes the ids of one process strictly increasing.
var idClock struct {
	sync.Mutex
	last time.Time
}

// idLayout formats the time part of an id: fixed width, so that ids sort by
// time.
const idLayout = "20060102T150405.000000000Z"

// generatedIDRE is the form of the ids NewID generates.
var generatedIDRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{9}Z-[0-9a-f]{8}$`)

// GeneratedIDTime reports whether id is of the form NewID generates (no
// schedule run's, no reply's) and returns the time it encodes. It is a
// pure function.
func GeneratedIDTime(id string) (time.Time, bool) {
	if !generatedIDRE.MatchString(id) {
		return time.Time{}, false
	}
	t, err := time.Parse(idLayout, id[:len(idLayout)])
	return t, err == nil
}

// NewID returns a fresh message id and the time it encodes. Within one
// process the ids are strictly increasing; across processes they are unique
// with overwhelming probability (32 random bits on top of the nanosecond
// time) and Deliver never overwrites anyway. Safe for concurrent use.
func NewID() (string, time.Time) {
	now := time.Now().UTC().Round(0)
	idClock.Lock()
	if !now.After(idClock.last) {
		now = idClock.last.Add(time.Nanosecond)
	}
	idClock.last = now
	idClock.Unlock()
	var r [4]byte
	rand.Read(r[:])
	return now.Format(idLayout) + "-" + hex.EncodeToString(r[:]), now
}
