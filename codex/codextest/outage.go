package codextest

import (
	"fmt"
	"net"
	"net/http"
	"sync"
)

// switchListener is the server's listener: it can stop listening (the
// port then refuses connections, as when the API is unreachable) and
// listen again on the same address. Accept blocks while it is down.
type switchListener struct {
	addr string

	mu      sync.Mutex
	inner   net.Listener // nil while down
	closed  bool
	changed chan struct{} // closed and replaced on every change
}

func newSwitchListener() (*switchListener, error) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("codextest: listen: %w", err)
	}
	return &switchListener{addr: inner.Addr().String(), inner: inner, changed: make(chan struct{})}, nil
}

func (l *switchListener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		inner, closed, changed := l.inner, l.closed, l.changed
		l.mu.Unlock()
		if closed {
			return nil, net.ErrClosed
		}
		if inner == nil {
			<-changed
			continue
		}
		c, err := inner.Accept()
		if err == nil {
			return c, nil
		}
		l.mu.Lock()
		same := l.inner == inner && !l.closed
		l.mu.Unlock()
		if same {
			return nil, err
		}
		// Taken down (or replaced) under our feet: wait for the next one.
	}
}

// down stops listening: connections to the address are refused.
func (l *switchListener) down() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inner == nil || l.closed {
		return nil
	}
	err := l.inner.Close()
	l.inner = nil
	l.notifyLocked()
	return err
}

// up listens on the address again.
func (l *switchListener) up() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inner != nil || l.closed {
		return nil
	}
	inner, err := net.Listen("tcp", l.addr)
	if err != nil {
		return fmt.Errorf("codextest: listen again on %s: %w", l.addr, err)
	}
	l.inner = inner
	l.notifyLocked()
	return nil
}

func (l *switchListener) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *switchListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	var err error
	if l.inner != nil {
		err = l.inner.Close()
		l.inner = nil
	}
	l.notifyLocked()
	return err
}

func (l *switchListener) Addr() net.Addr {
	a, _ := net.ResolveTCPAddr("tcp", l.addr)
	return a
}

// Refuse makes the API unreachable: the server stops listening (a
// connection to its port is refused, as with nothing listening) and drops
// the connections it holds, requests in flight included. Codex then waits
// for the network, printing "Reconnecting... waiting for network (…)".
// Undo it with [Server.Accept].
func (s *Server) Refuse() error {
	err := s.ln.down()
	s.srv.CloseClientConnections()
	return err
}

// Accept listens again on the same address after [Server.Refuse].
func (s *Server) Accept() error { return s.ln.up() }

// DropStreams makes the server cut the event stream of the next n model
// requests right after response.created, as a connection reset mid-stream
// would (codex: "stream disconnected before completion: …"); requests
// after those are answered as usual. n replaces any count left.
func (s *Server) DropStreams(n int) {
	s.mu.Lock()
	s.drops = n
	s.mu.Unlock()
}

// takeDrop reports whether the current request's stream is to be cut.
func (s *Server) takeDrop() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drops <= 0 {
		return false
	}
	s.drops--
	return true
}

// abortStream ends a handler without finishing its response: the
// connection is closed mid-body (net/http's ErrAbortHandler).
func abortStream() { panic(http.ErrAbortHandler) }
