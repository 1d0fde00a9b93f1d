package scriptedmodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// ShellTool is the function tool the script calls to run a command: the
// Codex CLI's exec_command, with JSON arguments {"cmd": "<bash command>",
// "yield_time_ms": 30000}, as a real model calls it: codex runs the
// command in the user's login shell (whose profile may reset PATH, which
// is why the script runs batty by the absolute path its instructions
// give) and waits up to 30 s for it before answering.
const ShellTool = "exec_command"

// Server is the stand-in model: an HTTP server on 127.0.0.1 answering
// POST /v1/responses with the steps of its script as server-sent events.
// It owns its listener and its goroutines; Close ends them. Its methods are
// safe for concurrent use.
type Server struct {
	// URL is the base URL for the Codex CLI's model provider:
	// http://127.0.0.1:PORT/v1.
	URL string

	script  Script
	observe func(Step)
	pace    time.Duration
	quit    chan struct{} // closed by Close: paced answers stop waiting
	srv     *http.Server
	served  chan struct{} // closed when Serve returned
	seq     atomic.Int64
	closeMu sync.Mutex
	closed  bool
	serrMu  sync.Mutex
	serr    error // what Serve returned, unless it was the Close
}

// Options adjusts a Server.
type Options struct {
	// Observe, when set, is called with every step the server answers,
	// once its Pace has passed and before the step is written, on the
	// request's goroutine: it must not block for long.
	Observe func(Step)
	// Pace is how long each answer "thinks" (after response.created, before
	// the step) so that a person can follow the team; 0 answers at once.
	Pace time.Duration
}

// Start listens on 127.0.0.1 on a free port and serves script until
// Close. It returns once the server accepts connections.
func Start(script Script, opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("scripted model: listen on 127.0.0.1: %w", err)
	}
	s := &Server{
		URL:     "http://" + ln.Addr().String() + "/v1",
		script:  script,
		observe: opts.Observe,
		pace:    opts.Pace,
		quit:    make(chan struct{}),
		served:  make(chan struct{}),
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.serrMu.Lock()
			s.serr = err
			s.serrMu.Unlock()
		}
	}()
	return s, nil
}

// Close stops the server: it stops accepting, ends the pauses of paced
// answers, lets requests in progress finish for up to a second (they end
// within milliseconds) and then closes every connection. It returns once
// the serving goroutine has ended, with the error that ended serving
// early, if any. It is idempotent.
func (s *Server) Close() error {
	s.closeMu.Lock()
	already := s.closed
	s.closed = true
	s.closeMu.Unlock()
	if !already {
		close(s.quit)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := s.srv.Shutdown(ctx); err != nil {
			_ = s.srv.Close()
		}
		cancel()
	}
	<-s.served
	s.serrMu.Lock()
	defer s.serrMu.Unlock()
	if s.serr != nil {
		return fmt.Errorf("scripted model: serve: %w", s.serr)
	}
	return nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		writeError(w, http.StatusNotFound, "not_found", "scripted model: no route for "+r.Method+" "+r.URL.Path)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "scripted model: read request: "+err.Error())
		return
	}
	req := ParseRequest(body)
	step := s.script.Next(req)
	writeStep(r.Context(), w, fmt.Sprintf("%d", s.seq.Add(1)), req.Model, len(body), step, s.think)
}

// think waits for the server's pace, then reports step to the observer. It
// reports false when the client left or the server is closing.
func (s *Server) think(ctx context.Context, step Step) bool {
	if s.pace > 0 {
		t := time.NewTimer(s.pace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		case <-s.quit:
			return false
		}
	}
	if s.observe != nil {
		s.observe(step)
	}
	return true
}

// writeError writes an OpenAI-style JSON error.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeStep streams step as one model response, the way the Responses API
// does: response.created; for a command, a function_call item calling
// ShellTool (output_item.added, then output_item.done with the
// arguments); for a final answer, an assistant message item (added, text
// deltas, done); then response.completed with the output and token usage
// (input: the request's size / 4; output: the produced text's size / 4 + 1).
// Between response.created and the step it calls think, and ends the
// stream there when think reports false. Write errors (a client that
// left) are ignored: the client is gone.
func writeStep(ctx context.Context, w http.ResponseWriter, id, model string, reqSize int, step Step, think func(context.Context, Step) bool) {
	w.Header().Set("x-request-id", "req_scripted_"+id)
	st := StartStream(w, "scripted_"+id, model, reqSize)
	if !think(ctx, step) {
		return
	}
	if step.Shell != "" {
		args, _ := json.Marshal(map[string]any{"cmd": step.Shell, "yield_time_ms": 30000})
		st.FunctionCall(ShellTool, string(args))
	} else {
		st.Message(step.Text)
	}
	st.Complete(0, 0)
}
