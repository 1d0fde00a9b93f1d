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
// outcomes, alerts) and the human's inbox. It is owned by Run, which
// starts run and ends it with the context.
type follower struct {
	layout project.Layout
	store  *inbox.Store
	human  *inbox.Box
	print  *printer
	// answered receives the architect's answer to the human (once);
	// failed receives what went wrong when the team cannot finish.
	answered chan string
	failed   chan string

	off      int64
	partial  []byte
	seen     map[string]bool // human-inbox messages printed
	answerOK bool
	busy     map[string]int // agent → deliveries without a turn outcome yet

	mu      sync.Mutex
	settled chan struct{} // closed once the answer is in and no turn runs
}

func newFollower(l project.Layout, p *printer) (*follower, error) {
	store, err := l.OpenInboxes()
	if err != nil {
		return nil, err
	}
	human, err := store.Box(scriptedmodel.Human)
	if err != nil {
		return nil, err
	}
	return &follower{layout: l, store: store, human: human, print: p,
		answered: make(chan string, 1), failed: make(chan string, 1), seen: map[string]bool{},
		busy: map[string]int{}, settled: make(chan struct{})}, nil
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
	if f.answerOK && f.idle() {
		f.mu.Lock()
		select {
		case <-f.settled:
		default:
			close(f.settled)
		}
		f.mu.Unlock()
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

// awaitSettled waits until the answer is in and no turn runs, for at most
// max or until ctx ends.
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
	str := func(k string) string { s, _ := ev.Data[k].(string); return s }
	switch ev.Type {
	case eventlog.EvDelivered:
		f.busy[ev.Agent]++
		what := "message"
		if str("in_reply_to") != "" {
			what = "reply"
		}
		f.print.linef("batty delivers %s's %s to %s", str("from"), what, ev.Agent)
	case eventlog.EvTurnFinished:
		if f.busy[ev.Agent] > 0 {
			f.busy[ev.Agent]--
		}
		status := str("status")
		ms, _ := ev.Data["duration_ms"].(float64)
		if status == "completed" {
			f.print.linef("%s finished its turn (%.1fs)", ev.Agent, ms/1000)
			return
		}
		if req, _ := ev.Data["requeued"].(bool); req {
			f.print.linef("%s: turn %s, the message waits for a retry: %s", ev.Agent, status, ev.Detail)
			return
		}
		f.fail(fmt.Sprintf("%s's turn %s (%s): %s", ev.Agent, status, str("failure"), ev.Detail))
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
	if m.From == scriptedmodel.RoleArchitect && strings.HasPrefix(body, scriptedmodel.AnswerHeading) && !f.answerOK {
		f.answerOK = true
		f.answered <- body
	}
}

// fail prints why the team cannot finish and reports it (once).
func (f *follower) fail(why string) {
	f.print.linef("✗ %s", why)
	select {
	case f.failed <- why:
	default:
	}
}
