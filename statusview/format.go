// Package statusview turns the team's status (control.Status) into what
// every view of it shows: one row of cells per agent, the team's totals,
// the merge queue's rows, and the one way a count of tokens and a
// duration are written. `batty status` and its live view, the web
// console and the cockpit's pane titles all take their cells from here
// and keep only their layout. Every text from outside (an agent's error,
// codex's notices, a thread id) is made one safe line by safetext. The
// package is pure: no I/O, no clock.
package statusview

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Tokens writes a count of tokens briefly: up to 999 as it is, then in
// thousands ("12.3k") and from a million in millions ("4.6M"), always one
// decimal, rounded to the nearest (half away from zero). The unit is
// chosen after rounding, so 999,960 is "1.0M", never "1000.0k". Negative
// counts (none are expected) are written as they are. It is a pure
// function.
func Tokens(n int64) string {
	if n < 1000 {
		return strconv.FormatInt(n, 10)
	}
	if k := math.Round(float64(n) / 100); k < 10_000 { // tenths of a thousand
		return strconv.FormatFloat(k/10, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(math.Round(float64(n)/100_000)/10, 'f', 1, 64) + "M"
}

// Duration writes d in its two largest units, truncated to unit (time.Second
// or time.Minute; any other is taken as time.Second): "42s", "3m05s",
// "2h07m" to the second; "<1m", "3m", "2h07m" to the minute (a view whose
// text should change at most once a minute by itself). Hours are not
// carried into days ("50h00m"). A negative d is written as zero. It is a
// pure function.
func Duration(d, unit time.Duration) string {
	s := max(int64(d/time.Second), 0)
	switch {
	case s < 60 && unit == time.Minute:
		return "<1m"
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600 && unit == time.Minute:
		return fmt.Sprintf("%dm", s/60)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
}

// Pct writes a percentage without decimals, rounded to the nearest: "42%".
// It is a pure function.
func Pct(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) + "%" }

// Gauge is a percentage shown with its level: Level is "" (none: Text is
// "" too), "ok", "warn" or "over".
type Gauge struct {
	Text, Level string
}

// GaugeWarn is the percent from which a usage-limit or budget gauge warns.
const GaugeWarn = 80

// NewGauge shows p (nil for none), warning from warn percent, over from
// 100. It is a pure function.
func NewGauge(p *float64, warn float64) Gauge {
	switch {
	case p == nil:
		return Gauge{}
	case *p >= 100:
		return Gauge{Text: Pct(*p), Level: "over"}
	case *p >= warn:
		return Gauge{Text: Pct(*p), Level: "warn"}
	}
	return Gauge{Text: Pct(*p), Level: "ok"}
}

// Highest is the highest of ps, nil when none is set. It is a pure
// function.
func Highest(ps ...*float64) *float64 {
	var h *float64
	for _, p := range ps {
		if p != nil && (h == nil || *p > *h) {
			h = p
		}
	}
	return h
}
