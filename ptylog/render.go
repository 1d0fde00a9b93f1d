package ptylog

import (
	"strconv"
	"strings"
	"time"
)

// Layout constants.
const (
	timeLayout   = "15:04:05" // the time shown: in the Tail ring, and by ShortStamps
	headerLayout = "2006-01-02 15:04:05"
	maxLineRunes = 400 // longer output/command lines are cut
	headLines    = 10  // output lines shown before the omission note
	tailLines    = 10  // output lines shown after it
	ruleWidth    = 72
)

// ANSI styles. These are the only escape sequences a transcript contains.
const (
	styleReset    = "\x1b[0m"
	styleBold     = "\x1b[1m"
	styleDim      = "\x1b[2m"
	styleRed      = "\x1b[31m"
	styleGreen    = "\x1b[32m"
	styleYellow   = "\x1b[33m"
	styleMagenta  = "\x1b[35m"
	styleCyan     = "\x1b[36m"
	styleBoldCyan = "\x1b[1;36m"
)

// seg is a run of text in one style ("" = terminal default).
type seg struct{ style, text string }

// rline is one rendered line: out goes to the file (after the full time,
// StampLayout), plain to the Tail ring (after the time of day).
type rline struct{ out, plain string }

// renderLine renders one line written at t.
func renderLine(color bool, t time.Time, segs ...seg) rline {
	ts, stamp := t.Format(timeLayout), t.Format(StampLayout)
	n := 1
	for _, s := range segs {
		n += len(s.text)
	}
	var text strings.Builder
	text.Grow(n)
	text.WriteByte(' ')
	for _, s := range segs {
		text.WriteString(s.text)
	}
	plain := ts + text.String()
	if !color {
		return rline{out: stamp + text.String(), plain: plain}
	}
	var out strings.Builder
	out.Grow(len(stamp) + n + (len(segs)+1)*8)
	out.WriteString(styleDim)
	out.WriteString(stamp)
	out.WriteString(styleReset)
	out.WriteByte(' ')
	for _, s := range segs {
		if s.style == "" || s.text == "" {
			out.WriteString(s.text)
			continue
		}
		out.WriteString(s.style)
		out.WriteString(s.text)
		out.WriteString(styleReset)
	}
	return rline{out: out.String(), plain: plain}
}

// renderer accumulates the lines of one event, all with one time.
type renderer struct {
	color bool
	at    time.Time
	lines []rline
}

func (w *Writer) renderer() *renderer {
	return &renderer{color: w.color, at: w.now()}
}

func (r *renderer) add(segs ...seg) {
	r.lines = append(r.lines, renderLine(r.color, r.at, segs...))
}

// block adds text (already cleaned) line by line: first prefixes the first
// line, cont the others, and style applies to the text.
func (r *renderer) block(first, cont seg, style, text string) {
	prefix := first
	for ln := range strings.SplitSeq(text, "\n") {
		r.add(prefix, seg{style, ln})
		prefix = cont
	}
}

// headTail adds the first headLines and last tailLines of text (already
// cleaned), each prefixed by indent and capped at maxLineRunes, with a note
// for the lines in between.
func (r *renderer) headTail(indent seg, style, text string) {
	lines := strings.Split(text, "\n")
	if len(lines) > headLines+tailLines {
		omitted := len(lines) - headLines - tailLines
		noun := " lines omitted …"
		if omitted == 1 {
			noun = " line omitted …"
		}
		for _, ln := range lines[:headLines] {
			r.add(indent, seg{style, truncateLine(ln)})
		}
		r.add(indent, seg{styleDim, "… " + formatInt(int64(omitted)) + noun})
		lines = lines[len(lines)-tailLines:]
	}
	for _, ln := range lines {
		r.add(indent, seg{style, truncateLine(ln)})
	}
}

func (r *renderer) entry() entry {
	return entry{at: r.at, lines: r.lines}
}

// TurnHeader describes the message that starts a turn.
type TurnHeader struct {
	From      string    // sender of the message
	MessageID string    // message id; "?" when empty
	ThreadID  string    // codex thread id; empty means a new thread
	Resume    bool      // the turn resumes an existing thread
	Attempt   int       // delivery attempt; shown when > 1
	Time      time.Time // when the message was sent; zero means now
	// Preview is the first lines of the message's body, chosen (and
	// clipped) by the caller; each is cleaned and shown under the header.
	Preview []string
}

// TurnHeader writes a separator rule and a bold cyan header line:
// "── message <id> from <from> · <time> · thread <id|new> ──", then the
// lines of h.Preview, each cleaned (safetext.Line) and prefixed "│ ". It
// never blocks; after Close it does nothing.
func (w *Writer) TurnHeader(h TurnHeader) {
	if !w.accepting() {
		return
	}
	r := w.renderer()
	t := h.Time
	if t.IsZero() {
		t = w.now()
	}
	thread := cleanInline(h.ThreadID)
	if thread == "" {
		thread = "new"
	}
	var b strings.Builder
	b.WriteString("── message ")
	b.WriteString(orUnknown(cleanInline(h.MessageID)))
	b.WriteString(" from ")
	b.WriteString(orUnknown(cleanInline(h.From)))
	b.WriteString(" · ")
	b.WriteString(t.Format(headerLayout))
	b.WriteString(" · thread ")
	b.WriteString(thread)
	if h.Resume {
		b.WriteString(" (resumed)")
	}
	if h.Attempt > 1 {
		b.WriteString(" · attempt ")
		b.WriteString(strconv.Itoa(h.Attempt))
	}
	b.WriteString(" ──")
	r.add(seg{styleCyan, strings.Repeat("━", ruleWidth)})
	r.add(seg{styleBoldCyan, b.String()})
	for _, ln := range h.Preview {
		r.add(seg{styleCyan, "│ "}, seg{"", cleanInline(ln)})
	}
	w.enqueue(r.entry())
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// AgentMessage writes the agent's message in full, one transcript line per
// text line: the first prefixed "» ", the rest indented. It never blocks;
// after Close it does nothing.
func (w *Writer) AgentMessage(text string) {
	if !w.accepting() {
		return
	}
	r := w.renderer()
	text = cleanBlock(text)
	if text == "" {
		r.add(seg{styleBold, "» "}, seg{styleDim, "(empty message)"})
	} else {
		r.block(seg{styleBold, "» "}, seg{"", "  "}, "", text)
	}
	w.enqueue(r.entry())
}

// Reasoning writes a reasoning summary, dimmed, prefixed "~ ". Empty text
// writes nothing. It never blocks; after Close it does nothing.
func (w *Writer) Reasoning(text string) {
	if !w.accepting() {
		return
	}
	text = cleanBlock(text)
	if text == "" {
		return
	}
	r := w.renderer()
	r.block(seg{styleDim, "~ "}, seg{styleDim, "  "}, styleDim, text)
	w.enqueue(r.entry())
}

// command adds "$ cmd" (bold), multi-line commands shortened like
// output.
func (r *renderer) command(command string) {
	command = cleanBlock(command)
	lines := strings.Split(command, "\n")
	r.add(seg{styleBold, "$ " + truncateLine(lines[0])})
	if len(lines) > 1 {
		r.headTail(seg{"", "  "}, styleBold, strings.Join(lines[1:], "\n"))
	}
}

// CommandStarted writes "$ command" in bold. It never blocks; after Close it
// does nothing.
func (w *Writer) CommandStarted(command string) {
	if !w.accepting() {
		return
	}
	r := w.renderer()
	r.command(command)
	e := r.entry()
	e.cmd, e.started = command, true
	w.enqueue(e)
}

// CommandFinished writes the command's output (the first and last ten lines,
// with the number omitted in between; lines longer than 400 characters are
// cut), then "exit N" in green for 0 or red otherwise. With a nil exitCode
// it shows status instead (yellow). The "$ command" line is repeated unless
// the previous event written was CommandStarted for the same command. It
// never blocks; after Close it does nothing.
func (w *Writer) CommandFinished(command string, exitCode *int, status string, output string) {
	if !w.accepting() {
		return
	}
	r := w.renderer()
	r.command(command)
	echo := len(r.lines)
	if out := cleanBlock(output); out != "" {
		r.headTail(seg{"", "  "}, "", out)
	}
	status = cleanInline(status)
	switch {
	case exitCode != nil:
		style := styleGreen
		if *exitCode != 0 {
			style = styleRed
		}
		text := "exit " + strconv.Itoa(*exitCode)
		if status != "" && status != "completed" && status != "failed" {
			text += " (" + status + ")"
		}
		r.add(seg{"", "  "}, seg{style, text})
	case status != "":
		r.add(seg{"", "  "}, seg{styleYellow, status})
	default:
		r.add(seg{"", "  "}, seg{styleYellow, "exit ?"})
	}
	e := r.entry()
	e.echo, e.cmd = echo, command
	w.enqueue(e)
}

// FileChange is one file touched by the agent.
type FileChange struct {
	Path string // path as reported by codex
	Kind string // "add", "delete", "update" (or "A", "D", "M")
}

// FileChanges writes one line per change: "A path" (green), "D path" (red),
// "M path" (yellow); an unknown kind is shown as "? path (kind)". It never
// blocks; after Close it does nothing.
func (w *Writer) FileChanges(changes []FileChange) {
	if !w.accepting() || len(changes) == 0 {
		return
	}
	r := w.renderer()
	for _, c := range changes {
		path := orUnknown(cleanInline(c.Path))
		switch strings.ToLower(c.Kind) {
		case "add", "a", "added", "create":
			r.add(seg{styleGreen, "A"}, seg{"", " " + path})
		case "delete", "d", "deleted", "remove":
			r.add(seg{styleRed, "D"}, seg{"", " " + path})
		case "update", "m", "modified", "modify":
			r.add(seg{styleYellow, "M"}, seg{"", " " + path})
		default:
			r.add(seg{styleYellow, "?"}, seg{"", " " + path + " (" + cleanInline(c.Kind) + ")"})
		}
	}
	w.enqueue(r.entry())
}

// WebSearch writes "web search: query" in magenta. It never blocks; after
// Close it does nothing.
func (w *Writer) WebSearch(query string) {
	if !w.accepting() {
		return
	}
	r := w.renderer()
	r.add(seg{styleMagenta, "web search: " + cleanInline(query)})
	w.enqueue(r.entry())
}

// labelled writes "label msg" in style, continuation lines indented.
func (w *Writer) labelled(style, label, msg string) {
	if !w.accepting() {
		return
	}
	r := w.renderer()
	msg = cleanBlock(msg)
	if msg == "" {
		r.add(seg{style, strings.TrimSpace(label)})
	} else {
		r.block(seg{style, label}, seg{style, "  "}, style, msg)
	}
	w.enqueue(r.entry())
}

// Warning writes "warning: msg" in yellow. It never blocks; after Close it
// does nothing.
func (w *Writer) Warning(msg string) { w.labelled(styleYellow, "warning: ", msg) }

// Error writes "error: msg" in red. It never blocks; after Close it does
// nothing.
func (w *Writer) Error(msg string) { w.labelled(styleRed, "error: ", msg) }

// Notice writes a shim lifecycle line, "[batty] msg", in cyan (agent
// started, thread changed, shutting down, ...). It never blocks; after Close
// it does nothing.
func (w *Writer) Notice(msg string) { w.labelled(styleCyan, "[batty] ", msg) }

// UsageLine is the token accounting of one turn.
type UsageLine struct {
	TurnInput       int64         // input tokens of this turn
	TurnCachedInput int64         // of which served from cache
	TurnOutput      int64         // output tokens of this turn
	TurnReasoning   int64         // of which reasoning; shown when > 0
	TotalInput      int64         // input tokens of the thread so far
	TotalOutput     int64         // output tokens of the thread so far
	ContextPct      float64       // context window used, 0-100; < 0 = unknown
	Duration        time.Duration // turn wall time; 0 = unknown
}

// Usage writes one dim line, e.g. "tokens: in 9,526 (cached 0) out 3 ·
// thread total in 19,124 out 10 · ctx 7% · 1.2s". Unknown context and
// duration are left out. It never blocks; after Close it does nothing.
func (w *Writer) Usage(u UsageLine) {
	if !w.accepting() {
		return
	}
	var b strings.Builder
	b.WriteString("tokens: in ")
	b.WriteString(formatInt(u.TurnInput))
	b.WriteString(" (cached ")
	b.WriteString(formatInt(u.TurnCachedInput))
	b.WriteString(") out ")
	b.WriteString(formatInt(u.TurnOutput))
	if u.TurnReasoning > 0 {
		b.WriteString(" (reasoning ")
		b.WriteString(formatInt(u.TurnReasoning))
		b.WriteString(")")
	}
	b.WriteString(" · thread total in ")
	b.WriteString(formatInt(u.TotalInput))
	b.WriteString(" out ")
	b.WriteString(formatInt(u.TotalOutput))
	if u.ContextPct >= 0 {
		b.WriteString(" · ctx ")
		b.WriteString(strconv.FormatFloat(u.ContextPct, 'f', 0, 64))
		b.WriteString("%")
	}
	if u.Duration > 0 {
		b.WriteString(" · ")
		b.WriteString(formatDuration(u.Duration))
	}
	r := w.renderer()
	r.add(seg{styleDim, b.String()})
	w.enqueue(r.entry())
}

// TurnEnd writes the turn's outcome: "✔ completed" (green), "✘ failed:
// detail" (red), "■ interrupted" or "⏱ timed_out" (yellow); any other status
// is written as "• status". A non-empty detail is appended after ": ". It
// never blocks; after Close it does nothing.
func (w *Writer) TurnEnd(status string, detail string) {
	if !w.accepting() {
		return
	}
	status = cleanInline(status)
	var style, icon string
	switch status {
	case "completed":
		style, icon = styleGreen, "✔ "
	case "failed":
		style, icon = styleRed, "✘ "
	case "interrupted":
		style, icon = styleYellow, "■ "
	case "timed_out":
		style, icon = styleYellow, "⏱ "
	default:
		style, icon = styleBold, "• "
		status = orUnknown(status)
	}
	r := w.renderer()
	detail = cleanBlock(detail)
	if detail == "" {
		r.add(seg{style, icon + status})
	} else {
		r.block(seg{style, icon + status + ": "}, seg{style, "  "}, style, detail)
	}
	w.enqueue(r.entry())
}

// formatInt formats n with thousands separators: 19124 → "19,124".
func formatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	if len(s) <= 3 {
		if neg {
			return "-" + s
		}
		return s
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	first := len(s) % 3
	if first == 0 {
		first = 3
	}
	b.WriteString(s[:first])
	for i := first; i < len(s); i += 3 {
		b.WriteByte(',')
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// formatDuration rounds d for humans: 850ms, 1.2s, 2m5.3s.
func formatDuration(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
