package shim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
)

// relayRescan is how often a relaying shim looks at its host's inboxes
// when nothing told it of a change: file events (fsnotify) wake it at
// once; the rescan is the safety net, and the pace while the inboxes do
// not exist yet is relayWaitDir.
const (
	relayRescan  = 30 * time.Second
	relayWaitDir = time.Second
)

// relay hands the messages that the agent of a shim on another host sends
// with `batty send` — files in the host's inboxes (<BATTY_DIR>/inboxes/
// <box>/new/<id>.json) whose sender is the agent — to the parent as
// protocol.Outgoing events, and removes each once the parent acknowledges
// it (OutgoingAck). A file not acknowledged (the stream cut, the shim
// restarted) is sent again by the next shim: the parent delivers by id,
// so a message arrives once. Files of other senders (other agents of the
// host, each relayed by its own shim) are left alone.
type relay struct {
	dir   string // the host's inboxes directory
	agent string
	conn  *protocol.Conn
	log   hclog.Logger

	mu   sync.Mutex
	sent map[string]bool // "box/name" sent and not acknowledged yet
	skip map[string]bool // "box/name" of another sender
}

func newRelay(stateDir, agent string, conn *protocol.Conn, log hclog.Logger) *relay {
	return &relay{dir: filepath.Join(stateDir, "inboxes"), agent: agent, conn: conn, log: log,
		sent: map[string]bool{}, skip: map[string]bool{}}
}

// run scans the inboxes when a file event says something changed there,
// and at least every relayRescan, until ctx ends. Without file events
// (the watcher cannot be made) it scans every relayWaitDir.
func (r *relay) run(ctx context.Context) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		r.log.Warn("No file events; looking at the inboxes every second", "error", err)
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		defer w.Close()
		events, errs = w.Events, w.Errors
	}
	watched := map[string]bool{}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		complete := w != nil && r.watch(w, watched)
		r.scan()
		wait := relayRescan
		if !complete {
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

// watch adds the inboxes directory and each box's new/ to w (once each)
// and reports whether all of them are watched.
func (r *relay) watch(w *fsnotify.Watcher, watched map[string]bool) bool {
	dirs := []string{r.dir}
	boxes, err := os.ReadDir(r.dir)
	if err != nil {
		return false
	}
	for _, b := range boxes {
		if b.IsDir() {
			dirs = append(dirs, filepath.Join(r.dir, b.Name()), filepath.Join(r.dir, b.Name(), "new"))
		}
	}
	complete := true
	for _, d := range dirs {
		if watched[d] {
			continue
		}
		if err := w.Add(d); err != nil {
			complete = false
			continue
		}
		watched[d] = true
	}
	return complete
}

// scan sends every new message of the agent not sent yet.
func (r *relay) scan() {
	boxes, err := os.ReadDir(r.dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.log.Debug("Inboxes not readable", "dir", r.dir, "error", err)
		}
		return
	}
	seen := map[string]bool{}
	defer func() {
		// Files of other senders that are gone are forgotten.
		r.mu.Lock()
		for k := range r.skip {
			if !seen[k] {
				delete(r.skip, k)
			}
		}
		r.mu.Unlock()
	}()
	for _, b := range boxes {
		if !b.IsDir() {
			continue
		}
		names, err := os.ReadDir(filepath.Join(r.dir, b.Name(), "new"))
		if err != nil {
			continue
		}
		for _, n := range names {
			key := b.Name() + "/" + n.Name()
			seen[key] = true
			r.mu.Lock()
			known := r.sent[key] || r.skip[key]
			r.mu.Unlock()
			if known || !n.Type().IsRegular() || filepath.Ext(n.Name()) != ".json" {
				continue
			}
			data, err := readNoFollow(filepath.Join(r.dir, b.Name(), "new", n.Name()), inbox.MaxFileLen)
			if err != nil {
				r.log.Debug("Message file not readable", "file", key, "error", err)
				continue
			}
			m, err := inbox.Decode(data)
			if err != nil || m.From != r.agent {
				r.mu.Lock()
				r.skip[key] = true
				r.mu.Unlock()
				continue
			}
			r.mu.Lock()
			r.sent[key] = true
			r.mu.Unlock()
			if err := r.conn.Send(protocol.Outgoing{Box: b.Name(), Name: n.Name(), Data: string(data)}); err != nil {
				r.log.Warn("Message not relayed", "file", key, "error", err)
				return
			}
			r.log.Info("Relayed a message sent on this host", "box", b.Name(), "id", m.ID)
		}
	}
}

// acked removes the file the parent acknowledged; an Error is logged.
func (r *relay) acked(a protocol.OutgoingAck) {
	key := a.Box + "/" + a.Name
	r.mu.Lock()
	known := r.sent[key]
	delete(r.sent, key)
	r.mu.Unlock()
	if !known || a.Box != filepath.Base(a.Box) || a.Name != filepath.Base(a.Name) {
		r.log.Warn("Acknowledgement of a message not relayed", "box", a.Box, "name", a.Name)
		return
	}
	if a.Error != "" {
		r.log.Warn("Relayed message refused", "box", a.Box, "name", a.Name, "error", a.Error)
	}
	if err := os.Remove(filepath.Join(r.dir, a.Box, "new", a.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Warn("Relayed message not removed", "box", a.Box, "name", a.Name, "error", err)
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
