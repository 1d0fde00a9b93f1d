package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/sockpeer"
)

// connPeer is what the console decided of one connection's peer, once,
// at its first request.
type connPeer struct {
	conn    net.Conn
	once    sync.Once
	refusal error
}

type connPeerKey struct{}

// ConnContext is the http.Server's ConnContext of the console: it keeps
// the connection for the judge of its peer (see Config.Judge). It does no
// work itself: the accept loop is not held up.
func (s *Server) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connPeerKey{}, &connPeer{conn: c})
}

// peerRefusal is why the request's connection is refused, nil when it is
// not (or no judge is set): decided once per connection, at its first
// request, in that connection's goroutine.
func (s *Server) peerRefusal(r *http.Request) error {
	if s.cfg.Judge == nil {
		return nil
	}
	cp, ok := r.Context().Value(connPeerKey{}).(*connPeer)
	if !ok {
		return control.Refusal(control.OpConsole, control.Insider{}, errors.New("the console's server does not say which connection a request came on (ConnContext)"))
	}
	cp.once.Do(func() { cp.refusal = judgePeer(s.cfg.Proc, cp.conn, s.cfg.Judge) })
	return cp.refusal
}

// judgePeer decides whether the peer of c may use the console: a peer on
// another machine may (the token and the cookie decide); one of this
// machine must be of the daemon's user and found outside every agent by
// judge, as the control socket decides for a request only the human may
// make (control.Refusal of control.OpConsole). Every process holding the
// peer's socket is judged, and must still hold it once judged (its pid
// was not reused meanwhile). A peer that cannot be looked at is refused.
func judgePeer(proc string, c net.Conn, judge control.Judge) error {
	ra, ok1 := c.RemoteAddr().(*net.TCPAddr)
	la, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return control.Refusal(control.OpConsole, control.Insider{}, fmt.Errorf("a connection that is not TCP (%s)", c.RemoteAddr()))
	}
	peer, local := ra.AddrPort(), la.AddrPort()
	p, err := sockpeer.Of(proc, peer, local)
	if err != nil {
		return control.Refusal(control.OpConsole, control.Insider{}, fmt.Errorf("the peer %s: %w", peer, err))
	}
	if !p.Local {
		if peer.Addr().Unmap().IsLoopback() {
			return control.Refusal(control.OpConsole, control.Insider{}, fmt.Errorf("no socket of this machine is at the other end of %s", peer))
		}
		return nil
	}
	if uid := os.Getuid(); p.UID != uid {
		return fmt.Errorf("refused: the peer's uid %d is not the daemon's owner (%d)", p.UID, uid)
	}
	if len(p.PIDs) == 0 {
		return control.Refusal(control.OpConsole, control.Insider{}, fmt.Errorf("no process holds the peer's socket %d", p.Inode))
	}
	for _, pid := range p.PIDs {
		in, err := judge(pid)
		if err == nil && !sockpeer.Holds(proc, pid, p.Inode) {
			err = fmt.Errorf("process %d let go of the connection while it was looked at", pid)
		}
		if refusal := control.Refusal(control.OpConsole, in, err); refusal != nil {
			return refusal
		}
	}
	return nil
}
