package shim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/battyhq/batty/codex/appserver"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/retry"
	"github.com/battyhq/batty/shim/shimconfig"
)

// cutBroker is a fake shared app-server broker that ends each connection
// under a call, as the real one does when its process dies: the first
// connection answers thread/start and is cut at turn/start; after that,
// even connections are cut at thread/resume and odd ones at turn/start.
type cutBroker struct {
	ln    net.Listener
	mu    sync.Mutex
	conns int
	cuts  []string // the method under which each connection was cut
}

// startCutBroker listens on a socket in a new short directory.
func startCutBroker(t *testing.T) *cutBroker {
	t.Helper()
	dir, err := os.MkdirTemp("", "cut-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	b := &cutBroker{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go b.serve()
	return b
}

func (b *cutBroker) serve() {
	for {
		nc, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns++
		n := b.conns
		b.mu.Unlock()
		go b.session(nc, n)
	}
}

// session answers connection n until the call it cuts.
func (b *cutBroker) session(nc net.Conn, n int) {
	defer nc.Close()
	cutAt := appserver.MethodTurnStart
	if n > 1 && n%2 == 0 {
		cutAt = appserver.MethodThreadResume
	}
	sc := bufio.NewScanner(nc)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue // the initialized notification
		}
		if req.Method == cutAt {
			b.mu.Lock()
			b.cuts = append(b.cuts, req.Method)
			b.mu.Unlock()
			return
		}
		var result string
		switch req.Method {
		case appserver.MethodInitialize:
			result = `{"userAgent":"fake","codexHome":"/nowhere","platformOs":"linux"}`
		case appserver.MethodThreadStart, appserver.MethodThreadResume:
			result = `{"thread":{"id":"0199a7c2-0000-7000-8000-00000000cafe","turns":[]},"model":"m","modelProvider":"p","cwd":"/"}`
		default:
			_, _ = fmt.Fprintf(nc, `{"id":%s,"error":{"code":-32600,"message":"not here"}}`+"\n", req.ID)
			continue
		}
		_, _ = fmt.Fprintf(nc, `{"id":%s,"result":%s}`+"\n", req.ID, result)
	}
}

// A turn whose shared app-server connection is cut under thread/resume or
// turn/start — the broker ends every connection when the shared process
// dies — ends as cut off (FailKilled), which the daemon retries, every
// time: the shim classifies it by the error of the cut call, not by
// asking the connection afterwards.
func TestSharedCutCallIsKilled(t *testing.T) {
	b := startCutBroker(t)
	h := startShim(t, func(c *shimconfig.Config) {
		c.Runtime = shimconfig.RuntimeAppServer
		c.AppServerSocket = b.ln.Addr().String()
	})
	const turns = 8
	for i := range turns {
		id := fmt.Sprintf("m%d", i)
		h.send(id, "hello")
		_, tf := turnEvents(h, id)
		if tf.Status != protocol.TurnFailed || tf.Failure != protocol.FailKilled || retry.Cause(tf) == "" {
			t.Fatalf("turn %d: %+v, want failed, killed, retried", i, tf)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	resumes := 0
	for _, m := range b.cuts {
		if m == appserver.MethodThreadResume {
			resumes++
		}
	}
	if len(b.cuts) != turns || resumes != turns/2 {
		t.Fatalf("cuts %q, want %d, half under thread/resume", b.cuts, turns)
	}
}
