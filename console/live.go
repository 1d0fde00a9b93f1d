package console

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/logtail"
	"github.com/battyhq/batty/ptylog"
)

// hub gets the status once for every open page when the team changes
// (notify) or every refresh, and hands each page's stream the latest.
type hub struct {
	team    Team
	refresh time.Duration
	log     hclog.Logger
	kick    chan struct{}

	mu   sync.Mutex
	subs map[chan *control.Status]struct{}
}

func newHub(t Team, refresh time.Duration, log hclog.Logger) *hub {
	return &hub{team: t, refresh: refresh, log: log, kick: make(chan struct{}, 1), subs: map[chan *control.Status]struct{}{}}
}

// notify asks for a fresh status; it never blocks (kicks coalesce).
func (h *hub) notify() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// subscribe returns a stream of statuses (the latest only, never
// blocking the hub) and asks for a fresh one; cancel ends it.
func (h *hub) subscribe() (<-chan *control.Status, func()) {
	ch := make(chan *control.Status, 1)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	h.notify()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

// run serves the subscribers until ctx ends. With none, it asks nothing.
// Between events it asks every refresh: a turn's age moves on, and a
// message to the human comes with no event of the daemon.
func (h *hub) run(ctx context.Context) {
	t := time.NewTimer(h.refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.kick:
		case <-t.C:
		}
		h.mu.Lock()
		n := len(h.subs)
		h.mu.Unlock()
		if n == 0 {
			t.Reset(h.refresh)
			continue
		}
		st, err := h.team.Status(ctx)
		if err != nil {
			h.log.Debug("Console cannot get the status", "error", err)
			t.Reset(h.refresh)
			continue
		}
		t.Reset(h.refresh)
		h.mu.Lock()
		for ch := range h.subs {
			select {
			case <-ch:
			default:
			}
			ch <- st
		}
		h.mu.Unlock()
	}
}

// renderCache keeps the live part rendered for the latest status, by
// page and CSRF token: the open pages of one session share one rendering.
type renderCache struct {
	mu   sync.Mutex
	st   *control.Status
	html map[string]string
}

// get returns the rendering of key for st, made by render when st is not
// the status rendered last or key was not rendered for it.
func (c *renderCache) get(st *control.Status, key string, render func() (string, error)) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st != st {
		c.st, c.html = st, map[string]string{}
	}
	if h, ok := c.html[key]; ok {
		return h, nil
	}
	h, err := render()
	if err == nil {
		c.html[key] = h
	}
	return h, err
}

// stream starts a server-sent events answer; flush sends what was
// written.
func stream(w http.ResponseWriter) (flush func() error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	return rc.Flush
}

// writeEvent writes one server-sent event named name whose data is data,
// a data line for each of its lines.
func writeEvent(w *bytes.Buffer, name, data string) {
	fmt.Fprintf(w, "event: %s\n", name)
	for _, line := range strings.Split(data, "\n") {
		w.WriteString("data: ")
		w.WriteString(strings.TrimRight(line, "\r"))
		w.WriteByte('\n')
	}
	w.WriteByte('\n')
}

// statusEvents streams the live part of the team page (with ?agent=NAME,
// of that agent's page; with ?page=inbox, landings or alerts, of that
// page; with ?page=landing&id=ID, of that landing request's) as "status" events, each the part's HTML rendered by the page's
// own template, each followed by a "badge" event: what waits for the
// human (see badge).
func (s *Server) statusEvents(w http.ResponseWriter, r *http.Request) {
	agent, page := r.URL.Query().Get("agent"), r.URL.Query().Get("page")
	if agent != "" {
		if _, _, ok := s.agentNamed(w, r, agent); !ok {
			return
		}
		page = "agent"
	}
	if page == "" {
		page = "team"
	}
	if _, ok := s.pages[page]; !ok {
		http.Error(w, "no such page", http.StatusNotFound)
		return
	}
	if page == "landing" {
		if _, _, ok := s.landingOf(w, r); !ok {
			return
		}
	}
	csrf := s.csrfOf(r)
	ch, cancel := s.hub.subscribe()
	defer cancel()
	flush := stream(w)
	ctx := r.Context()
	var b bytes.Buffer
	b.WriteString("retry: 2000\n\n")
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			return
		case st := <-ch:
			html, err := s.live.get(st, page+"\x00"+agent+"\x00"+csrf+"\x00"+r.URL.RawQuery, func() (string, error) {
				var html bytes.Buffer
				err := s.renderLive(&html, r, page, agent, csrf, st)
				return html.String(), err
			})
			if err != nil {
				s.cfg.Log.Warn("Console cannot render", "error", err)
				return
			}
			writeEvent(&b, "status", html)
			if badge, err := s.badgeJSON(st); err != nil {
				s.cfg.Log.Warn("Console cannot encode the badge", "error", err)
			} else {
				writeEvent(&b, "badge", badge)
			}
		}
		if _, err := w.Write(b.Bytes()); err != nil {
			return
		}
		if err := flush(); err != nil {
			return
		}
		b.Reset()
	}
}

// renderLive renders the live part of page (of agent, for its page) from
// st.
func (s *Server) renderLive(w *bytes.Buffer, r *http.Request, page, agent, csrf string, st *control.Status) error {
	var data any
	switch page {
	case "team":
		data = newTeamView(st, nil, csrf)
	case "agent":
		return s.agentLive(w, st, agent, csrf)
	case "inbox":
		data = s.inboxView(r, st)
	case "landings":
		v := newLandingsView(st)
		v.CSRF = csrf
		data = v
	case "alerts":
		data = s.alertsView(r, st)
	case "threads":
		data = s.threadsView(r, st, r.URL.Query().Get("agent-filter"))
	case "landing":
		id := r.URL.Query().Get("id")
		i := slices.IndexFunc(st.Landings, func(l control.LandingStatus) bool { return l.ID == id })
		if i < 0 {
			return fmt.Errorf("no landing request %q in the status", id)
		}
		data = s.landingView(r, st, newLandingRow(st.Landings[i]), csrf)
	}
	return s.pages[page].ExecuteTemplate(w, "live", data)
}

// transcriptEvents streams an agent's transcript: a "reset" event, its
// last lines, then each line as it is written, one "line" event each,
// cleaned as the panes show them.
func (s *Server) transcriptEvents(w http.ResponseWriter, r *http.Request) {
	_, a, ok := s.agentOf(w, r)
	if !ok {
		return
	}
	flush := stream(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	lines := &lineEvents{w: w, flush: flush, cancel: cancel}
	var b bytes.Buffer
	b.WriteString("retry: 2000\n\n")
	writeEvent(&b, "reset", "")
	if _, err := w.Write(b.Bytes()); err != nil || flush() != nil {
		return
	}
	clean := ptylog.NewCleanWriter(lines, false)
	t := &logtail.Tail{Path: s.cfg.Team.Transcript(a.Name), Label: "transcript of " + a.Name, Out: clean}
	if err := t.Follow(ctx, transcriptLines, s.cfg.Rescan); err != nil && ctx.Err() == nil {
		s.cfg.Log.Warn("Console cannot follow a transcript", "agent", a.Name, "error", err)
	}
}

// lineEvents writes each whole line written to it as a "line" event and
// flushes it; a failed write (the browser went away) cancels the stream.
type lineEvents struct {
	w      http.ResponseWriter
	flush  func() error
	cancel func()
	part   []byte
	buf    bytes.Buffer
}

// Write implements io.Writer. It reports p written whole: a browser gone
// ends the stream through cancel, not through the tail's error.
func (l *lineEvents) Write(p []byte) (int, error) {
	l.part = append(l.part, p...)
	l.buf.Reset()
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		writeEvent(&l.buf, "line", string(l.part[:i]))
		l.part = l.part[i+1:]
	}
	if l.buf.Len() == 0 {
		return len(p), nil
	}
	if _, err := l.w.Write(l.buf.Bytes()); err != nil {
		l.cancel()
		return len(p), nil
	}
	if err := l.flush(); err != nil {
		l.cancel()
	}
	return len(p), nil
}
