// Package traceid derives the W3C trace context of a message's journey
// from the message's id alone: the trace id from the id, each span's id
// from the id, the span's kind and the delivery's attempt. The daemon,
// which makes the spans after the fact from its event log, and the shim,
// which hands the turn's context to Codex with turn/start, compute the
// same ids without telling each other anything.
package traceid

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Span kinds of a message's journey (the name of each span, too).
const (
	Message = "message" // the whole journey: the root span
	Queued  = "queued"
	Slot    = "wait_slot"
	Turn    = "turn"
	Commit  = "commit"
	Reply   = "reply"
	Landing = "landing"
	Merge   = "merge"
	Verify  = "verify"
	Land    = "land"
)

// Trace returns the trace id of the journey of message id: the first 16
// bytes of a SHA-256 of it, never all zero. It is a pure function.
func Trace(id string) [16]byte {
	sum := sha256.Sum256([]byte("batty trace\x00" + id))
	var t [16]byte
	copy(t[:], sum[:])
	if t == ([16]byte{}) {
		t[15] = 1
	}
	return t
}

// Span returns the id of the span of kind (and n, the attempt or another
// ordinal; 0 when the kind has one span per journey; key a further name,
// such as a landing request's, "" when none) in the journey of message
// id, never all zero. It is a pure function.
func Span(id, kind string, n int, key string) [8]byte {
	sum := sha256.Sum256([]byte("batty span\x00" + id + "\x00" + kind + "\x00" + strconv.Itoa(n) + "\x00" + key))
	var s [8]byte
	copy(s[:], sum[:])
	if s == ([8]byte{}) {
		s[7] = 1
	}
	return s
}

// TurnParent is the W3C traceparent of attempt's turn of message id, as
// the shim gives it to Codex: its spans are children of batty's turn span
// (sampled). It is a pure function.
func TurnParent(id string, attempt int) string {
	t, s := Trace(id), Span(id, Turn, attempt, "")
	return "00-" + hex.EncodeToString(t[:]) + "-" + hex.EncodeToString(s[:]) + "-01"
}
