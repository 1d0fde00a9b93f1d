// Package appserver is a small typed JSON-RPC client for `codex
// app-server`, the Codex CLI's long-lived stdio server: one process keeps
// threads loaded between turns, reports failures with typed error codes
// and sends rate-limit snapshots.
//
// [Start] runs the server in its own process group; [Client.Initialize]
// opens the session; [Client.StartThread] and [Client.ResumeThread] load a
// thread; [Client.RunTurn] sends the user's text and reads the turn's
// notifications until turn/completed; [Client.Interrupt] stops a running
// turn; [Client.RateLimits] reads the account's limits. [Client.Close]
// kills the whole process group. The protocol, the calls' shapes and
// measurements are described in docs/codex-app-server.md.
package appserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/textclip"
)

// DefaultMaxLine is the longest line [Start] accepts from the server when
// [Options.MaxLine] is 0.
const DefaultMaxLine = 16 << 20

// cancelGrace bounds how long RunTurn, its context ended, still waits
// for turn/start's answer and for turn/interrupt's.
const cancelGrace = 5 * time.Second

// stderrKeep is how much of the server's stderr the client keeps (its
// end) for error messages.
const stderrKeep = 8 << 10

// ErrClosed is wrapped by the errors of calls made on, or cut short by, a
// client whose connection has ended (Close, the process's exit, a
// protocol error).
var ErrClosed = errors.New("app-server connection closed")

// ErrLineTooLong is wrapped by the client's error when the server writes a
// line longer than [Options.MaxLine]: the client refuses it and ends.
var ErrLineTooLong = errors.New("app-server line too long")

// ClosedError says why a client's connection ended. [Client.Err] returns
// it, and the error of every call made on, or cut short by, the ended
// connection wraps it, so that a caller learns the cause from the error
// that woke it, never from asking the client afterwards.
type ClosedError struct {
	// Reason is what ended the connection, for the message; it wraps
	// [ErrClosed] or [ErrLineTooLong].
	Reason error
	// ByPeer is true when the server's end ended the connection: its
	// output closed or failed, or a write to it failed, while the client
	// had not ended it (not Close, not the context, not a refused line).
	// For a client over a shared app-server's broker ([Dial]) that means
	// the shared process died (the broker then ends every connection) or
	// the broker is going.
	ByPeer bool
	// Died is how the server's process ended when ByPeer and the client
	// runs the process ([Start]): its exit status or the signal that
	// killed it. Nil otherwise.
	Died *os.ProcessState
}

// Error returns the reason's message.
func (e *ClosedError) Error() string { return e.Reason.Error() }

// Unwrap returns the reason.
func (e *ClosedError) Unwrap() error { return e.Reason }

// Options says how to run the app-server.
type Options struct {
	// Bin is the codex executable (required).
	Bin string
	// Args are extra arguments placed after "app-server" (e.g. "-c",
	// "key=value"). No secret belongs here: argv is visible to every user.
	Args []string
	// Env is the server's whole environment (e.g. with CODEX_HOME); nil
	// means this process's environment.
	Env []string
	// Cwd is the server's working directory; "" means this process's.
	Cwd string
	// MaxLine bounds one line from the server in bytes; 0 means
	// [DefaultMaxLine]. A longer line ends the client with an error
	// wrapping [ErrLineTooLong] without being held in memory.
	MaxLine int
	// ClientName and ClientVersion identify the client in initialize
	// ("batty" and "0" when empty).
	ClientName, ClientVersion string
	// OnRateLimits, when set, is called with every account/rateLimits/updated
	// snapshot, from the client's reader goroutine: it must return quickly
	// and must not call the client.
	OnRateLimits func(RateLimits)
	// OnNotification, when set, is called with every notification the
	// server sends, before the running turns get it, from the client's
	// reader goroutine: it must return quickly and must not call the
	// client (a broker forwards them, see package appshare).
	OnNotification func(Notification)
	// Starter, when set, starts the server process (Start) and is told
	// once the client has reaped it (Release): a child subreaper passes
	// its *reap.Reaper so that its orphan scans never reap the server
	// behind the client's back. Nil starts it with exec.Cmd.Start.
	Starter reap.Starter
}

// Client is a connection to one `codex app-server` process. Its methods
// are safe for concurrent use; several turns may run at once on different
// threads. The client owns one reader goroutine, which ends when the
// connection does.
type Client struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	maxLine int
	opts    Options

	writeMu sync.Mutex // serializes writes to stdin

	mu       sync.Mutex
	nextID   int64
	pending  map[string]chan Message // by idKey
	subs     map[*subscription]struct{}
	active   map[string]string // thread id -> turn id of the running RunTurn
	closeErr *ClosedError      // why the connection ended (nil while open)
	stderr   tailBuffer

	done       chan struct{} // closed when the connection has ended
	exited     chan struct{} // closed when the process has been reaped
	readerDone chan struct{} // closed when the reader goroutine has ended
	closeOnce  sync.Once
	killOnce   sync.Once
	stopCtx    func() bool // stops the ctx watcher; set once, under mu
}

// Start runs `Bin app-server Args...` in its own process group with its
// stdin and stdout as the JSON-RPC channel, and returns a client that
// reads its output. The process is started through [Options.Starter] when
// set, and released to it once reaped. ctx bounds the client's life: when ctx ends the client
// is closed as by [Client.Close]. Start does not initialize the session
// (see [Client.Initialize]).
func Start(ctx context.Context, opts Options) (*Client, error) {
	if opts.Bin == "" {
		return nil, errors.New("appserver: Options.Bin is empty")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("appserver: start: %w", err)
	}
	cmd := exec.Command(opts.Bin, append([]string{"app-server"}, opts.Args...)...)
	cmd.Env = opts.Env
	cmd.Dir = opts.Cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c := blankClient(opts)
	c.cmd = cmd
	// Bound the wait for stdout and stderr to close once codex is dead,
	// in case something outside its group still holds them.
	cmd.WaitDelay = 2 * time.Second
	cmd.Stderr = &c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("appserver: stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("appserver: stdout pipe: %w", err)
	}
	c.stdin = stdin
	if opts.Starter != nil {
		err = opts.Starter.Start(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("appserver: start %s: %w", opts.Bin, err)
	}
	stop := context.AfterFunc(ctx, func() {
		c.shutdown(&ClosedError{Reason: fmt.Errorf("%w: %w", ErrClosed, context.Cause(ctx))})
	})
	c.mu.Lock()
	c.stopCtx = stop
	c.mu.Unlock()
	go c.read(stdout)
	return c, nil
}

// Dial returns a client over conn, a connection to a server that speaks
// the app-server's protocol without being this client's child (the shared
// app-server's broker, package appshare): the client owns conn and closes
// it with the connection. There is no process: Pid is 0, Died is nil, and
// Close closes conn. ctx bounds the client's life as in [Start]. Dial does
// not initialize the session (see [Client.Initialize]).
func Dial(ctx context.Context, conn io.ReadWriteCloser, opts Options) (*Client, error) {
	if err := ctx.Err(); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("appserver: dial: %w", err)
	}
	c := newClient(conn, conn, opts)
	stop := context.AfterFunc(ctx, func() {
		c.shutdown(&ClosedError{Reason: fmt.Errorf("%w: %w", ErrClosed, context.Cause(ctx))})
	})
	c.mu.Lock()
	c.stopCtx = stop
	c.mu.Unlock()
	return c, nil
}

// blankClient is a client with its state made and no streams yet.
func blankClient(opts Options) *Client {
	maxLine := opts.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &Client{
		maxLine:    maxLine,
		opts:       opts,
		pending:    map[string]chan Message{},
		subs:       map[*subscription]struct{}{},
		active:     map[string]string{},
		done:       make(chan struct{}),
		exited:     make(chan struct{}),
		readerDone: make(chan struct{}),
	}
}

// newClient makes a client over the given streams without a process (for
// tests with a fake peer).
func newClient(r io.Reader, w io.WriteCloser, opts Options) *Client {
	c := blankClient(opts)
	c.stdin = w
	close(c.exited)
	go c.read(r)
	return c
}

// Pid returns the server's process id, which is also its process group
// id (0 for a client without a process).
func (c *Client) Pid() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Done returns a channel closed once the connection has ended. It is
// closed before any call cut short by the end returns.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended, a *[ClosedError] (wrapping
// [ErrClosed] or [ErrLineTooLong]), or nil while it is open. When the
// server ended by itself the message ends with its exit status and the
// end of its stderr.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeErr == nil {
		return nil
	}
	return c.closeErr
}

// Died returns how the server's process ended when it ended by itself —
// its output closed while the client had not closed the connection (not
// Close, not the context, not a refused line): its exit status or the
// signal that killed it. It returns nil while the connection is open, and
// when the client ended it.
func (c *Client) Died() *os.ProcessState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeErr == nil {
		return nil
	}
	return c.closeErr.Died
}

// Close ends the connection: it kills the server's whole process group,
// waits for the process to be reaped and the reader goroutine to end,
// and fails calls still waiting with [ErrClosed]. It is idempotent and
// returns nil.
func (c *Client) Close() error {
	c.shutdown(&ClosedError{Reason: fmt.Errorf("%w: closed by the client", ErrClosed)})
	<-c.exited
	<-c.readerDone
	return nil
}

// shutdown records why the connection ends (the first reason wins),
// closes Done, wakes every waiting call (each then returns an error
// wrapping reason) and kills the process group. It does not wait.
func (c *Client) shutdown(reason *ClosedError) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closeErr = reason
		pending := c.pending
		c.pending = map[string]chan Message{}
		stop := c.stopCtx
		c.mu.Unlock()
		if stop != nil {
			// nil only when the watcher itself fired before Start set it.
			stop()
		}
		// Done first: whoever a woken call tells sees the end already.
		close(c.done)
		for _, ch := range pending {
			close(ch)
		}
		c.kill()
	})
}

// kill closes the server's stdin, kills its whole process group (codex's
// own children, the commands it runs, share it) and reaps it in the
// background, closing c.exited. It is idempotent and does not wait.
func (c *Client) kill() {
	c.killOnce.Do(func() {
		_ = c.stdin.Close()
		if c.cmd == nil {
			return
		}
		// ESRCH means everything is gone already.
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		go func() {
			_ = c.cmd.Wait()
			if c.opts.Starter != nil {
				c.opts.Starter.Release(c.cmd.Process.Pid)
			}
			close(c.exited)
		}()
	})
}

// exitNote describes how the process ended, for an error message; the
// process has been reaped.
func (c *Client) exitNote() string {
	if c.cmd == nil || c.cmd.ProcessState == nil {
		return ""
	}
	return " (" + c.cmd.ProcessState.String() + ")"
}

// read is the client's reader goroutine: it splits stdout into bounded
// lines and dispatches each until stdout ends or a line is refused, then
// shuts the connection down.
func (c *Client) read(r io.Reader) {
	defer close(c.readerDone)
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readLine(br, c.maxLine)
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		msg, derr := DecodeMessage(line)
		if derr != nil {
			// A stray line (a log message on stdout) is not fatal.
			continue
		}
		c.dispatch(msg)
	}
	// Kill and reap first, so the reason can tell how the server ended
	// and what it last wrote to stderr. A reason recorded meanwhile
	// (Close, the context) wins in shutdown.
	c.kill()
	<-c.exited
	if errors.Is(err, ErrLineTooLong) {
		c.shutdown(&ClosedError{Reason: fmt.Errorf("appserver: %w", err)})
		return
	}
	end := &ClosedError{ByPeer: true}
	if c.cmd != nil {
		end.Died = c.cmd.ProcessState
	}
	if errors.Is(err, io.EOF) {
		end.Reason = fmt.Errorf("%w: the server closed its output%s%s", ErrClosed, c.exitNote(), c.stderrNote())
	} else {
		end.Reason = fmt.Errorf("%w: read: %w%s%s", ErrClosed, err, c.exitNote(), c.stderrNote())
	}
	c.shutdown(end)
}

// readLine returns the next line without its newline. A line longer than
// max is read to its end and thrown away, and an error wrapping
// [ErrLineTooLong] is returned; at most max bytes are held at once.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > max+1 { // +1: the newline
			n := len(buf) + len(chunk)
			for errors.Is(err, bufio.ErrBufferFull) {
				chunk, err = br.ReadSlice('\n')
				n += len(chunk)
			}
			return nil, fmt.Errorf("%w: more than %d bytes (%d read)", ErrLineTooLong, max, n)
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(buf, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return buf, nil
		default:
			return nil, err
		}
	}
}

// dispatch routes one message: a response to its waiting call, a
// notification to the running turns, a server request to a refusal.
func (c *Client) dispatch(msg Message) {
	switch msg.Kind {
	case KindResponse, KindErrorResponse:
		c.mu.Lock()
		ch, ok := c.pending[idKey(msg.ID)]
		delete(c.pending, idKey(msg.ID))
		c.mu.Unlock()
		if ok {
			ch <- msg // buffered, one slot
		}
	case KindRequest:
		// batty answers no approvals or questions (approval policy
		// "never"): refuse, so the server does not wait forever.
		_ = c.write(map[string]any{"id": msg.ID, "error": map[string]any{
			"code": -32601, "message": "batty does not handle " + msg.Method}})
	case KindNotification:
		if c.opts.OnNotification != nil {
			c.opts.OnNotification(Notification{Method: msg.Method, Params: msg.Params})
		}
		if msg.Method == NotifyRateLimits && c.opts.OnRateLimits != nil {
			if p := decodeTurnParams(msg.Params); p.RateLimits != nil {
				c.opts.OnRateLimits(*p.RateLimits)
			}
		}
		c.mu.Lock()
		subs := make([]*subscription, 0, len(c.subs))
		for s := range c.subs {
			subs = append(subs, s)
		}
		c.mu.Unlock()
		n := Notification{Method: msg.Method, Params: msg.Params}
		for _, s := range subs {
			s.push(n)
		}
	}
}

// errWrite marks the error of a write to the connection that failed (as
// opposed to a message that could not be encoded).
var errWrite = errors.New("appserver: write")

// write sends one message as a line. A failed write's error wraps
// errWrite.
func (c *Client) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("appserver: encode: %w", err)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%w: %w", errWrite, err)
	}
	return nil
}

// endedUnder returns why the connection ended under a write that failed
// with werr. A write fails when the server's end is gone (it died, or its
// broker ended the connection) or the client is closing: the reader is
// then about to see the output end and record the cause, and endedUnder
// waits for that, at most cancelGrace. A connection still open after
// that is ended by the write's failure, the server's end taken as gone.
func (c *Client) endedUnder(werr error) error {
	t := time.NewTimer(cancelGrace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.shutdown(&ClosedError{Reason: fmt.Errorf("%w: %w", ErrClosed, werr), ByPeer: true})
	}
	return c.Err()
}

// Call sends a request and waits for its answer, decoding the result into
// result (unless nil). A refusal comes back as an error wrapping
// *[RPCError]. It returns an error wrapping ctx.Err() when ctx ends first
// (the request stays sent) and one wrapping [ErrClosed] when the
// connection ends first.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	ch := make(chan Message, 1)
	c.mu.Lock()
	if c.closeErr != nil {
		err := c.closeErr
		c.mu.Unlock()
		return fmt.Errorf("appserver: %s: %w", method, err)
	}
	c.nextID++
	id := json.RawMessage(strconv.FormatInt(c.nextID, 10))
	c.pending[idKey(id)] = ch
	c.mu.Unlock()
	req := map[string]any{"id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	if tp := traceParentOf(ctx); tp != "" {
		// The request's W3C trace context: the server's spans of it are
		// children of the caller's.
		req["trace"] = map[string]string{"traceparent": tp}
	}
	if err := c.write(req); err != nil {
		c.forget(id)
		if errors.Is(err, errWrite) {
			// The connection ended under the write: say why it did.
			return fmt.Errorf("appserver: %s: %w", method, c.endedUnder(err))
		}
		return fmt.Errorf("appserver: %s: %w", method, err)
	}
	select {
	case msg, ok := <-ch:
		if !ok {
			return fmt.Errorf("appserver: %s: %w", method, c.Err())
		}
		if msg.Kind == KindErrorResponse {
			return fmt.Errorf("appserver: %s: %w", method, msg.Error)
		}
		if result != nil {
			if err := json.Unmarshal(msg.Result, result); err != nil {
				return fmt.Errorf("appserver: %s: decode result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		return fmt.Errorf("appserver: %s: %w", method, ctx.Err())
	}
}

// traceKey carries a request's traceparent (WithTraceParent).
type traceKey struct{}

// WithTraceParent returns ctx with the W3C traceparent that every request
// made with it carries (the envelope's "trace"), so that the app-server's
// spans of a turn are children of the caller's span. "" carries none.
func WithTraceParent(ctx context.Context, traceparent string) context.Context {
	return context.WithValue(ctx, traceKey{}, traceparent)
}

// traceParentOf is the traceparent WithTraceParent put in ctx ("" when
// none).
func traceParentOf(ctx context.Context) string {
	tp, _ := ctx.Value(traceKey{}).(string)
	return tp
}

// forget drops a pending call.
func (c *Client) forget(id json.RawMessage) {
	c.mu.Lock()
	delete(c.pending, idKey(id))
	c.mu.Unlock()
}

// notify sends a notification.
func (c *Client) notify(method string) error {
	if err := c.write(map[string]any{"method": method}); err != nil {
		return fmt.Errorf("appserver: %s: %w", method, err)
	}
	return nil
}

// Initialize opens the session: the initialize request, then the
// initialized notification. It must be called once, before anything else.
func (c *Client) Initialize(ctx context.Context) (InitializeResult, error) {
	name, version := c.opts.ClientName, c.opts.ClientVersion
	if name == "" {
		name = "batty"
	}
	if version == "" {
		version = "0"
	}
	var res InitializeResult
	params := map[string]any{
		"clientInfo":   map[string]any{"name": name, "title": nil, "version": version},
		"capabilities": nil,
	}
	if err := c.Call(ctx, MethodInitialize, params, &res); err != nil {
		return InitializeResult{}, err
	}
	if err := c.notify(MethodInitialized); err != nil {
		return InitializeResult{}, err
	}
	return res, nil
}

// StartThread starts a new thread with opts (thread/start). The thread
// stays loaded in the server until the connection ends.
func (c *Client) StartThread(ctx context.Context, opts ThreadOptions) (Thread, error) {
	var res threadResponse
	if err := c.Call(ctx, MethodThreadStart, opts.params(), &res); err != nil {
		return Thread{}, err
	}
	return res.thread()
}

// ResumeThread loads the thread with the given id from CODEX_HOME
// (thread/resume), applying opts over its saved settings. An unknown or
// malformed id is an error wrapping *[RPCError].
func (c *Client) ResumeThread(ctx context.Context, threadID string, opts ThreadOptions) (Thread, error) {
	p := opts.params()
	p["threadId"] = threadID
	delete(p, "ephemeral")
	// Ask for no history: batty needs none, and the full form is
	// deprecated for paginated threads.
	p["excludeTurns"] = true
	var res threadResponse
	if err := c.Call(ctx, MethodThreadResume, p, &res); err != nil {
		return Thread{}, err
	}
	return res.thread()
}

// ForkThread starts a new thread that carries the history of thread
// threadID (thread/fork), applying opts over its saved settings; the new
// thread is the loaded one. A thread Codex's store holds archived is
// refused (an error wrapping *[RPCError]: unarchive it first).
func (c *Client) ForkThread(ctx context.Context, threadID string, opts ThreadOptions) (Thread, error) {
	p := opts.params()
	p["threadId"] = threadID
	p["excludeTurns"] = true
	var res threadResponse
	if err := c.Call(ctx, MethodThreadFork, p, &res); err != nil {
		return Thread{}, err
	}
	return res.thread()
}

// ArchiveThread archives thread threadID in Codex's own store
// (thread/archive), or unarchives it (thread/unarchive) when archive is
// false. A thread not in the state it leaves is refused (an error
// wrapping *[RPCError]).
func (c *Client) ArchiveThread(ctx context.Context, threadID string, archive bool) error {
	m := MethodThreadUnarchive
	if archive {
		m = MethodThreadArchive
	}
	return c.Call(ctx, m, map[string]any{"threadId": threadID}, nil)
}

// thread converts the response, checking it names a thread.
func (r threadResponse) thread() (Thread, error) {
	if r.Thread.ID == "" {
		return Thread{}, errors.New("appserver: thread response without a thread id")
	}
	return Thread{
		ID: r.Thread.ID, Model: r.Model, ModelProvider: r.ModelProvider,
		Cwd: r.Cwd, Path: r.Thread.Path, Turns: len(r.Thread.Turns),
	}, nil
}

// RateLimits reads the account's rate limits (account/rateLimits/read).
// The server answers only for a ChatGPT login; with an API key or a
// custom provider it refuses with an *[RPCError] (code -32600).
func (c *Client) RateLimits(ctx context.Context) (RateLimits, error) {
	var res struct {
		RateLimits RateLimits `json:"rateLimits"`
	}
	if err := c.Call(ctx, MethodRateLimitsRead, nil, &res); err != nil {
		return RateLimits{}, err
	}
	return res.RateLimits, nil
}

// Interrupt stops the turn [Client.RunTurn] is running on threadID
// (turn/interrupt). That RunTurn then returns with status
// [StatusInterrupted]. It returns an error when no turn of this client
// runs on the thread.
func (c *Client) Interrupt(ctx context.Context, threadID string) error {
	c.mu.Lock()
	turnID := c.active[threadID]
	c.mu.Unlock()
	if turnID == "" {
		return fmt.Errorf("appserver: interrupt: no turn running on thread %s", threadID)
	}
	return c.interruptTurn(ctx, threadID, turnID)
}

// interruptTurn sends turn/interrupt.
func (c *Client) interruptTurn(ctx context.Context, threadID, turnID string) error {
	return c.Call(ctx, MethodTurnInterrupt, map[string]any{"threadId": threadID, "turnId": turnID}, nil)
}

// reserve claims threadID for one turn (RunTurn, or Compact's own turn)
// and subscribes to the notifications before the request that starts it
// is sent; release gives both back. It fails, naming method, while
// another turn holds the thread.
func (c *Client) reserve(threadID, method string) (*subscription, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, busy := c.active[threadID]; busy {
		return nil, nil, fmt.Errorf("appserver: %s: a turn already runs on thread %s", method, threadID)
	}
	c.active[threadID] = "" // reserved; the turn's id comes with the response
	sub := newSubscription()
	c.subs[sub] = struct{}{}
	return sub, func() {
		c.mu.Lock()
		delete(c.subs, sub)
		delete(c.active, threadID)
		c.mu.Unlock()
	}, nil
}

// RunTurn starts a turn on a loaded thread with text as the user's input
// (turn/start) and blocks until turn/completed, calling on (when not nil)
// with every notification of the thread in order, on the calling
// goroutine. A failed or interrupted turn is not an error: its
// [TurnResult] says so (see [TurnResult.Err]). The error is for a refused
// turn/start (*[RPCError]), a connection that ended ([ErrClosed]) or ctx
// ending; in that last case RunTurn first asks the server to interrupt
// the turn (waiting at most 5 s). One RunTurn at a time per thread.
func (c *Client) RunTurn(ctx context.Context, threadID, text string, on func(Notification)) (TurnResult, error) {
	return c.RunTurnWith(ctx, threadID, text, TurnOptions{}, on)
}

// TurnOptions are a turn's settings beyond its input.
type TurnOptions struct {
	// OutputSchema, when set, is the JSON Schema the turn's final message
	// must match (turn/start's outputSchema, codex exec --output-schema).
	OutputSchema json.RawMessage
}

// RunTurnWith is [Client.RunTurn] with the turn's settings o.
func (c *Client) RunTurnWith(ctx context.Context, threadID, text string, o TurnOptions, on func(Notification)) (TurnResult, error) {
	res := TurnResult{ThreadID: threadID}
	sub, release, err := c.reserve(threadID, "turn/start")
	if err != nil {
		return res, err
	}
	defer release()

	start := time.Now()
	var started struct {
		Turn turnPayload `json:"turn"`
	}
	params := map[string]any{
		"threadId": threadID,
		"input":    []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}},
	}
	if len(o.OutputSchema) > 0 {
		params["outputSchema"] = o.OutputSchema
	}
	// If ctx ends while turn/start is in flight, the turn may start all
	// the same: keep waiting a little for its id, so it can be
	// interrupted rather than left running.
	startCtx, stopStart := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStart()
	stopWatch := context.AfterFunc(ctx, func() {
		t := time.NewTimer(cancelGrace)
		defer t.Stop()
		select {
		case <-t.C:
			stopStart()
		case <-startCtx.Done():
		}
	})
	err = c.Call(startCtx, MethodTurnStart, params, &started)
	stopWatch()
	stopStart() // ends the AfterFunc's wait, if it runs
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("appserver: turn/start: %w (%v)", ctx.Err(), err)
		}
		return res, err
	}
	if started.Turn.ID == "" {
		return res, errors.New("appserver: turn/start: response without a turn id")
	}
	res.TurnID = started.Turn.ID
	c.mu.Lock()
	c.active[threadID] = res.TurnID
	c.mu.Unlock()

	for {
		n, err := sub.next(ctx, c.done)
		if err != nil {
			if ctx.Err() != nil {
				ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
				ierr := c.interruptTurn(ictx, threadID, res.TurnID)
				cancel()
				if ierr != nil {
					return res, fmt.Errorf("appserver: turn %s: %w (interrupt: %v)", res.TurnID, ctx.Err(), ierr)
				}
				return res, fmt.Errorf("appserver: turn %s: %w", res.TurnID, ctx.Err())
			}
			return res, fmt.Errorf("appserver: turn %s: %w", res.TurnID, c.Err())
		}
		p := decodeTurnParams(n.Params)
		if p.ThreadID != "" && p.ThreadID != threadID {
			continue // another thread's
		}
		if id := p.turnIDOf(); id != "" && id != res.TurnID {
			continue // an earlier turn's stragglers
		}
		if p.ThreadID == "" && n.Method != NotifyRateLimits {
			continue // server-wide news batty does not follow
		}
		if on != nil {
			on(n)
		}
		switch n.Method {
		case NotifyItemCompleted:
			if p.Item != nil && p.Item.Type == "agentMessage" {
				res.FinalMessage = p.Item.Text
			}
		case NotifyTokenUsage:
			res.Usage = p.TokenUsage
		case NotifyRateLimits:
			res.RateLimits = p.RateLimits
		case NotifyError:
			if p.WillRetry && p.Error != nil {
				res.Warnings = append(res.Warnings, p.Error.decode())
			}
		case NotifyTurnCompleted:
			if p.Turn == nil {
				return res, fmt.Errorf("appserver: turn %s: turn/completed without a turn", res.TurnID)
			}
			res.Status = p.Turn.Status
			res.Error = p.Turn.Error.decode()
			for _, it := range p.Turn.Items {
				if it.Type == "agentMessage" {
					res.FinalMessage = it.Text
				}
			}
			res.Duration = time.Since(start)
			return res, nil
		}
	}
}

// Compact compacts the history of a loaded thread (thread/compact/start)
// and blocks until the server has done it: the server answers the call at
// once and runs the compaction as a turn of its own (turn/started, a
// contextCompaction item, turn/completed), whose end ends the wait. The
// result is that turn's: [StatusCompleted] once the history is compacted,
// with the thread's token usage after it. The error is for a refused call
// (*[RPCError]), a connection that ended ([ErrClosed]) or ctx ending, in
// which case Compact first interrupts the compaction (waiting at most
// 5 s). It cannot run while a turn runs on the thread.
func (c *Client) Compact(ctx context.Context, threadID string) (TurnResult, error) {
	res := TurnResult{ThreadID: threadID}
	sub, release, err := c.reserve(threadID, MethodThreadCompact)
	if err != nil {
		return res, err
	}
	defer release()
	start := time.Now()
	if err := c.Call(ctx, MethodThreadCompact, map[string]any{"threadId": threadID}, nil); err != nil {
		return res, err
	}
	for {
		n, err := sub.next(ctx, c.done)
		if err != nil {
			if ctx.Err() == nil {
				return res, fmt.Errorf("appserver: %s: %w", MethodThreadCompact, c.Err())
			}
			if res.TurnID != "" {
				ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
				ierr := c.interruptTurn(ictx, threadID, res.TurnID)
				cancel()
				if ierr != nil {
					return res, fmt.Errorf("appserver: %s: %w (interrupt: %v)", MethodThreadCompact, ctx.Err(), ierr)
				}
			}
			return res, fmt.Errorf("appserver: %s: %w", MethodThreadCompact, ctx.Err())
		}
		p := decodeTurnParams(n.Params)
		if p.ThreadID != threadID {
			continue
		}
		if id := p.turnIDOf(); id != "" && res.TurnID != "" && id != res.TurnID {
			continue
		}
		switch n.Method {
		case NotifyTurnStarted:
			if p.Turn != nil {
				res.TurnID = p.Turn.ID
			}
		case NotifyTokenUsage:
			res.Usage = p.TokenUsage
		case NotifyTurnCompleted:
			if p.Turn == nil {
				return res, fmt.Errorf("appserver: %s: turn/completed without a turn", MethodThreadCompact)
			}
			res.TurnID, res.Status, res.Error = p.Turn.ID, p.Turn.Status, p.Turn.Error.decode()
			res.Duration = time.Since(start)
			return res, nil
		}
	}
}

// stderrNote returns the end of the server's stderr for an error message
// ("" when it wrote none).
func (c *Client) stderrNote() string {
	s := c.stderr.String()
	if s == "" {
		return ""
	}
	return "; stderr: " + textclip.Bytes(s, 2048, textclip.Truncated)
}

// subscription queues notifications for one RunTurn without ever blocking
// the reader goroutine.
type subscription struct {
	mu    sync.Mutex
	queue []Notification
	wake  chan struct{} // one slot: something was queued
}

func newSubscription() *subscription {
	return &subscription{wake: make(chan struct{}, 1)}
}

// push queues n; it never blocks.
func (s *subscription) push(n Notification) {
	s.mu.Lock()
	s.queue = append(s.queue, n)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// next returns the oldest queued notification, waiting for one until ctx
// or done ends. Notifications queued before done closed are still
// returned first.
func (s *subscription) next(ctx context.Context, done <-chan struct{}) (Notification, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			n := s.queue[0]
			s.queue[0] = Notification{}
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return n, nil
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return Notification{}, ctx.Err()
		case <-done:
			s.mu.Lock()
			empty := len(s.queue) == 0
			s.mu.Unlock()
			if empty {
				return Notification{}, ErrClosed
			}
		}
	}
}

// tailBuffer keeps the last stderrKeep bytes written to it; safe for
// concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

// Write keeps the end of what was written.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - stderrKeep; over > 0 {
		t.buf = append(t.buf[:0:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns what is kept.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Stderr returns the end (at most 8 KiB) of what the server wrote to
// stderr.
func (c *Client) Stderr() string { return c.stderr.String() }
