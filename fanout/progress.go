package fanout

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/textclip"
)

// Progress shows a job's progress on w: on a terminal one line (a bar,
// then Line) redrawn at most DrawEvery; otherwise a line every LineEvery, when a pause begins or
// ends, when rows move to another account, and when rows stop starting. Update is safe for concurrent use;
// Run owns the redrawing and returns when ctx ends.
type Progress struct {
	w   io.Writer
	tty bool
	// DrawEvery and LineEvery: see Progress.
	DrawEvery, LineEvery time.Duration
	// Width, if set, returns the terminal's width in columns (0: unknown);
	// a redrawn line is cut to fit, since a line that wraps is not
	// redrawn in place but scrolls a new one every DrawEvery.
	Width func() int

	mu       sync.Mutex
	snap     Snapshot
	dirty    bool
	lastLine time.Time
	noted    string // the pause/account/stop state last written as a line
	drawn    bool   // a terminal line is on screen
}

// NewProgress returns a Progress writing to w, a terminal when tty is set.
func NewProgress(w io.Writer, tty bool) *Progress {
	return &Progress{w: w, tty: tty, DrawEvery: 100 * time.Millisecond, LineEvery: 10 * time.Second}
}

// Update records the job's state; it never blocks on w.
func (p *Progress) Update(s Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.snap, p.dirty = s, true
}

// Run redraws until ctx ends.
func (p *Progress) Run(ctx context.Context) {
	every := p.LineEvery
	if p.tty {
		every = p.DrawEvery
	}
	// Checks of the pause state come often, lines only every LineEvery.
	t := time.NewTicker(min(every, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			p.tick(now)
		}
	}
}

func (p *Progress) tick(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		line := Bar(p.snap, barWidth) + " " + Line(p.snap, now)
		if p.Width != nil {
			line = fit(line, p.Width()-1)
		}
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		p.drawn = true
		return
	}
	state := p.snap.Stopping
	if p.snap.Account != "" {
		state += "\x00account " + p.snap.Account
	}
	if !p.snap.PausedUntil.IsZero() {
		state += "\x00paused"
	}
	if state != p.noted || (p.dirty && now.Sub(p.lastLine) >= p.LineEvery) {
		fmt.Fprintf(p.w, "%s\n", Line(p.snap, now))
		p.noted, p.lastLine, p.dirty = state, now, false
	}
}

// Final ends the progress display with the run's summary.
func (p *Progress) Final(s Summary, out string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	fmt.Fprintln(p.w, SummaryLine(s, out))
}

// Line is one progress line: done / failed / running / total, rate, ETA,
// tokens, the account rows run on (with several), and the pause or stop
// state. It is a pure function.
func Line(s Snapshot, now time.Time) string {
	var b strings.Builder
	todo := s.Total - s.Skipped
	finished := s.Done + s.Failed
	fmt.Fprintf(&b, "fanout: %d/%d done, %d failed, %d running", s.Done, todo, s.Failed, s.Running)
	if s.Skipped > 0 {
		fmt.Fprintf(&b, " (%d done before)", s.Skipped)
	}
	el := now.Sub(s.Started)
	if finished > 0 && el > 0 {
		rate := float64(finished) / el.Minutes()
		fmt.Fprintf(&b, " · %.1f rows/min", rate)
		if left := todo - finished; left > 0 && s.Stopping == "" {
			eta := time.Duration(float64(left) / rate * float64(time.Minute))
			fmt.Fprintf(&b, " · ETA %s", statusview.Duration(eta.Round(time.Second), time.Second))
		}
	}
	fmt.Fprintf(&b, " · %s tokens", statusview.Tokens(s.Tokens))
	if s.Account != "" {
		fmt.Fprintf(&b, " · account %s", s.Account)
	}
	switch {
	case s.Stopping != "":
		fmt.Fprintf(&b, " · stopping: %s", s.Stopping)
	case s.Probing:
		b.WriteString(" · usage limit: one row tries whether it has lifted")
	case !s.PausedUntil.IsZero():
		fmt.Fprintf(&b, " · paused by a usage limit until %s", s.PausedUntil.Local().Format("15:04:05"))
	}
	return b.String()
}

// barWidth is the width of the terminal's progress bar between its brackets.
const barWidth = 20

// Bar draws the share of this run's rows finished as a bar of width
// cells: "[####--------]", done rows as '#', failed ones as 'x'. It is a
// pure function.
func Bar(s Snapshot, width int) string {
	todo := s.Total - s.Skipped
	done, failed := width, 0
	if todo > 0 {
		done = s.Done * width / todo
		failed = min((s.Done+s.Failed)*width/todo-done, width-done)
	}
	return "[" + strings.Repeat("#", done) + strings.Repeat("x", failed) + strings.Repeat("-", width-done-failed) + "]"
}

// SummaryLine is the final line of a run.
func SummaryLine(s Summary, out string) string {
	line := fmt.Sprintf("fanout: %d of %d rows done, %d failed, %d pending (this run: %d done, %d failed, %s tokens); output %s",
		s.AllDone, s.Total, s.AllFailed, s.Pending, s.Done, s.Failed, statusview.Tokens(s.Tokens), out)
	if s.Runtime != "" {
		line += "; runtime " + s.Runtime
	}
	if s.AllFailed > 0 && s.SameError == "" {
		line += fmt.Sprintf("\nfanout: most common error (%d of %d failed rows): %s", s.CommonErrorRows, s.AllFailed, oneLine(s.CommonError, 300))
	}
	switch {
	case s.SameError != "":
		line += fmt.Sprintf("\nfanout: stopped early: the first %d rows finished all failed with the same error, so %d rows were not started: %s", SameErrorRows, s.Pending, oneLine(s.SameError, 300)) +
			"\nfanout: fix the cause and run the same command again (the failed and pending rows run), or add --keep-going to run every row whatever fails"
	case s.Budget:
		line += "\nfanout: stopped: " + s.Stopping + "; run the command again with a higher --max-tokens to continue"
	case s.Stopping != "":
		line += "\nfanout: stopped: " + s.Stopping + "; run the same command again to continue"
	case s.AllFailed > 0:
		line += "\nfanout: run the same command again to retry the failed rows"
	}
	return line
}

// fit cuts s to at most n characters, the last one "…" when cut (n < 1:
// no limit). It is a pure function.
func fit(s string, n int) string {
	if n < 1 {
		return s
	}
	return textclip.Runes(s, n, textclip.Ellipsis)
}
