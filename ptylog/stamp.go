package ptylog

import (
	"strings"
	"time"
)

// StampLayout is the time at the start of every transcript line: the date
// and the local time to the millisecond with the zone's offset, so the
// transcripts of several agents merge in time order (`batty logs --all`).
// Readers show it as the time of day (ShortStamps).
const StampLayout = "2006-01-02T15:04:05.000Z07:00"

// stampFields finds the stamp at the start of line: after the dim style
// the Writer puts around it when it writes colours, and ending at the
// style's reset or at a space. It returns the stamp's offsets, or ok false
// when the line does not start with one.
func stampFields(line string) (start, end int, t time.Time, ok bool) {
	if strings.HasPrefix(line, styleDim) {
		start = len(styleDim)
	}
	rest := line[start:]
	// The shortest stamp is UTC's ("...000Z"), the longest has an offset.
	const minLen, maxLen = len("2006-01-02T15:04:05.000Z"), len("2006-01-02T15:04:05.000-07:00")
	if len(rest) < minLen || rest[4] != '-' || rest[10] != 'T' {
		return 0, 0, time.Time{}, false
	}
	n := strings.IndexAny(rest[:min(len(rest), maxLen+1)], " \x1b\n")
	if n < 0 {
		n = min(len(rest), maxLen+1)
	}
	t, err := time.Parse(StampLayout, rest[:n])
	if err != nil {
		return 0, 0, time.Time{}, false
	}
	return start, start + n, t, true
}

// ParseStamp returns the time at the start of a transcript line, and false
// when the line does not start with one (a transcript of an older batty,
// or text an agent wrote into the file). It is a pure function and never
// panics.
func ParseStamp(line string) (time.Time, bool) {
	_, _, t, ok := stampFields(line)
	return t, ok
}

// ShortStamps returns text, transcript lines, with the stamp at the start
// of each line shown as the time of day (15:04:05, in the stamp's own
// zone), as a terminal pane has room for. Lines without a stamp are kept
// as they are. It is a pure function.
func ShortStamps(text string) string {
	if !strings.Contains(text, "T") {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	for line := range strings.SplitAfterSeq(text, "\n") {
		start, end, t, ok := stampFields(line)
		if !ok {
			b.WriteString(line)
			continue
		}
		b.WriteString(line[:start])
		b.WriteString(t.Format(timeLayout))
		b.WriteString(line[end:])
	}
	return b.String()
}
