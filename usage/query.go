package usage

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Dimension is what a summary's rows group the turns by.
type Dimension string

// The dimensions of Summarize.
const (
	ByNone    Dimension = ""
	ByAgent   Dimension = "agent"
	ByRole    Dimension = "role"
	ByAccount Dimension = "account"
	ByHost    Dimension = "host"
	ByModel   Dimension = "model"
	ByHour    Dimension = "hour"
	ByDay     Dimension = "day"
)

// Dimensions lists the dimensions a summary may be grouped by.
var Dimensions = []Dimension{ByAgent, ByRole, ByAccount, ByHost, ByModel, ByHour, ByDay}

// ParseDimension reads a --by value.
func ParseDimension(s string) (Dimension, error) {
	for _, d := range Dimensions {
		if string(d) == s {
			return d, nil
		}
	}
	names := make([]string, len(Dimensions))
	for i, d := range Dimensions {
		names[i] = string(d)
	}
	return "", fmt.Errorf("unknown grouping %q: one of %s", s, strings.Join(names, ", "))
}

// Query selects and groups turns.
type Query struct {
	// Since and Until bound the turns' end times: [Since, Until); a zero
	// bound is none.
	Since, Until time.Time
	// By groups the rows; ByNone: the total only.
	By Dimension
	// Loc is the time zone of hour and day rows (nil: UTC).
	Loc *time.Location
}

// Contains reports whether at is in the query's range.
func (q Query) Contains(at time.Time) bool {
	return (q.Since.IsZero() || !at.Before(q.Since)) && (q.Until.IsZero() || at.Before(q.Until))
}

// Row is the usage of a group of turns.
type Row struct {
	// Key is the group's value: an agent's name, a role, an account, a
	// host ("local" for this machine), a model ("default" for Codex's), an
	// hour or a day (RFC 3339 at its start, in Query.Loc); "total" for the
	// total.
	Key    string `json:"key"`
	Turns  int    `json:"turns"`
	Tokens Tokens `json:"tokens"`
	// Total is Tokens.Total(): input and output.
	Total      int64 `json:"total_tokens"`
	DurationMS int64 `json:"duration_ms"`
	// Cost is the cost in dollars of the turns priced (nil without
	// pricing); Unpriced counts the turns on a model without a price,
	// left out of Cost.
	Cost     *float64 `json:"cost_usd,omitempty"`
	Unpriced int      `json:"unpriced_turns,omitempty"`
}

func (r *Row) add(t Turn, prices Prices) {
	r.Turns++
	r.Tokens = r.Tokens.Add(t.Tokens)
	r.Total = r.Tokens.Total()
	r.DurationMS = addSat(r.DurationMS, t.DurationMS)
	if prices == nil {
		return
	}
	if r.Cost == nil {
		r.Cost = new(float64)
	}
	p, ok := prices[t.Model]
	if !ok {
		r.Unpriced++
		return
	}
	*r.Cost += p.Cost(t.Tokens)
}

// Summary is the answer to a query: one row per group (hours and days in
// time order, the others by total tokens, most first), and the total.
type Summary struct {
	Since *time.Time `json:"since,omitempty"`
	Until *time.Time `json:"until,omitempty"`
	By    Dimension  `json:"by,omitempty"`
	Rows  []Row      `json:"rows"`
	Total Row        `json:"total"`
}

// Summarize groups the turns in q's range as q says, with their cost when
// prices is not nil. It is a pure function.
func Summarize(turns []Turn, q Query, prices Prices) Summary {
	s := Summary{By: q.By, Total: Row{Key: "total"}}
	if !q.Since.IsZero() {
		s.Since = &q.Since
	}
	if !q.Until.IsZero() {
		s.Until = &q.Until
	}
	if prices != nil {
		s.Total.Cost = new(float64)
	}
	index := map[string]int{}
	for _, t := range turns {
		if !q.Contains(t.At) {
			continue
		}
		s.Total.add(t, prices)
		if q.By == ByNone {
			continue
		}
		k := groupKey(t, q)
		i, ok := index[k]
		if !ok {
			i = len(s.Rows)
			index[k] = i
			s.Rows = append(s.Rows, Row{Key: k})
		}
		s.Rows[i].add(t, prices)
	}
	if s.Rows == nil {
		s.Rows = []Row{}
	}
	slices.SortFunc(s.Rows, func(a, b Row) int {
		if q.By == ByHour || q.By == ByDay {
			return cmp.Compare(a.Key, b.Key)
		}
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Key, b.Key))
	})
	return s
}

// groupKey is turn t's group under q.
func groupKey(t Turn, q Query) string {
	switch q.By {
	case ByAgent:
		return t.Agent
	case ByRole:
		return t.Role
	case ByAccount:
		return cmp.Or(t.Account, "default")
	case ByHost:
		return cmp.Or(t.Host, "local")
	case ByModel:
		return cmp.Or(t.Model, "default")
	case ByHour, ByDay:
		return Bucket(t.At, q.By, q.Loc).Format(time.RFC3339)
	}
	return "total"
}

// Bucket is the start of the hour or day (in loc, nil: UTC) that holds at.
func Bucket(at time.Time, by Dimension, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	at = at.In(loc)
	if by == ByDay {
		return time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, loc)
	}
	// An hour from the instant, so a daylight-saving change keeps every
	// hour distinct.
	return at.Truncate(time.Hour)
}

// Sum is the tokens of the turns whose end time is in [since, until) and
// that keep accepts (nil: all): what a budget counts. It is a pure
// function.
func Sum(turns []Turn, since, until time.Time, keep func(Turn) bool) Tokens {
	q := Query{Since: since, Until: until}
	var sum Tokens
	for _, t := range turns {
		if q.Contains(t.At) && (keep == nil || keep(t)) {
			sum = sum.Add(t.Tokens)
		}
	}
	return sum
}

// Point is one bucket of a series: its start and the total tokens of the
// turns that ended in it.
type Point struct {
	At     time.Time `json:"at"`
	Tokens int64     `json:"total_tokens"`
}

// steps are the bucket lengths a series may use, shortest first.
var steps = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 3 * time.Hour,
	6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour}

// Series is the total tokens of the turns ended in [from, to), in at most
// n buckets of the shortest length in steps that fits (the last when none
// does: then the buckets are n at most still, the oldest dropped). The
// buckets are aligned on the step (in UTC). It is a pure function.
func Series(turns []Turn, from, to time.Time, n int) ([]Point, time.Duration) {
	if n < 1 || !from.Before(to) {
		return nil, 0
	}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if to.Sub(from.Truncate(s)) <= time.Duration(n)*s {
			step = s
			break
		}
	}
	start := from.Truncate(step)
	count := int(math.Ceil(float64(to.Sub(start)) / float64(step)))
	if count > n {
		start = start.Add(time.Duration(count-n) * step)
		count = n
	}
	pts := make([]Point, count)
	for i := range pts {
		pts[i].At = start.Add(time.Duration(i) * step).UTC()
	}
	for _, t := range turns {
		if t.At.Before(start) || !t.At.Before(to) {
			continue
		}
		i := int(t.At.Sub(start) / step)
		if i >= 0 && i < count {
			pts[i].Tokens = addSat(pts[i].Tokens, t.Tokens.Total())
		}
	}
	return pts, step
}

// sparks are the bars of a sparkline, lowest first.
var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws values as one line of bars, top (or, when top <= 0, the
// highest value) as the tallest bar; a zero is a space, so an idle bucket
// shows as a gap. It is a pure function.
func Sparkline(values []int64, top int64) string {
	if top <= 0 {
		for _, v := range values {
			top = max(top, v)
		}
	}
	var b strings.Builder
	for _, v := range values {
		if v <= 0 || top == 0 {
			b.WriteRune(' ')
			continue
		}
		i := int(math.Ceil(float64(min(v, top))/float64(top)*float64(len(sparks)))) - 1
		b.WriteRune(sparks[min(max(i, 0), len(sparks)-1)])
	}
	return b.String()
}

// ParseWhen reads a --since or --until value at now: a duration before now
// (90m, 36h, 7d, 2w), an RFC 3339 time, or a local date (2006-01-02) or
// date and minute (2006-01-02T15:04 or "2006-01-02 15:04") in loc. It is a
// pure function.
func ParseWhen(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("empty time")
	}
	if loc == nil {
		loc = time.UTC
	}
	if d, ok := parseAgo(s); ok {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid time %.60q: a duration before now (90m, 36h, 7d, 2w), an RFC 3339 time or a date (2006-01-02, 2006-01-02T15:04)", s)
}

// parseAgo reads a positive duration, with d (days) and w (weeks) besides
// Go's units, as whole numbers of them ("7d", "2w") only.
func parseAgo(s string) (time.Duration, bool) {
	for unit, d := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, unit); ok {
			v, err := strconv.ParseInt(n, 10, 32)
			if err != nil || v <= 0 {
				return 0, false
			}
			return time.Duration(v) * d, true
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, false
	}
	return d, true
}

// LimitRow is one rate-limit window of an account over a range: its last
// sample, and its used percent over time (one point per sample).
type LimitRow struct {
	Account       string        `json:"account"`
	Window        string        `json:"window"`
	WindowMinutes int64         `json:"window_minutes,omitempty"`
	UsedPct       float64       `json:"used_pct"`
	ResetsAt      *time.Time    `json:"resets_at,omitempty"`
	SeenAt        time.Time     `json:"seen_at"`
	Samples       []LimitSample `json:"samples"`
}

// LimitHistory groups the samples in q's range by account and window
// (ordered by account, then window), each with its last sample. It is a
// pure function.
func LimitHistory(samples []LimitSample, q Query) []LimitRow {
	rows := []LimitRow{}
	index := map[string]int{}
	for _, s := range samples {
		if !q.Contains(s.At) {
			continue
		}
		k := s.Account + "\x00" + s.Window
		i, ok := index[k]
		if !ok {
			i = len(rows)
			index[k] = i
			rows = append(rows, LimitRow{Account: cmp.Or(s.Account, "default"), Window: s.Window})
		}
		r := &rows[i]
		r.Samples = append(r.Samples, s)
		if !s.At.Before(r.SeenAt) {
			r.SeenAt, r.UsedPct, r.WindowMinutes, r.ResetsAt = s.At, s.UsedPct, s.WindowMinutes, nil
			if !s.ResetsAt.IsZero() {
				at := s.ResetsAt
				r.ResetsAt = &at
			}
		}
	}
	for i := range rows {
		slices.SortStableFunc(rows[i].Samples, func(a, b LimitSample) int { return a.At.Compare(b.At) })
	}
	slices.SortFunc(rows, func(a, b LimitRow) int {
		return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.Window, b.Window))
	})
	return rows
}
