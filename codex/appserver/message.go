package appserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// Kind tells what a message from the app-server is.
type Kind int

const (
	// KindResponse answers one of our requests with a result.
	KindResponse Kind = iota + 1
	// KindErrorResponse answers one of our requests with an error.
	KindErrorResponse
	// KindNotification is a one-way message from the server.
	KindNotification
	// KindRequest is a request from the server that wants an answer
	// (an approval, for instance).
	KindRequest
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindResponse:
		return "response"
	case KindErrorResponse:
		return "error response"
	case KindNotification:
		return "notification"
	case KindRequest:
		return "request"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Message is one decoded JSON-RPC message read from the app-server. The
// app-server leaves "jsonrpc":"2.0" out of what it writes, so the field
// is not required.
type Message struct {
	// Kind is what the message is.
	Kind Kind
	// ID is the request id of a response, error response or server
	// request, as its raw JSON (a number or a string); nil otherwise.
	ID json.RawMessage
	// Method is the method of a notification or server request.
	Method string
	// Params is the params of a notification or server request (nil when
	// absent).
	Params json.RawMessage
	// Result is the result of a response.
	Result json.RawMessage
	// Error is the error of an error response.
	Error *RPCError
	// TraceParent is the W3C traceparent a request carries in its
	// envelope's "trace" ("" when none, or not a valid one).
	TraceParent string
}

// RPCError is a JSON-RPC error object: the app-server's answer to a
// request it refused.
type RPCError struct {
	// Code is the JSON-RPC error code; the app-server uses -32600 for
	// requests it rejects (an unknown thread, a missing login, an unknown
	// method) and -32602 for bad parameters.
	Code int `json:"code"`
	// Message is the server's explanation.
	Message string `json:"message"`
	// Data is the optional error data, raw.
	Data json.RawMessage `json:"data,omitempty"`
}

// Error implements error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}

// ErrNotMessage is wrapped by [DecodeMessage]'s errors for input that is
// not a JSON-RPC message.
var ErrNotMessage = errors.New("not a JSON-RPC message")

// wire is a message's fields as they come.
type wire struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	Trace  json.RawMessage `json:"trace"`
}

// DecodeMessage decodes one line the app-server wrote. It is a pure
// function that never panics: input that is not a JSON object, or an
// object that is neither a response, an error response, a notification
// nor a request, gives an error wrapping [ErrNotMessage]. An id must be a
// number or a string.
func DecodeMessage(line []byte) (Message, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Message{}, fmt.Errorf("%w: not a JSON object", ErrNotMessage)
	}
	var w wire
	if err := json.Unmarshal(line, &w); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrNotMessage, err)
	}
	id := nonNull(w.ID)
	if id != nil && !validID(id) {
		return Message{}, fmt.Errorf("%w: id %s is neither a number nor a string", ErrNotMessage, clipRaw(id))
	}
	switch {
	case w.Method != nil:
		if *w.Method == "" {
			return Message{}, fmt.Errorf("%w: empty method", ErrNotMessage)
		}
		m := Message{Kind: KindNotification, Method: *w.Method, Params: nonNull(w.Params)}
		if id != nil {
			m.Kind, m.ID, m.TraceParent = KindRequest, id, traceParentIn(w.Trace)
		}
		return m, nil
	case id == nil:
		return Message{}, fmt.Errorf("%w: no method and no id", ErrNotMessage)
	case nonNull(w.Error) != nil:
		var e RPCError
		if err := json.Unmarshal(w.Error, &e); err != nil {
			return Message{}, fmt.Errorf("%w: error object: %v", ErrNotMessage, err)
		}
		return Message{Kind: KindErrorResponse, ID: id, Error: &e}, nil
	case w.Result != nil:
		return Message{Kind: KindResponse, ID: id, Result: w.Result}, nil
	}
	return Message{}, fmt.Errorf("%w: id %s without result or error", ErrNotMessage, clipRaw(id))
}

// traceParentRE is the form of a W3C traceparent (version 00).
var traceParentRE = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// traceParentIn is the traceparent of a request's "trace" (raw JSON, nil
// when absent): "" when there is none or it is not a valid one. Pure.
func traceParentIn(raw json.RawMessage) string {
	var t struct {
		TraceParent string `json:"traceparent"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &t) != nil || !traceParentRE.MatchString(t.TraceParent) {
		return ""
	}
	return t.TraceParent
}

// nonNull returns raw, or nil when it is absent or JSON null.
func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// validID reports whether raw is a JSON number or string.
func validID(raw json.RawMessage) bool {
	switch raw[0] {
	case '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		return json.Unmarshal(raw, &n) == nil
	}
	return false
}

// idKey is the map key for a request id: its JSON text, so the number 7
// and the string "7" stay apart.
func idKey(raw json.RawMessage) string { return string(raw) }

// clipRaw bounds raw JSON quoted in an error.
func clipRaw(raw json.RawMessage) string {
	const max = 64
	if len(raw) <= max {
		return string(raw)
	}
	return string(raw[:max]) + "…"
}
