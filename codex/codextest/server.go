package codextest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/scriptedmodel"
)

// Server is a mock Responses API (POST /v1/responses, answered with
// server-sent events) for the real Codex CLI. It records every request it
// receives. All methods are safe for concurrent use.
type Server struct {
	// URL is the base URL codex needs as the provider's base_url: the
	// server's root plus "/v1" (http://127.0.0.1:PORT/v1).
	URL string

	srv  *httptest.Server
	ln   *switchListener // see Refuse and Accept
	quit chan struct{}   // closed when the server shuts down

	mu       sync.Mutex
	reqs     []Request
	changed  chan struct{} // closed and replaced when reqs or inflight change
	hook     func(Request) Reply
	def      *Reply
	inflight int // requests whose handler has not returned
	drops    int // streams still to cut (DropStreams)
}

// Request is one request the server received, decoded.
type Request struct {
	// Seq is the request's position, starting at 1.
	Seq int
	// Time is when the request's body had been read.
	Time time.Time
	// Method and Path are the HTTP method and URL path ("/v1/responses").
	Method, Path string
	// Header holds the request headers.
	Header http.Header
	// Kind is request_kind from the x-codex-turn-metadata header: "turn" or
	// "compaction" ("" when the header is absent).
	Kind string
	// ThreadID is the thread id from x-codex-turn-metadata, else from the
	// thread-id header.
	ThreadID string
	// Metadata is the decoded x-codex-turn-metadata header (nil if absent or
	// not JSON).
	Metadata map[string]any
	// Model is the body's "model".
	Model string
	// Body is the raw request body.
	Body []byte
	// Messages are the input items of type "message", in order.
	Messages []Message
	// InputTexts is Messages as "ROLE: TEXT" strings, in order.
	InputTexts []string
	// UserTexts holds the text of every user message in order, including
	// those codex adds itself (such as <environment_context>).
	UserTexts []string
	// ToolOutputs holds the output of every function_call_output and
	// custom_tool_call_output input item, in order.
	ToolOutputs []string
	// FollowUp reports whether a tool output comes after the last user
	// message: the request continues a turn after a tool call.
	FollowUp bool
}

// Message is one input message of a request.
type Message struct {
	// Role is "developer", "user", "assistant", ….
	Role string
	// Text is the concatenated text of the message's text parts.
	Text string
}

// LastUserText returns the text of the request's last user message, or ""
// when it has none. Directives are read from it.
func (r Request) LastUserText() string {
	if len(r.UserTexts) == 0 {
		return ""
	}
	return r.UserTexts[len(r.UserTexts)-1]
}

// NewServer starts a mock server on 127.0.0.1. It is shut down by
// t.Cleanup; streams still held open at that point (slow replies) are
// ended first, so shutting down never waits for them.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{quit: make(chan struct{}), changed: make(chan struct{})}
	ln, err := newSwitchListener()
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Listener.Close()
	s.srv.Listener = ln
	s.srv.Start()
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.close)
	return s
}

func (s *Server) close() {
	close(s.quit)
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns every request received so far (whatever its path), in
// arrival order. The slice is a copy; the Requests' fields share memory
// with the server's record and must be treated as read-only.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// WaitRequests blocks until at least n requests have arrived (counting
// from the server's start) and returns nil, or returns ctx.Err() when ctx
// ends first. A request counts once its body has been read, before the
// reply is written.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		have, ch := len(s.reqs), s.changed
		s.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("codextest: %d of %d requests: %w", have, n, ctx.Err())
		}
	}
}

// Handle installs a hook that decides the reply to every later request,
// replacing the directive rules; nil removes it. The hook runs on the
// server's goroutines and may call [Server.Scripted] to get the reply the
// rules would give.
func (s *Server) Handle(h func(Request) Reply) {
	s.mu.Lock()
	s.hook = h
	s.mu.Unlock()
}

// SetDefault makes r the reply to requests whose last user message has no
// directive (instead of the echo reply); nil restores the echo reply.
// Follow-ups to tool calls still get the SHELL_DONE reply.
func (s *Server) SetDefault(r *Reply) {
	s.mu.Lock()
	if r != nil {
		c := *r
		r = &c
	}
	s.def = r
	s.mu.Unlock()
}

// Scripted returns the reply the package's rules give to req: the
// SHELL_DONE reply to a tool follow-up, else the reply of the last
// directive in the last user message, else the server default (see
// [Server.SetDefault]), else [EchoReply].
func (s *Server) Scripted(req Request) Reply {
	if req.FollowUp {
		return ShellDoneReply(req)
	}
	name, arg, ok := findDirective(req.LastUserText())
	if ok {
		return directiveReply(req, name, arg)
	}
	s.mu.Lock()
	def := s.def
	s.mu.Unlock()
	if def != nil {
		return *def
	}
	return EchoReply(req)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := parseRequest(r, body)

	s.mu.Lock()
	req.Seq = len(s.reqs) + 1
	s.reqs = append(s.reqs, req)
	s.inflight++
	s.notifyLocked()
	hook := s.hook
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.notifyLocked()
		s.mu.Unlock()
	}()

	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		writeHTTPError(w, http.StatusNotFound, errorBody("not_found",
			"codextest: no route for "+r.Method+" "+r.URL.Path))
		return
	}
	var reply Reply
	if hook != nil {
		reply = hook(req)
	} else {
		reply = s.Scripted(req)
	}
	s.write(w, r, req, reply)
}

// notifyLocked wakes every waiter on s.changed; s.mu is held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitIdle blocks until no handler is running, or ctx ends.
func (s *Server) waitIdle(ctx context.Context) error {
	for {
		s.mu.Lock()
		n, ch := s.inflight, s.changed
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("codextest: %d handlers still running: %w", n, ctx.Err())
		}
	}
}

// parseRequest decodes what the mock needs from a request. A body that is
// not a JSON object leaves the decoded fields empty.
func parseRequest(r *http.Request, body []byte) Request {
	req := Request{
		Time:   time.Now(),
		Method: r.Method,
		Path:   r.URL.Path,
		Header: r.Header.Clone(),
		Body:   body,
	}
	if md := r.Header.Get("x-codex-turn-metadata"); md != "" {
		var m map[string]any
		if json.Unmarshal([]byte(md), &m) == nil {
			req.Metadata = m
			req.Kind, _ = m["request_kind"].(string)
			req.ThreadID, _ = m["thread_id"].(string)
		}
	}
	if req.ThreadID == "" {
		req.ThreadID = r.Header.Get("thread-id")
	}

	p := scriptedmodel.ParseRequest(body)
	req.Model = p.Model
	lastUser := 0 // tool outputs seen before the last user message
	for _, it := range p.Items {
		switch it.Kind {
		case scriptedmodel.ItemMessage:
			m := Message{Role: it.Role, Text: it.Text}
			req.Messages = append(req.Messages, m)
			req.InputTexts = append(req.InputTexts, m.Role+": "+m.Text)
			if m.Role == "user" {
				req.UserTexts = append(req.UserTexts, m.Text)
				lastUser = len(req.ToolOutputs)
			}
		case scriptedmodel.ItemOutput:
			req.ToolOutputs = append(req.ToolOutputs, it.Text)
		}
	}
	req.FollowUp = len(req.ToolOutputs) > lastUser
	return req
}
