// Package appshare shares one `codex app-server` process among the shims
// of the agents placed on one Codex account (one CODEX_HOME) on this
// machine: the per-account app-server runtime (docs/architecture.md,
// "One app-server per account").
//
// A [Broker], owned by the daemon, runs the process, listens on a unix
// socket in the team's state directory, lets in only the peers
// [Options.Allow] accepts (the daemon's own shims, by their pid; any other
// peer gets one JSON-RPC error line and is closed) and gives
// each connection a session of its own over the process's one JSON-RPC
// channel: request ids are the connection's (the broker's client numbers
// its own upstream), a thread belongs to the connection that started or
// resumed it, the thread's notifications go to that connection only, and
// the account's (rate limits: no threadId) to every connection. Only the
// calls a shim makes are forwarded (initialize, answered from the
// broker's own session, thread/start, thread/resume, turn/start,
// turn/interrupt, thread/compact/start, account/rateLimits/read); a turn
// call on another connection's thread is refused.
//
// The broker supervises the process: when it dies (a crash, kill -9) the
// broker notices at once (its output ends), calls [Options.OnDeath] once,
// ends every connection — each shim sees its server gone, as when its own
// process dies: the turn in flight fails as cut off and is retried by the
// daemon — and starts the process again; the shims' next turns connect
// again and resume their threads. A connection that ends interrupts the
// turns it left running.
package appshare

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/codex/appserver"
	"github.com/battyhq/batty/unixsock"
)

// Options says how to run the shared process and whom to let in.
type Options struct {
	// Server is how to run `codex app-server` (Bin, Args, Env, Cwd,
	// Starter); the broker sets its OnNotification and ClientName.
	Server appserver.Options
	// Socket is the unix socket's path, of any length (it is bound
	// through its directory's descriptor: package unixsock); its
	// directory must exist, not be a symbolic link, and be the daemon's
	// alone (0700). A file already there is replaced.
	Socket string
	// Allow decides whether the process pid at the other end of a new
	// connection may use the server, returning the agent it runs for
	// (for the log); an error refuses it. Required.
	Allow func(pid int) (agent string, err error)
	// OnStart, when set, is called with the pid of every process the
	// broker started, once its session is open.
	OnStart func(pid int)
	// OnDeath, when set, is called once for every death of the process
	// that the broker did not cause, with its pid and how it ended
	// ("signal: killed"), before the process is started again.
	OnDeath func(pid int, how string)
	// Restart is the least time between two starts of the process (1 s
	// when 0), so a process that dies at once is not restarted in a loop.
	Restart time.Duration
	// InitTimeout bounds starting the process and opening its session
	// (30 s when 0).
	InitTimeout time.Duration
	// Log receives the broker's log (hclog.NewNullLogger() when nil).
	Log hclog.Logger
}

// forwarded are the calls a connection may make. initialize is answered
// by the broker itself.
var forwarded = map[string]bool{
	appserver.MethodThreadStart:    true,
	appserver.MethodThreadResume:   true,
	appserver.MethodTurnStart:      true,
	appserver.MethodTurnInterrupt:  true,
	appserver.MethodThreadCompact:  true,
	appserver.MethodRateLimitsRead: true,
}

// ownThread are the calls that act on a thread the connection must own.
var ownThread = map[string]bool{
	appserver.MethodTurnStart:     true,
	appserver.MethodTurnInterrupt: true,
	appserver.MethodThreadCompact: true,
}

// Broker runs one shared app-server and serves its connections. Its
// methods are safe for concurrent use. It owns the accept loop, the
// supervisor and two goroutines per connection; Close ends them all.
type Broker struct {
	opts Options
	log  hclog.Logger
	ln   *unixsock.Listener

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	up      *appserver.Client // the running process's session (nil while it starts)
	init    json.RawMessage   // its initialize result
	ready   chan struct{}     // closed once up is set; replaced when it goes
	conns   map[*conn]struct{}
	owner   map[string]*conn // thread id -> the connection it belongs to
	starts  int
	lastErr error         // why the last start failed (nil once one succeeded)
	failed  chan struct{} // closed when a start fails; replaced then (see Ready)
}

// Listen starts the shared process and listens on Options.Socket. The
// broker lives until Close or the end of ctx.
func Listen(ctx context.Context, o Options) (*Broker, error) {
	if o.Allow == nil {
		return nil, errors.New("appshare: Options.Allow is nil")
	}
	if o.Restart <= 0 {
		o.Restart = time.Second
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = 30 * time.Second
	}
	log := o.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	ln, err := unixsock.ListenPath(o.Socket)
	if err != nil {
		return nil, fmt.Errorf("appshare: %w", err)
	}
	b := &Broker{opts: o, log: log, ln: ln, ready: make(chan struct{}), failed: make(chan struct{}), conns: map[*conn]struct{}{}, owner: map[string]*conn{}}
	b.ctx, b.cancel = context.WithCancel(ctx)
	b.wg.Add(2)
	go b.supervise()
	go b.accept()
	return b, nil
}

// Socket returns the path shims connect to.
func (b *Broker) Socket() string { return b.opts.Socket }

// Pid returns the running process's pid, 0 while none runs.
func (b *Broker) Pid() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.up == nil {
		return 0
	}
	return b.up.Pid()
}

// Starts returns how many times the process has been started.
func (b *Broker) Starts() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.starts
}

// Close ends every connection, kills the process's group and waits for
// the broker's goroutines. Idempotent.
func (b *Broker) Close() error {
	b.cancel()
	_ = b.ln.Close()
	b.wg.Wait()
	return nil
}

// supervise runs the process for the broker's life: start, serve until
// it dies, tell OnDeath, end the connections, start again no sooner than
// Options.Restart after the last start.
func (b *Broker) supervise() {
	defer b.wg.Done()
	defer b.dropAll()
	for {
		began := time.Now()
		up, err := b.start()
		if err != nil {
			b.mu.Lock()
			b.lastErr = err
			close(b.failed)
			b.failed = make(chan struct{})
			b.mu.Unlock()
			b.log.Error("Shared app-server did not start", "error", err)
		} else {
			select {
			case <-up.Done():
			case <-b.ctx.Done():
				_ = up.Close()
				return
			}
			b.down(up)
		}
		wait := time.Until(began.Add(b.opts.Restart))
		if wait < 0 {
			wait = 0
		}
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// start starts the process and opens its session.
func (b *Broker) start() (*appserver.Client, error) {
	o := b.opts.Server
	o.ClientName = "batty-appshare"
	o.OnNotification = b.route
	up, err := appserver.Start(b.ctx, o)
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(b.ctx, b.opts.InitTimeout)
	defer cancel()
	res, err := up.Initialize(ictx)
	if err != nil {
		stderr := up.Stderr()
		_ = up.Close()
		return nil, fmt.Errorf("initialize: %w (stderr %q)", err, stderr)
	}
	init, err := json.Marshal(res)
	if err != nil {
		_ = up.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	b.mu.Lock()
	b.up, b.init, b.lastErr = up, init, nil
	b.starts++
	close(b.ready)
	b.mu.Unlock()
	b.log.Info("Shared app-server started", "pid", up.Pid(), "socket", b.opts.Socket)
	if b.opts.OnStart != nil {
		b.opts.OnStart(up.Pid())
	}
	return up, nil
}

// down handles the end of process up: unless the broker is closing, it
// says how it died and ends every connection (their shims reconnect).
func (b *Broker) down(up *appserver.Client) {
	how := "its connection ended"
	if ps := up.Died(); ps != nil {
		how = ps.String()
	}
	_ = up.Close()
	b.mu.Lock()
	b.up = nil
	b.ready = make(chan struct{})
	b.mu.Unlock()
	if b.ctx.Err() != nil {
		return
	}
	b.log.Warn("Shared app-server died; starting it again", "pid", up.Pid(), "how", how)
	if b.opts.OnDeath != nil {
		b.opts.OnDeath(up.Pid(), how)
	}
	b.dropAll()
}

// dropAll ends every connection.
func (b *Broker) dropAll() {
	b.mu.Lock()
	cs := make([]*conn, 0, len(b.conns))
	for c := range b.conns {
		cs = append(cs, c)
	}
	b.mu.Unlock()
	for _, c := range cs {
		c.close()
	}
}

// current waits until a process is ready and returns its session.
func (b *Broker) current(ctx context.Context) (*appserver.Client, json.RawMessage, error) {
	for {
		b.mu.Lock()
		up, init, ready, lastErr := b.up, b.init, b.ready, b.lastErr
		b.mu.Unlock()
		if up != nil {
			return up, init, nil
		}
		select {
		case <-ready:
		case <-ctx.Done():
			if lastErr != nil {
				return nil, nil, fmt.Errorf("the shared app-server is not running (%v): %w", lastErr, ctx.Err())
			}
			return nil, nil, fmt.Errorf("the shared app-server is not running: %w", ctx.Err())
		}
	}
}

// accept takes connections until the listener closes.
func (b *Broker) accept() {
	defer b.wg.Done()
	for {
		nc, err := b.ln.AcceptUnix()
		if err != nil {
			if b.ctx.Err() == nil {
				b.log.Error("Shared app-server's socket failed", "error", err)
			}
			return
		}
		agent, err := b.admit(nc)
		if err != nil {
			b.log.Warn("Refused a connection to the shared app-server", "error", err)
			refuse(nc)
			continue
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.serve(nc, agent)
		}()
	}
}

// refusal is the one line a refused connection gets before it is closed:
// a JSON-RPC error without an id. It says the broker runs (batty doctor
// looks for it) and nothing of the team.
const refusal = `{"id":null,"error":{"code":-32001,"message":"batty's shared app-server serves the team's shims only"}}` + "\n"

// refuse writes refusal to nc (bounded: the peer may not read) and closes
// it.
func refuse(nc *net.UnixConn) {
	if nc.SetWriteDeadline(time.Now().Add(time.Second)) == nil {
		_, _ = nc.Write([]byte(refusal))
	}
	_ = nc.Close()
}

// admit reads the peer's pid (SO_PEERCRED) and asks Options.Allow.
func (b *Broker) admit(nc *net.UnixConn) (string, error) {
	raw, err := nc.SyscallConn()
	if err != nil {
		return "", err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return "", err
	}
	if serr != nil {
		return "", fmt.Errorf("the peer's credentials: %w", serr)
	}
	return b.opts.Allow(int(cred.Pid))
}

// conn is one shim's session.
type conn struct {
	b     *Broker
	nc    net.Conn
	agent string
	up    *appserver.Client

	mu      sync.Mutex
	queue   [][]byte
	wake    chan struct{}
	closed  bool
	done    chan struct{}
	threads map[string]string // owned thread -> its running turn ("" none)
}

// serve runs one connection: its writer on another goroutine, its reader
// here; each request is answered on a goroutine of its own. When the
// connection ends, its running turns are interrupted and its threads
// given up.
func (b *Broker) serve(nc net.Conn, agent string) {
	ctx, cancel := context.WithTimeout(b.ctx, b.opts.InitTimeout)
	up, init, err := b.current(ctx)
	cancel()
	if err != nil {
		b.log.Warn("Connection to the shared app-server ended before it ran", "agent", agent, "error", err)
		_ = nc.Close()
		return
	}
	c := &conn{b: b, nc: nc, agent: agent, up: up, wake: make(chan struct{}, 1), done: make(chan struct{}), threads: map[string]string{}}
	b.mu.Lock()
	if b.up != up || b.ctx.Err() != nil {
		b.mu.Unlock()
		_ = nc.Close()
		return
	}
	b.conns[c] = struct{}{}
	b.mu.Unlock()
	var reqs sync.WaitGroup
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop(&reqs, init)
	c.close()
	reqs.Wait()
	<-writerDone
	c.release()
}

// readLoop reads the connection's requests until it ends.
func (c *conn) readLoop(reqs *sync.WaitGroup, init json.RawMessage) {
	sc := bufio.NewScanner(c.nc)
	sc.Buffer(make([]byte, 0, 64<<10), appserver.DefaultMaxLine)
	for sc.Scan() {
		msg, err := appserver.DecodeMessage(sc.Bytes())
		if err != nil {
			continue
		}
		switch msg.Kind {
		case appserver.KindRequest:
			if msg.Method == appserver.MethodInitialize {
				c.reply(msg.ID, init, nil)
				continue
			}
			reqs.Add(1)
			go func() {
				defer reqs.Done()
				c.request(msg)
			}()
		case appserver.KindNotification:
			// initialized: the broker's session is open already.
		}
	}
}

// threadParams is the part of a request's params the broker reads.
type threadParams struct {
	ThreadID string `json:"threadId"`
}

// request forwards one request, enforcing thread ownership.
func (c *conn) request(msg appserver.Message) {
	if !forwarded[msg.Method] {
		c.reply(msg.ID, nil, &appserver.RPCError{Code: -32601, Message: "batty's shared app-server does not forward " + msg.Method})
		return
	}
	var p threadParams
	if len(msg.Params) > 0 {
		_ = json.Unmarshal(msg.Params, &p)
	}
	b := c.b
	switch {
	case ownThread[msg.Method] && !c.owns(p.ThreadID):
		c.reply(msg.ID, nil, &appserver.RPCError{Code: -32600, Message: "thread not found on this connection: " + p.ThreadID})
		return
	case msg.Method == appserver.MethodThreadResume:
		if !b.claim(c, p.ThreadID) {
			c.reply(msg.ID, nil, &appserver.RPCError{Code: -32600, Message: "thread " + p.ThreadID + " is loaded for another agent"})
			return
		}
	}
	var params any
	if len(msg.Params) > 0 {
		params = msg.Params
	}
	var res json.RawMessage
	// The request's trace context goes on with it (a turn's: Codex's
	// spans of it are children of the shim's caller's).
	err := c.up.Call(appserver.WithTraceParent(b.ctx, msg.TraceParent), msg.Method, params, &res)
	var rpc *appserver.RPCError
	switch {
	case errors.As(err, &rpc):
		if msg.Method == appserver.MethodThreadResume {
			b.unclaim(c, p.ThreadID)
		}
		c.reply(msg.ID, nil, rpc)
		return
	case err != nil:
		// The process ended (the connection goes with it) or the broker
		// closes: the shim sees its connection end.
		c.close()
		return
	}
	switch msg.Method {
	case appserver.MethodThreadStart:
		var r struct {
			Thread struct {
				ID string `json:"id"`
			} `json:"thread"`
		}
		if json.Unmarshal(res, &r) == nil && r.Thread.ID != "" {
			b.claim(c, r.Thread.ID)
		}
	case appserver.MethodTurnStart:
		var r struct {
			Turn struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		if json.Unmarshal(res, &r) == nil {
			c.setTurn(p.ThreadID, r.Turn.ID)
		}
	}
	c.reply(msg.ID, res, nil)
}

// claim makes thread id c's, unless a live connection of another agent
// has it. A connection of the same agent takes it over (its shim
// connected again before the broker saw its last connection end).
func (b *Broker) claim(c *conn, id string) bool {
	if id == "" {
		return true // the server refuses it
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if o, ok := b.owner[id]; ok && o != c {
		if o.agent != c.agent {
			return false
		}
		o.mu.Lock()
		delete(o.threads, id)
		o.mu.Unlock()
	}
	b.owner[id] = c
	c.mu.Lock()
	if _, ok := c.threads[id]; !ok {
		c.threads[id] = ""
	}
	c.mu.Unlock()
	return true
}

// unclaim gives thread id back after a refused resume.
func (b *Broker) unclaim(c *conn, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.owner[id] == c {
		delete(b.owner, id)
	}
	c.mu.Lock()
	delete(c.threads, id)
	c.mu.Unlock()
}

func (c *conn) owns(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.threads[id]
	return ok
}

func (c *conn) setTurn(thread, turn string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.threads[thread]; ok {
		c.threads[thread] = turn
	}
}

// release gives up c's threads once it has ended, interrupting the turns
// it left running (bounded by 5 s each).
func (c *conn) release() {
	b := c.b
	b.mu.Lock()
	delete(b.conns, c)
	for id, o := range b.owner {
		if o == c {
			delete(b.owner, id)
		}
	}
	b.mu.Unlock()
	c.mu.Lock()
	running := map[string]string{}
	for th, turn := range c.threads {
		if turn != "" {
			running[th] = turn
		}
	}
	c.mu.Unlock()
	for th, turn := range running {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		err := c.up.Call(ctx, appserver.MethodTurnInterrupt, map[string]any{"threadId": th, "turnId": turn}, nil)
		cancel()
		b.log.Debug("Interrupted the turn a closed connection left", "agent", c.agent, "thread", th, "turn", turn, "error", err)
	}
}

// noteParams is the part of a notification the broker routes by.
type noteParams struct {
	ThreadID string `json:"threadId"`
	Thread   *struct {
		ID string `json:"id"`
	} `json:"thread"`
	Turn *struct {
		ID string `json:"id"`
	} `json:"turn"`
}

// route sends a notification of the process to the connection owning its
// thread, or to every connection when it names none (the account's). It
// runs on the upstream client's reader goroutine and never blocks.
func (b *Broker) route(n appserver.Notification) {
	var p noteParams
	if len(n.Params) > 0 && json.Unmarshal(n.Params, &p) != nil {
		return
	}
	id := p.ThreadID
	if id == "" && p.Thread != nil {
		id = p.Thread.ID
	}
	line, err := json.Marshal(map[string]any{"method": n.Method, "params": n.Params})
	if err != nil {
		return
	}
	b.mu.Lock()
	var to []*conn
	if id == "" {
		for c := range b.conns {
			to = append(to, c)
		}
	} else if c, ok := b.owner[id]; ok {
		to = append(to, c)
	}
	b.mu.Unlock()
	for _, c := range to {
		if n.Method == appserver.NotifyTurnCompleted && p.Turn != nil {
			c.mu.Lock()
			if c.threads[id] == p.Turn.ID {
				c.threads[id] = ""
			}
			c.mu.Unlock()
		}
		c.push(line)
	}
}

// reply queues the answer to request id.
func (c *conn) reply(id json.RawMessage, result json.RawMessage, rerr *appserver.RPCError) {
	m := map[string]any{"id": id}
	if rerr != nil {
		m["error"] = map[string]any{"code": rerr.Code, "message": rerr.Message}
	} else {
		if result == nil {
			result = json.RawMessage("{}")
		}
		m["result"] = result
	}
	line, err := json.Marshal(m)
	if err != nil {
		return
	}
	c.push(line)
}

// push queues a message for the writer, which writes it and a newline;
// it never blocks. line is not changed (it may go to several connections).
func (c *conn) push(line []byte) {
	line = append(line[:len(line):len(line)], '\n')
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, line)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// writeLoop writes queued lines until the connection closes.
func (c *conn) writeLoop() {
	for {
		c.mu.Lock()
		q := c.queue
		c.queue = nil
		c.mu.Unlock()
		for _, line := range q {
			if _, err := c.nc.Write(line); err != nil {
				c.close()
				return
			}
		}
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
	}
}

// close ends the connection; idempotent.
func (c *conn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	close(c.done)
	_ = c.nc.Close()
}
