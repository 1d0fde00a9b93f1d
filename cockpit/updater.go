package cockpit

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Snapshot is the state the pane titles show.
type Snapshot struct {
	Feed   FeedView
	Agents []AgentView
}

// UpdaterOptions tune an Updater; zero fields take the defaults.
type UpdaterOptions struct {
	// MinGap is the least time between two tmux invocations (default
	// 250ms): changes within it are coalesced into the next one.
	MinGap time.Duration
	// Refresh re-renders the titles this often even without a change, for
	// the ages ("working 2m") and backlogs that move without an event
	// (default 30s). A refresh that changes nothing costs no tmux call.
	Refresh time.Duration
	// AlertFor is how long an alert stays on attached clients (default 10s).
	AlertFor time.Duration
	// Logger receives failures (default: discarded).
	Logger hclog.Logger
}

// Updater keeps the pane titles of a session in step with the team and
// shows alerts to attached clients. Changed and Alert never block; Run
// owns the tmux invocations and batches them: however many changes arrive,
// titles are written at most once per MinGap, each time in one invocation
// that sets every title that changed (plus, with alerts, one that lists the
// attached clients).
type Updater struct {
	srv     Server
	session string
	source  func() Snapshot
	opts    UpdaterOptions
	log     hclog.Logger

	kick chan struct{} // buffered(1)

	// owned by Run
	panes   *Session
	applied map[string]string // pane id → title set
}

// NewUpdater returns an updater for session on srv; source returns the
// state to show and is called from Run's goroutine only.
func NewUpdater(srv Server, session string, source func() Snapshot, opts UpdaterOptions) *Updater {
	if opts.MinGap <= 0 {
		opts.MinGap = 250 * time.Millisecond
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 30 * time.Second
	}
	if opts.AlertFor <= 0 {
		opts.AlertFor = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return &Updater{srv: srv, session: session, source: source, opts: opts, log: opts.Logger,
		kick: make(chan struct{}, 1), applied: map[string]string{}}
}

// Changed says that the state may have changed; it never blocks.
func (u *Updater) Changed() {
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

// Run applies changes until ctx ends: it writes the titles at once, then
// after each change (at most once per MinGap) and every Refresh.
func (u *Updater) Run(ctx context.Context) {
	refresh := time.NewTicker(u.opts.Refresh)
	defer refresh.Stop()
	var last time.Time
	u.Flush(ctx)
	last = time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-refresh.C:
		case <-u.kick:
			if wait := u.opts.MinGap - time.Since(last); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			// Whatever arrived while waiting is in this flush.
			select {
			case <-u.kick:
			default:
			}
		}
		u.Flush(ctx)
		last = time.Now()
	}
}

// Flush writes every title that changed, in one invocation (none when nothing changed). Only Run calls it,
// or a caller that does not run Run.
func (u *Updater) Flush(ctx context.Context) {
	if u.panes == nil {
		p, err := u.srv.Find(ctx, u.session)
		if err != nil {
			u.log.Debug("Cockpit session not found", "session", u.session, "error", err)
			return
		}
		u.panes = p
		clear(u.applied)
	}
	snap := u.source()
	var cmds [][]string
	set := func(pane, title string) {
		if pane == "" || u.applied[pane] == title {
			return
		}
		cmds = append(cmds, []string{"select-pane", "-t", pane, "-T", tmuxArg(title)})
	}
	titles := map[string]string{}
	if u.panes.Feed != "" {
		titles[u.panes.Feed] = FeedTitle(snap.Feed)
		set(u.panes.Feed, titles[u.panes.Feed])
	}
	for _, a := range snap.Agents {
		if id := u.panes.Panes[a.Name]; id != "" {
			titles[id] = Title(a)
			set(id, titles[id])
		}
	}
	if len(cmds) == 0 {
		return
	}
	if _, err := u.srv.Run.Run(ctx, join(cmds)...); err != nil {
		u.log.Warn("Updating the cockpit failed", "session", u.session, "error", err)
		u.panes = nil // find the panes again next time
		return
	}
	for id, t := range titles {
		u.applied[id] = t
	}
}

// ShowAlerts shows texts (cleaned, joined) on every client attached to the
// session, in one invocation after the one that lists them; none when no
// client is attached. It blocks for tmux; safe alongside Run.
func (u *Updater) ShowAlerts(ctx context.Context, texts []string) {
	cleaned := make([]string, len(texts))
	for i, t := range texts {
		cleaned[i] = clean(t)
	}
	cmds := u.alertCmds(ctx, cleaned)
	if len(cmds) == 0 {
		return
	}
	if _, err := u.srv.Run.Run(ctx, join(cmds)...); err != nil {
		u.log.Warn("Showing cockpit alerts failed", "session", u.session, "error", err)
	}
}

// alertCmds returns the display-message commands showing alerts on every
// client attached to the session or to a session grouped with it (as
// `batty attach` from inside tmux makes; none when none is attached).
func (u *Updater) alertCmds(ctx context.Context, alerts []string) [][]string {
	out, err := u.srv.Run.Run(ctx, "list-clients", "-F", "#{client_name}",
		"-f", "#{||:#{==:#{session_name},"+u.session+"},#{==:#{session_group},"+u.session+"}}")
	if err != nil {
		u.log.Debug("Listing cockpit clients failed", "error", err)
		return nil
	}
	// display-message expands formats: "#" must be doubled.
	msg := strings.ReplaceAll(strings.Join(alerts, " | "), "#", "##")
	ms := (u.opts.AlertFor + time.Millisecond - 1) / time.Millisecond
	var cmds [][]string
	for c := range strings.FieldsSeq(out) {
		cmds = append(cmds, []string{"display-message", "-c", c, "-d", strconv.FormatInt(int64(ms), 10), tmuxArg(msg)})
	}
	return cmds
}
