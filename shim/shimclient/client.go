// Package shimclient is the parent side of a worker: how a daemon or a
// command starts one shim (`batty shim`, package shim) and drives it.
// Spawn starts the process in its own process group, here or at the other
// end of a host's stream, and does the handshake (the settings as flags,
// their secrets in the Welcome); Client, started by Start, is the one way
// every driver (the daemon's agents, `batty chat`, `batty fanout`) talks to
// it: Send, Events, Stop, Kill, Close. It depends on the protocol and the
// shim's settings (package shim/shimconfig), never on the shim's server.
package shimclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/battyhq/batty/protocol"
)

// Bounds of Client.Stop's escalation past the grace it gives a turn.
const (
	// StopKillAfter is how long past the grace a shim has to exit after a
	// Shutdown before it is sent a Kill command.
	StopKillAfter = 5 * time.Second
	// StopSignalAfter is how long a shim has to exit after a Kill command
	// before it gets SIGKILL.
	StopSignalAfter = 10 * time.Second
)

// clientEventBuffer is how many events the reader holds for a driver busy
// elsewhere before it waits for one to be taken.
const clientEventBuffer = 64

// Client is a running shim as every driver sees it (the daemon's agents,
// `batty chat`, `batty fanout`'s workers): started with its handshake done,
// commands in with Send, events out of Events, ended with Stop, Kill or
// Close.
//
// The Client owns one reader goroutine, which forwards the shim's events to
// Events in the order the shim sent them and closes Events after the last
// one; Err then says why. It is where a reply is assembled, for every
// driver alike: the shim sends each reply as protocol.ReplyChunk pieces
// before the turn's TurnFinished; the reader keeps them (never forwarding
// one) and delivers the TurnFinished with the whole reply in Reply (see
// ReplyJoin). The driver owns the Client: it reads Events until
// it is closed, or calls Close, which gives up the unread events. Either
// way the reader ends, and every goroutine the Client started ends once the
// shim has exited. All methods are safe for concurrent use.
type Client struct {
	p      *Process
	events chan protocol.Message
	quit   chan struct{} // closed by Close: the reader stops delivering
	read   chan struct{} // closed when the reader has ended

	mu  sync.Mutex
	err error // why the reader ended; set before events closes

	stopOnce  sync.Once
	closeOnce sync.Once

	// killAfter and signalAfter are Stop's escalation bounds
	// (StopKillAfter and StopSignalAfter; shorter in tests).
	killAfter, signalAfter time.Duration
}

// Start spawns a shim as Spawn does (own process group, managed child of
// o.Reaper when set, Env and Instructions in the handshake) and starts the
// reader of its events. It blocks until the handshake is done, for at most
// o.HandshakeTimeout; the end of ctx ends the wait at once. ctx bounds the
// start only, not the shim's life. On failure nothing is left running.
func Start(ctx context.Context, o SpawnOptions) (*Client, error) {
	p, err := spawn(ctx, o)
	if err != nil {
		return nil, err
	}
	c := &Client{
		p:         p,
		events:    make(chan protocol.Message, clientEventBuffer),
		quit:      make(chan struct{}),
		read:      make(chan struct{}),
		killAfter: StopKillAfter, signalAfter: StopSignalAfter,
	}
	go c.readEvents()
	return c, nil
}

// readEvents forwards the shim's events until the first error of the
// channel: io.EOF once the shim closed it (it exits), a broken channel (an
// undecodable or cut frame, which closes it; a reply that breaks its
// bound or does not add up, see ReplyJoin), or protocol.ErrClosed after
// Close. The channel is closed when it returns.
func (c *Client) readEvents() {
	defer close(c.read)
	defer close(c.events)
	var reply ReplyJoin
	for {
		m, err := c.p.Conn.Recv()
		if err == nil {
			m, err = reply.Take(m)
		}
		if err != nil {
			c.end(err)
			return
		}
		if m == nil {
			continue
		}
		select {
		case c.events <- m:
		case <-c.quit:
			c.end(protocol.ErrClosed)
			return
		}
	}
}

// ErrReply is matched (errors.Is) by Err when the shim's reply pieces
// broke the protocol: more than protocol.MaxReply bytes (a flood), pieces
// of another message than the TurnFinished that follows them, a total
// other than its ReplySize, or a reply outside its pieces.
var ErrReply = errors.New("reply pieces out of protocol")

// ReplyJoin assembles the replies of one shim, the one place a reply is
// put together: the Client's reader uses it for every driver (a reader of
// a bare Process's channel, as the shim's own tests are, uses it the
// same). It holds the ReplyChunk pieces of the turn in flight, at
// most protocol.MaxReply bytes, and hands them over in the TurnFinished
// that follows them. Owned by the reader; not safe for concurrent use.
type ReplyJoin struct {
	id  string          // the message the pieces held belong to
	buf strings.Builder // the pieces, joined (String does not copy)
}

// Take applies event m to the reply being assembled: a piece is kept (nil
// is returned: it reaches no driver), a TurnFinished gets the whole reply
// in Reply (ReplySize its size) and the pieces are forgotten, any other
// event passes unchanged. An error wrapping ErrReply says the pieces
// broke the protocol (a flood past MaxReply is refused as soon as it
// passes it, before it is held).
func (j *ReplyJoin) Take(m protocol.Message) (protocol.Message, error) {
	switch e := m.(type) {
	case protocol.ReplyChunk:
		if e.MessageID == "" {
			return nil, fmt.Errorf("%w: a piece of a reply that names no message", ErrReply)
		}
		if j.id != "" && e.MessageID != j.id {
			return nil, fmt.Errorf("%w: a piece of the reply to %q while the reply to %q is incomplete", ErrReply, e.MessageID, j.id)
		}
		if j.buf.Len()+len(e.Data) > protocol.MaxReply {
			return nil, fmt.Errorf("%w: the reply to %q passes %d bytes", ErrReply, e.MessageID, protocol.MaxReply)
		}
		j.id = e.MessageID
		j.buf.WriteString(e.Data)
		return nil, nil
	case protocol.TurnFinished:
		defer j.reset()
		switch {
		case e.Reply != "":
			return nil, fmt.Errorf("%w: the turn of %q finished with a reply outside its pieces", ErrReply, e.MessageID)
		case j.id != "" && j.id != e.MessageID:
			return nil, fmt.Errorf("%w: the turn of %q finished after pieces of the reply to %q", ErrReply, e.MessageID, j.id)
		case e.ReplySize != int64(j.buf.Len()):
			return nil, fmt.Errorf("%w: the reply to %q is %d bytes, its pieces %d", ErrReply, e.MessageID, e.ReplySize, j.buf.Len())
		}
		e.Reply = j.buf.String()
		return e, nil
	}
	return m, nil
}

// reset forgets the pieces held (their memory too: a large reply is not
// kept past its turn).
func (j *ReplyJoin) reset() {
	j.id = ""
	j.buf = strings.Builder{}
}

func (c *Client) end(err error) {
	c.p.Conn.Close()
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
}

// Events delivers the shim's events in order; it is closed after the last
// one (see Err). It is the same channel on every call, so a driver can
// select on it. Events are held for the driver: one that stops reading
// must call Close.
func (c *Client) Events() <-chan protocol.Message { return c.events }

// Err tells why Events closed: io.EOF when the shim closed the channel
// cleanly (it has exited or is exiting), protocol.ErrClosed (possibly
// wrapped) after Close, any other error when the channel broke (an
// undecodable frame, a frame cut short); the channel is closed then. It is
// nil while Events is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Send writes one command to the shim. It does not wait for an answer
// (that comes on Events). It fails with protocol.ErrClosed (possibly
// wrapped) once the channel is closed. Safe for concurrent use.
func (c *Client) Send(m protocol.Message) error {
	if err := c.p.Conn.Send(m); err != nil {
		return fmt.Errorf("shim %d: send %s: %w", c.Pid(), m.Kind(), err)
	}
	return nil
}

// Hello is what the shim said in the handshake.
func (c *Client) Hello() protocol.Hello { return c.p.Hello }

// Pid is the shim's process id.
func (c *Client) Pid() int { return c.p.Pid() }

// Done is closed once the shim has exited and been reaped.
func (c *Client) Done() <-chan struct{} { return c.p.Done() }

// Wait blocks until the shim has exited and returns its exit error (nil
// for status 0). It may be called any number of times.
func (c *Client) Wait() error { return c.p.Wait() }

// ExitCode blocks until the shim has exited and returns its status, -1
// when a signal killed it.
func (c *Client) ExitCode() int { return c.p.ExitCode() }

// BeginStop starts a stop without waiting for it: it sends Shutdown with
// grace (the time a turn in flight may still run) and reason, and leaves
// the escalation to a goroutine of the Client: a Kill command when the
// shim has not exited StopKillAfter past grace, SIGKILL StopSignalAfter
// later. That goroutine ends when the shim has exited. A Shutdown that
// cannot be written (other than on a closed channel) means SIGKILL at
// once. It blocks only for the write. Idempotent: only the first call of
// BeginStop or Stop does anything.
func (c *Client) BeginStop(grace time.Duration, reason string) {
	c.stopOnce.Do(func() {
		select {
		case <-c.p.Done():
			return
		default:
		}
		if err := c.p.Conn.Send(protocol.Shutdown{Timeout: grace, Reason: reason}); err != nil && !errors.Is(err, protocol.ErrClosed) {
			c.p.signalKill()
			return
		}
		go c.escalate(max(grace, 0))
	})
}

// escalate is the rest of a stop: Kill command, then SIGKILL.
func (c *Client) escalate(grace time.Duration) {
	t := time.NewTimer(grace + c.killAfter)
	defer t.Stop()
	select {
	case <-c.p.Done():
		return
	case <-t.C:
	}
	// A closed channel goes straight on to the signal's deadline: the
	// shim may be exiting already.
	c.p.Conn.Send(protocol.Kill{})
	t.Reset(c.signalAfter)
	select {
	case <-c.p.Done():
	case <-t.C:
		c.p.signalKill()
	}
}

// Stop is BeginStop, then a wait until the shim has exited and been
// reaped; the end of ctx sends SIGKILL at once and still waits for the
// reaping. It returns the shim's exit error (nil for status 0). Events
// keep flowing until the shim exits; the driver keeps reading them (Stop
// does not) or calls Close. Idempotent: a later call sends nothing and
// returns the same exit.
func (c *Client) Stop(ctx context.Context, grace time.Duration, reason string) error {
	c.BeginStop(grace, reason)
	select {
	case <-c.p.Done():
	case <-ctx.Done():
		c.p.Kill()
	}
	return c.p.Wait()
}

// Kill ends the shim at once with SIGKILL and waits until it is reaped.
// Its codex dies with it; what the model detached is left to the parent's
// sweep (a Stop or a Kill command lets the shim clean it up). Idempotent.
func (c *Client) Kill() { c.p.Kill() }

// Close releases the Client: SIGKILL for a shim still running, the
// channel closed, unread events dropped. It blocks until the reader has
// ended (Events is closed then) and the shim is reaped. Idempotent; after
// a Stop it only releases.
func (c *Client) Close() {
	// The shim is killed before the reader lets go of the channel: a
	// channel closed first would let the shim see its end and exit by
	// itself, racing the signal.
	c.p.Kill()
	c.closeOnce.Do(func() { close(c.quit) })
	c.p.Conn.Close()
	<-c.read
}
