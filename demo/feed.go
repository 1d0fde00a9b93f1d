package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/scriptedmodel"
	"github.com/battyhq/batty/textclip"
	"github.com/battyhq/batty/workspaces"
)

// printer writes the demo's feed, one line at a time, each prefixed with
// the time since the demo started. While held (the cockpit is attached to
// the terminal) lines are kept and written at release. Safe for
// concurrent use.
type printer struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
	held  bool
	queue []string
}

func newPrinter(out io.Writer) *printer { return &printer{out: out, start: time.Now()} }

// linef writes one feed line (continuation lines of a multi-line text are
// indented under it). The text quotes events, messages and the model's
// steps, so it is made safe for the terminal first (safetext.Text).
func (p *printer) linef(format string, args ...any) {
	text := safetext.Text(fmt.Sprintf(format, args...))
	text = strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", "\n         ")
	p.mu.Lock()
	line := fmt.Sprintf("%6.1fs  %s\n", time.Since(p.start).Seconds(), text)
	defer p.mu.Unlock()
	if p.held {
		p.queue = append(p.queue, line)
		return
	}
	_, _ = io.WriteString(p.out, line)
}

// plainf writes text as it is, without a time prefix.
func (p *printer) plainf(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		p.queue = append(p.queue, text)
		return
	}
	_, _ = io.WriteString(p.out, text)
}

// restart counts the time of later lines from now.
func (p *printer) restart() { p.mu.Lock(); p.start = time.Now(); p.mu.Unlock() }

// hold starts keeping lines back; release writes them and stops.
func (p *printer) hold() { p.mu.Lock(); p.held = true; p.mu.Unlock() }

func (p *printer) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = false
	for _, l := range p.queue {
		_, _ = io.WriteString(p.out, l)
	}
	p.queue = nil
}

// stepLine describes a step of the stand-in model for the feed, and
// reports whether it is a failure.
func stepLine(st scriptedmodel.Step) string {
	who := st.Agent
	if who == "" {
		who = "an agent"
	}
	switch {
	case st.Failed:
		return fmt.Sprintf("%s (model): %s", who, st.Text)
	case st.Shell != "":
		return fmt.Sprintf("%s (model) runs: %s", who, safetext.Line(st.Shell, 110))
	default:
		return fmt.Sprintf("%s (model) ends its turn: %q", who, safetext.Line(st.Text, 100))
	}
}

// follower watches a running team: the event log (deliveries, turn
// outcomes, its worktrees' commits and landings, alerts) and the human's
// inbox. It is owned by Run, which starts run and ends it with the
// context; progress may be called from any goroutine.
type follower struct {
	layout project.Layout
	store  *inbox.Store
	human  *inbox.Box
	print  *printer
	// answered receives the architect's answer to the human (once);
	// landedAll is closed once every branch the demo waits for landed;
	// failed receives what went wrong when the team cannot finish.
	answered  chan string
	landedAll chan struct{}
	failed    chan string

	off     int64
	partial []byte
	seen    map[string]bool // human-inbox messages printed
	busy    map[string]int  // agent → deliveries without a turn outcome yet

	mu       sync.Mutex
	answerOK bool
	landed   map[string]bool // branch the demo waits for → it landed
	settled  chan struct{}   // closed once the answer is in, every branch landed and no turn runs
}

// newFollower returns the follower of the team in l, printing to p, that
// waits for each of branches to land (none: landedAll is closed at once).
func newFollower(l project.Layout, p *printer, branches []string) (*follower, error) {
	store, err := l.OpenInboxes()
	if err != nil {
		return nil, err
	}
	human, err := store.Box(scriptedmodel.Human)
	if err != nil {
		return nil, err
	}
	f := &follower{layout: l, store: store, human: human, print: p,
		answered: make(chan string, 1), landedAll: make(chan struct{}), failed: make(chan string, 1), seen: map[string]bool{},
		busy: map[string]int{}, landed: map[string]bool{}, settled: make(chan struct{})}
	for _, b := range branches {
		f.landed[b] = false
	}
	if len(branches) == 0 {
		close(f.landedAll)
	}
	return f, nil
}

// landings returns how many of the branches the demo waits for landed, and
// how many it waits for. The caller holds f.mu.
func (f *follower) landings() (done, want int) {
	for _, ok := range f.landed {
		if ok {
			done++
		}
	}
	return done, len(f.landed)
}

// progress says how far the team got towards the end of the demo: whether
// the architect's answer is in and how many branches landed. Safe for
// concurrent use.
func (f *follower) progress() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	answer := "the architect's answer is not in"
	if f.answerOK {
		answer = "the architect's answer is in"
	}
	done, want := f.landings()
	if want == 0 {
		return answer
	}
	return fmt.Sprintf("%s, %d of %d branches landed", answer, done, want)
}

// run reports what happens until ctx ends. File system events on the state
// directory and the human's inbox wake it; a rescan every second is the
// safety net for missed events.
func (f *follower) run(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch the demo team: %w", err)
	}
	defer w.Close()
	for _, d := range []string{f.layout.Dir, filepath.Join(f.human.Dir, "new")} {
		if err := w.Add(d); err != nil {
			return fmt.Errorf("watch %s: %w", d, err)
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		f.scan()
		select {
		case <-ctx.Done():
			f.scan()
			return nil
		case <-w.Events:
		case err := <-w.Errors:
			if err != nil && !errors.Is(err, fsnotify.ErrEventOverflow) {
				return fmt.Errorf("watch the demo team: %w", err)
			}
		case <-tick.C:
		}
	}
}

// scan prints the events appended since the last scan and the human's new
// messages.
func (f *follower) scan() {
	f.readEvents()
	msgs, _ := f.human.Pending()
	for _, m := range msgs {
		if f.seen[m.ID] {
			continue
		}
		f.seen[m.ID] = true
		f.humanMessage(m)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	done, want := f.landings()
	if f.answerOK && done == want && f.idle() {
		select {
		case <-f.settled:
		default:
			close(f.settled)
		}
	}
}

// idle reports whether every delivered message has its turn outcome.
func (f *follower) idle() bool {
	for _, n := range f.busy {
		if n > 0 {
			return false
		}
	}
	return true
}

// awaitSettled waits until the answer is in, every branch landed and no
// turn runs, for at most max or until ctx ends.
func (f *follower) awaitSettled(ctx context.Context, max time.Duration) {
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-f.settled:
	case <-t.C:
	case <-ctx.Done():
	}
}

// readEvents prints the complete lines appended to events.jsonl.
func (f *follower) readEvents() {
	file, err := os.Open(f.layout.EventsLog())
	if err != nil {
		return
	}
	defer file.Close()
	if _, err := file.Seek(f.off, io.SeekStart); err != nil {
		return
	}
	b, err := io.ReadAll(io.LimitReader(file, 16<<20))
	if err != nil {
		return
	}
	f.off += int64(len(b))
	f.partial = append(f.partial, b...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			break
		}
		if ev, err := eventlog.Decode(f.partial[:i]); err == nil {
			f.event(ev)
		}
		f.partial = f.partial[i+1:]
	}
}

// event prints one event of the daemon worth seeing.
func (f *follower) event(ev eventlog.Event) {
	switch ev.Type {
	case eventlog.EvDelivered:
		d, _ := ev.Data.(eventlog.Delivered)
		f.busy[ev.Agent]++
		what := "message"
		if d.InReplyTo != "" {
			what = "reply"
		}
		f.print.linef("batty delivers %s's %s to %s", d.From, what, ev.Agent)
	case eventlog.EvTurnFinished:
		if f.busy[ev.Agent] > 0 {
			f.busy[ev.Agent]--
		}
		d, _ := ev.Data.(eventlog.TurnFinished)
		if d.Status == "completed" {
			f.print.linef("%s finished its turn (%.1fs)", ev.Agent, float64(d.DurationMS)/1000)
			return
		}
		if d.Requeued {
			f.print.linef("%s: turn %s, the message waits for a retry: %s", ev.Agent, d.Status, ev.Detail)
			return
		}
		f.fail(fmt.Sprintf("%s's turn %s (%s): %s", ev.Agent, d.Status, d.Failure, ev.Detail))
	case eventlog.EvWorkspaceCreated, eventlog.EvWorkspaceCommitted, eventlog.EvLandingQueued, eventlog.EvLanded,
		eventlog.EvLandingWaiting, eventlog.EvLandingFailed, eventlog.EvWorkspaceSynced, eventlog.EvWorkspaceConflict:
		f.workspaceEvent(ev)
	case eventlog.EvAgentFailed, eventlog.EvAgentParked, eventlog.EvAuthRequired, eventlog.EvQuotaBlocked, eventlog.EvRejected:
		f.fail(fmt.Sprintf("%s %s: %s", ev.Type, ev.Agent, ev.Detail))
	case eventlog.EvWarning, eventlog.EvWedged:
		f.print.linef("warning (%s): %s", ev.Agent, ev.Detail)
	}
}

// humanMessage prints a message that reached the human's inbox and
// recognises the architect's answer.
func (f *follower) humanMessage(m inbox.Message) {
	body := m.Body
	if m.BodyFile != "" {
		if whole, err := f.human.FullBody(m); err == nil {
			body = whole
		}
	}
	f.print.linef("%s → human (your inbox):\n%s", m.From, strings.TrimSpace(body))
	if m.From != scriptedmodel.RoleArchitect || !strings.HasPrefix(body, scriptedmodel.AnswerHeading) {
		return
	}
	f.mu.Lock()
	first := !f.answerOK
	f.answerOK = true
	f.mu.Unlock()
	if first {
		f.answered <- body
	}
}

// workspaceEvent prints an event of the worktrees and the merge queue,
// counts the landings the demo waits for, and fails the demo when a
// landing failed.
func (f *follower) workspaceEvent(ev eventlog.Event) {
	// branch is the branch an event names, the agent's when it names none.
	branch := func(b string) string {
		if b == "" {
			return workspaces.Branch(ev.Agent)
		}
		return b
	}
	switch ev.Type {
	case eventlog.EvWorkspaceCreated:
		d, _ := ev.Data.(eventlog.WorkspaceCreated)
		where := ev.Detail
		if rel, err := filepath.Rel(f.layout.Dir, where); err == nil && !strings.HasPrefix(rel, "..") {
			where = "in the state directory (" + rel + ")"
		} else if rel, err := filepath.Rel(f.layout.Root(), where); err == nil && !strings.HasPrefix(rel, "..") {
			where = rel
		}
		f.print.linef("batty makes %s's worktree %s, on branch %s from %s", ev.Agent, where, branch(d.Branch), d.Base)
	case eventlog.EvWorkspaceCommitted:
		d, _ := ev.Data.(eventlog.WorkspaceCommitted)
		if d.WIP {
			f.print.linef("batty commits %s's unfinished work on %s (%s): %s", ev.Agent, branch(d.Branch), shortCommit(d.Commit), ev.Detail)
			return
		}
		f.print.linef("batty commits %s's turn on %s (%s)", ev.Agent, branch(d.Branch), shortCommit(d.Commit))
	case eventlog.EvLandingQueued:
		d, _ := ev.Data.(eventlog.LandingQueued)
		f.print.linef("batty queues %s for landing (asked by %s)", branch(d.Branch), d.By)
	case eventlog.EvLanded:
		d, _ := ev.Data.(eventlog.Landed)
		if d.Nothing {
			f.print.linef("batty has nothing to land: %s", ev.Detail)
			return
		}
		b := branch(d.Branch)
		f.mu.Lock()
		if _, ok := f.landed[b]; ok {
			f.landed[b] = true
		}
		done, want := f.landings()
		f.mu.Unlock()
		f.print.linef("batty lands %s on %s (%s): the merge passed verify", b, d.Base, shortCommit(d.Commit))
		if want > 0 && done == want {
			select {
			case <-f.landedAll:
			default:
				close(f.landedAll)
			}
		}
	case eventlog.EvLandingWaiting:
		f.print.linef("the landing of %s waits: %s", branch(""), ev.Detail)
	case eventlog.EvLandingFailed:
		d, _ := ev.Data.(eventlog.LandingFailed)
		why := fmt.Sprintf("batty could not land %s on %s: %s", branch(d.Branch), d.Base, ev.Detail)
		if out := strings.TrimSpace(d.Output); out != "" {
			why += "\n" + textclip.Bytes(out, 600, textclip.Ellipsis)
		}
		f.fail(why)
	case eventlog.EvWorkspaceSynced:
		f.print.linef("batty keeps %s's worktree up to date: %s", ev.Agent, ev.Detail)
	case eventlog.EvWorkspaceConflict:
		f.print.linef("warning (%s): %s", ev.Agent, ev.Detail)
	}
}

// shortCommit is the abbreviation of a commit id the feed shows.
func shortCommit(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// fail prints why the team cannot finish and reports it (once).
func (f *follower) fail(why string) {
	f.print.linef("✗ %s", why)
	select {
	case f.failed <- why:
	default:
	}
}
