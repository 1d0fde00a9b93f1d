// Package usage is the team's usage ledger: every finished turn's tokens,
// appended durably by the daemon under the state directory
// (<state>/usage/turns-NNNNNN.jsonl), and the accounts' rate-limit windows
// over time (<state>/usage/limits-NNNNNN.jsonl); the reader of both, which
// takes their lines as outside input (a corrupt or cut line is skipped and
// reported); and the queries over them (Summarize, Sum, LimitHistory,
// Series), pure functions of the entries, a query and an injected clock.
//
// A turn is in the ledger at most once: its entry is keyed by the agent,
// the message and the delivery's attempt (TurnKey), the writer skips a key
// it holds already and the reader counts the first line of a key only. The
// daemon appends a turn's entry (fsynced) as soon as the turn's end reaches
// it, before the turn's outcome is recorded: a daemon killed in between
// runs the message again as a new attempt, a new turn with tokens of its
// own, and the first is counted once.
package usage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Version is the version of the ledger's lines ("v").
const Version = 1

// MaxLine bounds one line of the ledger: a longer line is corrupt.
const MaxLine = 16 << 10

// maxField bounds a text field of an entry (a name, a model, a key).
const maxField = 512

// Tokens is what a turn used, as Codex reports it: Input counts every
// input token, CachedInput included (CachedInput is the part of Input
// served from the prompt cache); Output counts every output token,
// ReasoningOutput included.
type Tokens struct {
	Input           int64 `json:"input"`
	CachedInput     int64 `json:"cached_input"`
	Output          int64 `json:"output"`
	ReasoningOutput int64 `json:"reasoning_output"`
}

// Total is Input + Output (Codex's total_tokens), saturating.
func (t Tokens) Total() int64 { return addSat(t.Input, t.Output) }

// Add returns t + o, each count saturating at math.MaxInt64.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{Input: addSat(t.Input, o.Input), CachedInput: addSat(t.CachedInput, o.CachedInput),
		Output: addSat(t.Output, o.Output), ReasoningOutput: addSat(t.ReasoningOutput, o.ReasoningOutput)}
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Turn is one finished turn: one line of the ledger's turns files.
type Turn struct {
	V int `json:"v"`
	// Key identifies the turn: TurnKey(Agent, Message, Attempt).
	Key string `json:"key"`
	// At is when the turn ended, in UTC.
	At      time.Time `json:"at"`
	Agent   string    `json:"agent"`
	Role    string    `json:"role"`
	Account string    `json:"account,omitempty"` // the account's name, else its CODEX_HOME; "" for the environment's
	Host    string    `json:"host,omitempty"`    // "" for this machine
	Model   string    `json:"model,omitempty"`   // as team.yaml sets it; "" for Codex's default
	Runtime string    `json:"runtime,omitempty"` // exec or app-server, as team.yaml sets it
	Message string    `json:"message_id"`
	Attempt int       `json:"attempt"`
	Tokens  Tokens    `json:"tokens"`
	// Thread is the Codex thread the turn ran on ("" when none), and
	// ThreadTokens its running total after the turn, as Codex reported it:
	// a daemon killed before it saved the agent's state takes the running
	// total from here, so the next turn's usage (the difference) does not
	// count this turn's tokens again.
	Thread       string `json:"thread_id,omitempty"`
	ThreadTokens Tokens `json:"thread_tokens,omitzero"`
	// DurationMS is the turn's time in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Status is the turn's status (completed, failed, interrupted,
	// timed_out), Failure its failure kind ("" for none).
	Status  string `json:"status"`
	Failure string `json:"failure,omitempty"`
	// Again says the message goes back to the queue to run again (a
	// retry, a usage limit, a context handoff): its next turn is another
	// entry.
	Again bool `json:"again,omitempty"`
}

// TurnKey is the key of the turn of message's delivery attempt on agent.
func TurnKey(agent, message string, attempt int) string {
	return agent + "/" + message + "/" + strconv.Itoa(attempt)
}

// LimitSample is one rate-limit window of an account as Codex reported it
// at At: one line of the ledger's limits files.
type LimitSample struct {
	V       int       `json:"v"`
	At      time.Time `json:"at"`
	Account string    `json:"account,omitempty"`
	Agent   string    `json:"agent"` // the agent whose Codex reported it
	// Window is the window's name (primary, secondary).
	Window        string    `json:"window"`
	UsedPct       float64   `json:"used_pct"`
	WindowMinutes int64     `json:"window_minutes,omitempty"`
	ResetsAt      time.Time `json:"resets_at,omitzero"`
}

// DecodeTurn reads one line of a turns file (without its line break). It
// is strict — unknown fields, a missing key, time or agent, negative
// counts, text that is not UTF-8 or too long are errors — and never
// panics: the ledger is read back as outside input.
func DecodeTurn(line []byte) (Turn, error) {
	var t Turn
	if err := decodeStrict(line, &t); err != nil {
		return Turn{}, fmt.Errorf("decode turn: %w", err)
	}
	if err := t.validate(); err != nil {
		return Turn{}, fmt.Errorf("decode turn: %w", err)
	}
	return t, nil
}

// DecodeLimit reads one line of a limits file, as strictly as DecodeTurn.
func DecodeLimit(line []byte) (LimitSample, error) {
	var s LimitSample
	if err := decodeStrict(line, &s); err != nil {
		return LimitSample{}, fmt.Errorf("decode limit: %w", err)
	}
	if err := s.validate(); err != nil {
		return LimitSample{}, fmt.Errorf("decode limit: %w", err)
	}
	return s, nil
}

func decodeStrict(line []byte, v any) error {
	if len(line) > MaxLine {
		return fmt.Errorf("line of %d bytes, over %d", len(line), MaxLine)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the entry")
	}
	return nil
}

func (t Turn) validate() error {
	switch {
	case t.V != Version:
		return fmt.Errorf("version %d, want %d", t.V, Version)
	case t.At.IsZero():
		return errors.New("no time")
	case t.Attempt < 0:
		return fmt.Errorf("negative attempt %d", t.Attempt)
	case t.DurationMS < 0:
		return fmt.Errorf("negative duration %d", t.DurationMS)
	case t.Tokens.Input < 0 || t.Tokens.CachedInput < 0 || t.Tokens.Output < 0 || t.Tokens.ReasoningOutput < 0:
		return errors.New("negative token count")
	}
	for _, f := range []struct{ name, v string }{{"key", t.Key}, {"agent", t.Agent}, {"message_id", t.Message}} {
		if f.v == "" {
			return fmt.Errorf("no %s", f.name)
		}
	}
	return texts(t.Key, t.Agent, t.Role, t.Account, t.Host, t.Model, t.Runtime, t.Message, t.Thread, t.Status, t.Failure)
}

func (s LimitSample) validate() error {
	switch {
	case s.V != Version:
		return fmt.Errorf("version %d, want %d", s.V, Version)
	case s.At.IsZero():
		return errors.New("no time")
	case s.Window == "":
		return errors.New("no window")
	case math.IsNaN(s.UsedPct) || s.UsedPct < 0 || s.UsedPct > 1000:
		return fmt.Errorf("used percent %v out of range", s.UsedPct)
	case s.WindowMinutes < 0:
		return fmt.Errorf("negative window %d", s.WindowMinutes)
	}
	return texts(s.Account, s.Agent, s.Window)
}

// texts checks the text fields of an entry: valid UTF-8, at most maxField
// bytes, no control character.
func texts(vs ...string) error {
	for _, v := range vs {
		if len(v) > maxField {
			return fmt.Errorf("field of %d bytes, over %d", len(v), maxField)
		}
		if !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("field %.40q is not clean text", v)
		}
	}
	return nil
}
