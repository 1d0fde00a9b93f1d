package fanout

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	start := time.Now()
	now := start.Add(2 * time.Minute)
	cases := []struct {
		name string
		s    Snapshot
		want []string
	}{
		{"starting", Snapshot{Total: 10, Started: start, Running: 3}, []string{"fanout: 0/10 done, 0 failed, 3 running", "0 tokens"}},
		{"rate and eta", Snapshot{Total: 10, Done: 3, Failed: 1, Running: 2, Tokens: 12345, Started: start},
			[]string{"3/10 done, 1 failed, 2 running", "2.0 rows/min", "ETA 3m00s", "12.3k tokens"}},
		{"millions", Snapshot{Total: 10, Started: start, Tokens: 4_560_000}, []string{"· 4.6M tokens"}},
		{"skipped", Snapshot{Total: 10, Skipped: 4, Done: 1, Started: start}, []string{"1/6 done", "(4 done before)"}},
		{"paused", Snapshot{Total: 10, Started: start, PausedUntil: now.Add(time.Minute)}, []string{"paused by a usage limit until " + now.Add(time.Minute).Local().Format("15:04:05")}},
		{"probing", Snapshot{Total: 10, Started: start, PausedUntil: now, Probing: true}, []string{"one row tries whether it has lifted"}},
		{"stopping", Snapshot{Total: 10, Done: 2, Started: start, Stopping: "interrupted"}, []string{"stopping: interrupted"}},
		{"account", Snapshot{Total: 10, Started: start, Account: "spare"}, []string{"0 tokens · account spare"}},
	}
	for _, c := range cases {
		got := Line(c.s, now)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
	}
	if got := Line(Snapshot{Total: 10, Done: 2, Started: start, Stopping: "x"}, now); strings.Contains(got, "ETA") {
		t.Errorf("a stopping job shows an ETA: %q", got)
	}
}

// TestProgressWithoutATerminal: lines come every LineEvery, not per
// update, and at once when a pause begins.
func TestProgressWithoutATerminal(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, false)
	t0 := time.Now()
	for i := range 50 {
		p.Update(Snapshot{Total: 100, Done: i, Started: t0})
		p.tick(t0.Add(time.Duration(i) * 100 * time.Millisecond))
	}
	if n := strings.Count(b.String(), "\n"); n != 1 {
		t.Errorf("%d lines for 5 s of updates, want 1 (the first; then one per 10 s):\n%s", n, b.String())
	}
	p.Update(Snapshot{Total: 100, Done: 50, Started: t0, PausedUntil: t0.Add(time.Hour)})
	p.tick(t0.Add(5 * time.Second))
	if !strings.Contains(b.String(), "paused by a usage limit") {
		t.Errorf("the pause was not shown at once:\n%s", b.String())
	}
	// Rows moving to another account: a line at once.
	before := strings.Count(b.String(), "\n")
	p.Update(Snapshot{Total: 100, Done: 50, Started: t0, Account: "spare"})
	p.tick(t0.Add(6 * time.Second))
	if n := strings.Count(b.String(), "\n"); n != before+1 || !strings.HasSuffix(b.String(), "account spare\n") {
		t.Errorf("the move to account spare was not shown at once:\n%s", b.String())
	}
	p.Final(Summary{Snapshot: Snapshot{Total: 100, Done: 50, Stopping: "interrupted"}, AllDone: 50, Pending: 50}, "out.csv")
	if !strings.Contains(b.String(), "50 of 100 rows done, 0 failed, 50 pending") || !strings.Contains(b.String(), "run the same command again") {
		t.Errorf("final summary:\n%s", b.String())
	}
}

// TestProgressOnATerminal redraws one line in place.
func TestProgressOnATerminal(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, true)
	p.Update(Snapshot{Total: 3, Started: time.Now()})
	p.tick(time.Now())
	p.tick(time.Now())
	if strings.Count(b.String(), "\r\x1b[K") != 2 || strings.Contains(b.String(), "\n") || !strings.Contains(b.String(), "[--------------------] fanout: 0/3 done") {
		t.Errorf("terminal output %q", b.String())
	}
}

func TestBar(t *testing.T) {
	for _, c := range []struct {
		s    Snapshot
		want string
	}{
		{Snapshot{Total: 10}, "[----------]"},
		{Snapshot{Total: 10, Done: 5}, "[#####-----]"},
		{Snapshot{Total: 10, Done: 5, Failed: 2}, "[#####xx---]"},
		{Snapshot{Total: 12, Skipped: 2, Done: 10}, "[##########]"},
		{Snapshot{Total: 3, Done: 1, Failed: 1}, "[###xxx----]"},
		{Snapshot{Total: 0}, "[##########]"},
		{Snapshot{Total: 4, Skipped: 4}, "[##########]"},
	} {
		if got := Bar(c.s, 10); got != c.want {
			t.Errorf("Bar(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
}

// TestProgressFitsTheTerminal: on a terminal narrower than the line, the
// line is cut to fit, so that it is redrawn in place instead of wrapping
// (a wrapped line scrolls a new one at every redraw).
func TestProgressFitsTheTerminal(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, true)
	p.Width = func() int { return 40 }
	p.Update(Snapshot{Total: 10000, Done: 1234, Failed: 5, Running: 64, Skipped: 17, Tokens: 4_560_000,
		Started: time.Now().Add(-time.Hour), PausedUntil: time.Now().Add(time.Hour)})
	p.tick(time.Now())
	line := strings.TrimPrefix(b.String(), "\r\x1b[K")
	if n := utf8.RuneCountInString(line); n != 39 || !strings.HasSuffix(line, "…") {
		t.Errorf("line of %d characters on a terminal of 40: %q", n, line)
	}
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{{"abc", 3, "abc"}, {"abcd", 3, "ab…"}, {"a·b·c", 4, "a·b…"}, {"abc", 0, "abc"}, {"abc", 1, "…"}} {
		if got := fit(c.s, c.n); got != c.want {
			t.Errorf("fit(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
