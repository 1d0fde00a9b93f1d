package protocol

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrVersionMismatch is returned (wrapped) when the two sides speak
// different protocol versions.
var ErrVersionMismatch = errors.New("protocol version mismatch")

// DefaultHandshakeTimeout bounds the Hello/Welcome exchange.
const DefaultHandshakeTimeout = 10 * time.Second

// recvWithin receives one message, closing the Conn if none arrives within
// timeout. The timeout error wraps os.ErrDeadlineExceeded.
func (c *Conn) recvWithin(timeout time.Duration) (Message, error) {
	fired := make(chan struct{})
	t := time.AfterFunc(timeout, func() {
		c.fail(fmt.Errorf("no frame within %s: %w", timeout, os.ErrDeadlineExceeded))
		close(fired)
	})
	m, err := c.Recv()
	if !t.Stop() {
		// The timer went off, possibly just after the frame arrived: it has
		// closed (or is closing) the Conn, so the exchange failed either way.
		<-fired
		if err == nil {
			m, err = nil, c.broken()
		}
	}
	return m, err
}

// AcceptHello is the orchestrator side of the handshake: it waits up to
// timeout for the shim's Hello, checks the version and answers a Welcome
// without settings. On any failure the Conn is closed and the error says
// why.
func (c *Conn) AcceptHello(timeout time.Duration) (Hello, error) {
	return c.AcceptHelloWith(Welcome{}, timeout)
}

// AcceptHelloWith is AcceptHello answering w (its Version is set here).
func (c *Conn) AcceptHelloWith(w Welcome, timeout time.Duration) (Hello, error) {
	m, err := c.recvWithin(timeout)
	if err != nil {
		return Hello{}, fmt.Errorf("handshake: waiting for hello: %w", err)
	}
	h, ok := m.(Hello)
	if !ok {
		return Hello{}, c.fail(fmt.Errorf("handshake: first frame is %s, want hello", m.Kind()))
	}
	if h.Version != Version {
		return h, c.fail(fmt.Errorf("handshake: shim %q (pid %d) speaks protocol %d, this batty speaks %d; run the same batty binary for daemon and shims: %w",
			h.Agent, h.PID, h.Version, Version, ErrVersionMismatch))
	}
	w.Version = Version
	if err := c.Send(w); err != nil {
		return h, fmt.Errorf("handshake: send welcome: %w", err)
	}
	return h, nil
}

// OfferHello is the shim side of the handshake: it sends h (with Version
// and PID filled in when zero) and waits up to timeout for Welcome.
func (c *Conn) OfferHello(h Hello, timeout time.Duration) error {
	_, err := c.OfferHelloWelcome(h, timeout)
	return err
}

// OfferHelloWelcome is OfferHello returning the Welcome, with the settings
// the orchestrator sent in it.
func (c *Conn) OfferHelloWelcome(h Hello, timeout time.Duration) (Welcome, error) {
	if h.Version == 0 {
		h.Version = Version
	}
	if h.PID == 0 {
		h.PID = os.Getpid()
	}
	if err := c.Send(h); err != nil {
		return Welcome{}, fmt.Errorf("handshake: send hello: %w", err)
	}
	m, err := c.recvWithin(timeout)
	if err != nil {
		return Welcome{}, fmt.Errorf("handshake: waiting for welcome: %w", err)
	}
	w, ok := m.(Welcome)
	if !ok {
		return Welcome{}, c.fail(fmt.Errorf("handshake: first frame is %s, want welcome", m.Kind()))
	}
	if w.Version != Version {
		return Welcome{}, c.fail(fmt.Errorf("handshake: orchestrator speaks protocol %d, this shim %d: %w", w.Version, Version, ErrVersionMismatch))
	}
	return w, nil
}
