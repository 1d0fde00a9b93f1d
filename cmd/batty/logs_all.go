package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/battyhq/batty/logtail"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/ptylog"
	"github.com/battyhq/batty/safetext"
)

// logLine is one line of one agent's transcript.
type logLine struct {
	agent string
	text  string    // without its newline
	at    time.Time // its stamp, or that of the line before it in its transcript
	done  bool      // not a line: the agent's history was all sent (with -f)
}

// lineSplitter is the io.Writer a logtail.Tail prints one transcript into:
// it cuts the bytes into lines and hands each to emit with its time. A
// line without a stamp (an older transcript, text an agent wrote into the
// file) takes the time of the line before it, so it stays where it was.
type lineSplitter struct {
	agent   string
	emit    func(logLine) error
	last    time.Time
	partial []byte
}

// Write hands every complete line of p (with what was held before) to
// emit and holds the end of p after its last newline.
func (s *lineSplitter) Write(p []byte) (int, error) {
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(s.partial[:i])
		s.partial = s.partial[i+1:]
		if err := s.line(line); err != nil {
			return 0, err
		}
	}
}

// Flush hands on the line held back (a last line without a newline).
func (s *lineSplitter) Flush() error {
	if len(s.partial) == 0 {
		return nil
	}
	line := string(s.partial)
	s.partial = nil
	return s.line(line)
}

func (s *lineSplitter) line(text string) error {
	if at, ok := ptylog.ParseStamp(text); ok {
		s.last = at
	}
	return s.emit(logLine{agent: s.agent, text: text, at: s.last})
}

// mergeLines returns the lines of several transcripts, each in its own
// order, in time order: stable, so a transcript's lines keep their order
// and lines of one time keep the order of lines. It keeps only the last n
// (all when n is negative). It is a pure function.
func mergeLines(lines []logLine, n int) []logLine {
	out := slices.Clone(lines)
	slices.SortStableFunc(out, func(a, b logLine) int { return a.at.Compare(b.at) })
	if n >= 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// agentPalette holds the colours of agent names in `batty logs --all`:
// the ones readable on both dark and light backgrounds.
var agentPalette = [...]string{
	"\x1b[36m", "\x1b[33m", "\x1b[32m", "\x1b[35m", "\x1b[34m",
	"\x1b[96m", "\x1b[93m", "\x1b[92m", "\x1b[95m", "\x1b[94m",
}

// agentColour returns the colour of an agent's name: a hash of the name
// into agentPalette, so an agent keeps its colour from run to run. It is a
// pure function.
func agentColour(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return agentPalette[h.Sum32()%uint32(len(agentPalette))]
}

// allFormatter renders merged transcript lines as `docker compose logs`
// does: the agent's name, padded to the longest name, and " | ", then the
// line cleaned (its stamp shown as the time of day).
type allFormatter struct {
	width  int  // the longest agent name
	colour bool // colour the names and keep the transcripts' colours
}

// format renders one line, with its newline. It is a pure function.
func (f allFormatter) format(l logLine) string {
	clean := safetext.Text
	if f.colour {
		clean = safetext.Styled
	}
	// Text from a transcript ends its line here: a CR or an escape in it
	// neither moves the cursor nor styles the next line.
	text := ptylog.ShortStamps(clean(l.text))
	text = strings.ReplaceAll(text, "\n", " ")
	name := l.agent + strings.Repeat(" ", max(0, f.width-len(l.agent)))
	if !f.colour {
		return name + " | " + text + "\n"
	}
	return agentColour(l.agent) + name + " |" + styleReset + " " + text + styleReset + "\n"
}

// styleReset ends a colour.
const styleReset = "\x1b[0m"

// allLogs prints, and with follow follows, the transcripts of agents.
type allLogs struct {
	layout project.Layout
	agents []string
	lines  int // the last lines of the merged history printed
	out    io.Writer
	notice io.Writer
	dim    bool // notices dim
	form   allFormatter
	rescan time.Duration
}

// tail returns the Tail of an agent's transcript printing into out.
func (a *allLogs) tail(agent string, out io.Writer) *logtail.Tail {
	return &logtail.Tail{
		Path:       a.layout.Transcript(agent),
		Label:      "transcript for " + agent,
		Out:        out,
		Notice:     a.notice,
		DimNotices: a.dim,
	}
}

// print writes the last a.lines lines of the transcripts, merged in time
// order. It reads only the end of each transcript.
func (a *allLogs) print() error {
	var lines []logLine
	found := false
	for _, agent := range a.agents {
		s := &lineSplitter{agent: agent, emit: func(l logLine) error { lines = append(lines, l); return nil }}
		err := a.tail(agent, s).PrintLast(a.lines)
		if errors.Is(err, logtail.ErrNoFile) {
			continue
		}
		if err != nil {
			return err
		}
		found = true
		if err := s.Flush(); err != nil {
			return err
		}
	}
	if !found && a.notice != nil {
		fmt.Fprintf(a.notice, "batty: no transcripts yet (%s)\n", a.layout.LogsDir())
	}
	return a.write(mergeLines(lines, a.lines))
}

// write prints lines.
func (a *allLogs) write(lines []logLine) error {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(a.form.format(l))
	}
	if _, err := io.WriteString(a.out, b.String()); err != nil {
		return fmt.Errorf("write the transcripts: %w", err)
	}
	return nil
}

// follow prints the merged history as print does, then every line written
// later, as it comes, until ctx is done (it then returns nil). It runs one
// follower per agent, each on a goroutine it owns and waits for, and
// follows transcripts that do not exist yet as they appear.
func (a *allLogs) follow(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait() // deferred first, so it runs after cancel: every follower ends
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan logLine, 256)
	errs := make(chan error, len(a.agents))
	send := func(l logLine) error {
		select {
		case ch <- l:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, agent := range a.agents {
		s := &lineSplitter{agent: agent, emit: send}
		t := a.tail(agent, s)
		t.HistoryDone = func() { _ = send(logLine{agent: agent, done: true}) }
		wg.Go(func() {
			err := t.Follow(ctx, a.lines, a.rescan)
			if ctx.Err() == nil && err != nil {
				errs <- err
			}
		})
	}
	var history []logLine
	waiting := len(a.agents) // agents whose history is not all here
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			return err
		case l := <-ch:
			switch {
			case waiting == 0:
				if err := a.write([]logLine{l}); err != nil {
					return err
				}
			case l.done:
				if waiting--; waiting == 0 {
					if err := a.write(mergeLines(history, a.lines)); err != nil {
						return err
					}
					history = nil
				}
			default:
				history = append(history, l)
			}
		}
	}
}
