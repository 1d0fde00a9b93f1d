package shim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/protocol"
)

// relayRescan is how often a relaying shim looks at its agent's outbox
// when nothing told it of a change: file events (fsnotify) wake it at
// once; the rescan is the safety net, and the pace while the outbox is
// not watched is relayWaitDir.
const (
	relayRescan  = 30 * time.Second
	relayWaitDir = time.Second
)

// relay hands the requests that the agent writes with `batty send` and
// `batty merge` — files in its own outbox (<BATTY_DIR>/outboxes/<agent>/
// new/<id>.json, package outbox), the one directory of batty's that its
// sandbox may write — to the parent as protocol.Outgoing events, and
// removes each once the parent acknowledges it (OutgoingAck). The parent
// stamps the sender: the agent of this shim, never what a file says. A
// file not acknowledged (the stream cut, the shim restarted) is sent again
// by the next shim: the parent delivers by id, so a message arrives once.
// Every shim of a team's agent relays, here and on other hosts alike.
type relay struct {
	state string // the state directory holding the agent's outbox
	dir   string // the agent's outbox/new
	agent string
	conn  *protocol.Conn
	log   hclog.Logger

	mu   sync.Mutex
	sent map[string]bool // names sent and not acknowledged yet
}

func newRelay(stateDir, agent string, conn *protocol.Conn, log hclog.Logger) *relay {
	return &relay{state: stateDir, dir: filepath.Join(outbox.Path(stateDir, agent), outbox.SubNew), agent: agent, conn: conn, log: log,
		sent: map[string]bool{}}
}

// run scans the outbox when a file event says something changed there,
// and at least every relayRescan, until ctx ends. Without file events
// (the watcher cannot be made, or new/ does not exist yet) it scans every
// relayWaitDir.
func (r *relay) run(ctx context.Context) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		r.log.Warn("No file events; looking at the outbox every second", "error", err)
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		defer w.Close()
		events, errs = w.Events, w.Errors
	}
	watched := false
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		if w != nil && !watched {
			watched = w.Add(r.dir) == nil
		}
		r.scan()
		wait := relayRescan
		if !watched {
			wait = relayWaitDir
		}
		resetTimer(t, wait)
		select {
		case <-ctx.Done():
			return
		case <-events:
		case err := <-errs:
			r.log.Debug("File events", "error", err)
		case <-t.C:
		}
	}
}

// scan sends every request of the outbox not sent yet, oldest first.
func (r *relay) scan() {
	names, err := os.ReadDir(r.dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.log.Debug("Outbox not readable", "dir", r.dir, "error", err)
		}
		return
	}
	for _, n := range names {
		name := n.Name()
		r.mu.Lock()
		known := r.sent[name]
		r.mu.Unlock()
		if known {
			continue
		}
		if !outbox.ValidName(name) {
			// Not a request batty send made: the agent's own junk,
			// removed without being read.
			r.log.Warn("Not a request's name: removed", "file", strconv.Quote(name))
			if err := os.RemoveAll(filepath.Join(r.dir, name)); err != nil {
				r.log.Warn("Removing it failed", "file", strconv.Quote(name), "error", err)
			}
			continue
		}
		data, err := readNoFollow(filepath.Join(r.dir, name), outbox.MaxFileLen)
		if err != nil {
			// A link, a FIFO, a directory or a huge file: not a request.
			// It is sent as it is (empty), for the parent to refuse and
			// the acknowledgement to remove.
			r.log.Warn("Request file not readable", "file", name, "error", err)
			data = nil
		}
		r.mu.Lock()
		r.sent[name] = true
		r.mu.Unlock()
		if err := r.conn.Send(protocol.Outgoing{Name: name, Data: string(data)}); err != nil {
			r.log.Warn("Request not relayed", "file", name, "error", err)
			return
		}
		r.log.Info("Relayed a request of the agent", "file", name)
	}
}

// acked removes the file the parent acknowledged; an Error is logged.
func (r *relay) acked(a protocol.OutgoingAck) {
	r.mu.Lock()
	known := r.sent[a.Name]
	delete(r.sent, a.Name)
	r.mu.Unlock()
	if !known || a.Name != filepath.Base(a.Name) {
		r.log.Warn("Acknowledgement of a request not relayed", "name", a.Name)
		return
	}
	if a.Error != "" {
		r.log.Warn("Relayed request refused", "name", a.Name, "error", a.Error)
	}
	if err := os.RemoveAll(filepath.Join(r.dir, a.Name)); err != nil {
		r.log.Warn("Relayed request not removed", "name", a.Name, "error", err)
	}
}

// readNoFollow reads the regular file at path, not through a symbolic
// link, at most max bytes.
func readNoFollow(path string, max int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, nil
}

// answer writes the daemon's answer a to a recall the agent asked into
// the agent's outbox (outbox.WriteAnswer: never through a link the agent
// planted there), where its `batty search` or `batty threads show` waits
// for it. It blocks for the write.
func (r *relay) answer(a protocol.RecallAnswer) error {
	ans := outbox.Answer{Output: a.Output, Notes: a.Notes, Error: a.Error}
	if err := outbox.WriteAnswer(r.state, r.agent, a.ID, ans, time.Now()); err != nil {
		return fmt.Errorf("answer to the recall %s: %w", a.ID, err)
	}
	return nil
}
