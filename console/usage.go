package console

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/usage"
)

// usageBuckets is how many bars a usage chart has at most.
const usageBuckets = 48

// usageTopKeys is how many agents or roles a chart names; the others
// are summed as "other".
const usageTopKeys = 7

// usageRange is one span the usage page offers, by its name in ?range=.
type usageRange struct {
	Name string
	Span time.Duration // 0: the whole ledger
}

// usageRanges are the spans of the usage page; the first is the default.
var usageRanges = []usageRange{{"24h", 24 * time.Hour}, {"1h", time.Hour}, {"7d", 7 * 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}, {"all", 0}}

// rangeNamed returns the range named name, the default for "" or an
// unknown name. It is a pure function.
func rangeNamed(name string) usageRange {
	for _, r := range usageRanges {
		if r.Name == name {
			return r
		}
	}
	return usageRanges[0]
}

// usageDims are the dimensions the usage page charts, in its order.
var usageDims = []usage.Dimension{usage.ByAgent, usage.ByRole}

// usageRow is one row of the usage downloads: the tokens of one agent or
// role (By, Key) in the bucket starting At.
type usageRow struct {
	At  time.Time       `json:"bucket_start"`
	By  usage.Dimension `json:"by"`
	Key string          `json:"key"`
	usage.Row
}

// usageData is what the usage page and its downloads are made of: the
// ledger's turns in [From, To) in buckets of Step, the rows of each
// bucket by agent and by role, the totals over the range by agent and by
// role, the budgets and the rate-limit windows.
type usageData struct {
	Range    usageRange
	From, To time.Time
	Step     time.Duration
	Buckets  []time.Time
	Rows     []usageRow
	Sums     map[usage.Dimension]usage.Summary
	Total    usage.Row
	Priced   bool
	Budgets  []control.BudgetStatus
	Limits   []usage.LimitRow
	Skipped  int
}

// newUsageData computes the usage of turns and samples (the ledger read
// since the range's start) over rg ending at now, priced by prices (nil:
// no cost), with the budgets and accounts of st (nil: none). It is a pure
// function.
func newUsageData(turns []usage.Turn, samples []usage.LimitSample, st *control.Status, rg usageRange, now time.Time, prices usage.Prices) usageData {
	d := usageData{Range: rg, To: now, Priced: prices != nil, Sums: map[usage.Dimension]usage.Summary{}, Budgets: []control.BudgetStatus{}}
	if rg.Span > 0 {
		d.From = now.Add(-rg.Span)
	} else {
		d.From = now.Add(-time.Hour)
		for _, t := range turns {
			if t.At.Before(d.From) {
				d.From = t.At
			}
		}
	}
	q := usage.Query{Since: d.From, Until: d.To}
	pts, step := usage.Series(turns, d.From, d.To, usageBuckets)
	d.Step = step
	for _, p := range pts {
		d.Buckets = append(d.Buckets, p.At)
	}
	d.Total = usage.Summarize(turns, q, prices).Total
	for _, by := range usageDims {
		d.Sums[by] = usage.Summarize(turns, usage.Query{Since: d.From, Until: d.To, By: by}, prices)
	}
	if len(d.Buckets) > 0 {
		in := make([][]usage.Turn, len(d.Buckets))
		start := d.Buckets[0]
		for _, t := range turns {
			if t.At.Before(start) || !q.Contains(t.At) {
				continue
			}
			if i := int(t.At.Sub(start) / step); i < len(in) {
				in[i] = append(in[i], t)
			}
		}
		for i, bt := range in {
			if len(bt) == 0 {
				continue
			}
			for _, by := range usageDims {
				for _, r := range usage.Summarize(bt, usage.Query{By: by}, prices).Rows {
					d.Rows = append(d.Rows, usageRow{At: d.Buckets[i], By: by, Key: r.Key, Row: r})
				}
			}
		}
	}
	d.Limits = usage.LimitHistory(samples, q)
	if st != nil {
		d.Budgets = append(d.Budgets, st.Budgets...)
		d.Limits = withCurrentLimits(d.Limits, st.Accounts)
	}
	return d
}

// withCurrentLimits adds to rows (the ledger's windows in the range) each
// window of accounts' last snapshots that rows does not have (a window
// whose last report is older than the range). It is a pure function.
func withCurrentLimits(rows []usage.LimitRow, accounts []control.AccountStatus) []usage.LimitRow {
	for _, a := range accounts {
		if a.RateLimits == nil {
			continue
		}
		name := cmp.Or(a.Name, a.CodexHome, "default")
		for _, w := range a.RateLimits.Windows {
			if slices.ContainsFunc(rows, func(r usage.LimitRow) bool { return r.Account == name && r.Window == w.Name }) {
				continue
			}
			rows = append(rows, usage.LimitRow{Account: name, Window: w.Name, WindowMinutes: w.WindowMinutes, UsedPct: w.UsedPct,
				ResetsAt: w.ResetsAt, SeenAt: a.RateLimits.SeenAt})
		}
	}
	return rows
}

// usageView is the usage page's data.
type usageView struct {
	Team, Err      string
	Nav            nav
	Range          string
	Ranges         []string
	From, To, Step string
	Priced         bool
	Total          usageCells
	Charts         []chartView
	Budgets        []budgetRow
	Limits         []limitRow
	NoLimits       bool
}

// usageCells is a row of the usage tables, every figure text.
type usageCells struct {
	Key                                                 string
	Turns                                               int
	Input, Cached, Output, Reasoning, Total, Time, Cost string
}

// chartView is one chart of tokens over time, as SVG: stacked bars, a
// y axis of ticks, a few time labels, a legend, and the table of its
// totals.
type chartView struct {
	Title, By    string
	Priced       bool
	W, H         int
	PlotX, PlotY float64 // the plot's bottom left corner
	PlotW        float64
	Bars         []svgBar
	YTicks       []svgTick
	XTicks       []svgTick
	Legend       []legendItem
	Table        []usageCells
	Empty        bool
}

// svgBar is one rectangle of a chart; Class picks its colour, Title is
// shown on hover.
type svgBar struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

// svgTick is a labelled position on an axis.
type svgTick struct {
	At     float64
	Label  string
	Anchor string // the text's anchor: start, middle or end
}

// legendItem names a colour of a chart.
type legendItem struct {
	Class, Key, Total string
}

// budgetRow is a budget as the usage page shows it.
type budgetRow struct {
	Budget, For, Per  string
	Used, Tokens, Pct string
	Bar, Warn         float64 // the bar's width and the warn mark, in percent (≤ 100)
	Class             string  // ok, warn or over
	Until             string
}

// limitRow is a rate-limit window as the usage page shows it: its last
// used percent and, when the ledger has samples in the range, a line of
// them over the range.
type limitRow struct {
	Account, Window, Pct, Resets, Seen string
	Bar                                float64
	Class                              string
	Points                             string // the polyline's points, "" without samples
}

// Geometry of the charts (SVG user units).
const (
	chartW, chartH         = 640, 200
	chartLeft, chartBottom = 64, 22
	chartTop, chartRight   = 8, 8
	limitW, limitH         = 240, 40
)

// newUsageView makes the usage page's data of d, times shown in loc. It
// is a pure function.
func newUsageView(team string, d usageData, loc *time.Location) usageView {
	v := usageView{Team: team, Range: d.Range.Name, Priced: d.Priced, Step: stepText(d.Step),
		From: d.From.In(loc).Format("2006-01-02 15:04"), To: d.To.In(loc).Format("2006-01-02 15:04")}
	for _, r := range usageRanges {
		v.Ranges = append(v.Ranges, r.Name)
	}
	v.Total = cellsOf("total", d.Total, d.Priced)
	for _, by := range usageDims {
		v.Charts = append(v.Charts, newChart(d, by, loc))
	}
	for _, b := range d.Budgets {
		r := budgetRow{Budget: b.Budget, For: b.For, Per: b.Per, Used: statusview.Tokens(b.Used), Tokens: statusview.Tokens(b.Tokens),
			Pct: statusview.Pct(b.UsedPct), Bar: math.Min(b.UsedPct, 100), Warn: float64(b.WarnAt), Class: "ok",
			Until: b.WindowEnd.In(loc).Format("Mon 15:04")}
		switch {
		case b.UsedPct >= 100:
			r.Class = "over"
		case b.UsedPct >= float64(b.WarnAt):
			r.Class = "warn"
		}
		v.Budgets = append(v.Budgets, r)
	}
	for _, l := range d.Limits {
		r := limitRow{Account: safetext.Line(l.Account, 120), Window: safetext.Line(l.Window, 40), Pct: statusview.Pct(l.UsedPct),
			Bar: math.Min(l.UsedPct, 100), Class: "ok", Seen: l.SeenAt.In(loc).Format("2006-01-02 15:04")}
		if l.WindowMinutes > 0 {
			r.Window += " (" + stepText(time.Duration(l.WindowMinutes)*time.Minute) + ")"
		}
		if l.ResetsAt != nil {
			r.Resets = l.ResetsAt.In(loc).Format("2006-01-02 15:04")
		}
		switch {
		case l.UsedPct >= 90:
			r.Class = "over"
		case l.UsedPct >= 70:
			r.Class = "warn"
		}
		r.Points = limitPoints(l.Samples, d.From, d.To)
		v.Limits = append(v.Limits, r)
	}
	v.NoLimits = len(v.Limits) == 0
	return v
}

// cellsOf is the cells of row r named key.
func cellsOf(key string, r usage.Row, priced bool) usageCells {
	c := usageCells{Key: key, Turns: r.Turns, Input: statusview.Tokens(r.Tokens.Input), Cached: statusview.Tokens(r.Tokens.CachedInput),
		Output: statusview.Tokens(r.Tokens.Output), Reasoning: statusview.Tokens(r.Tokens.ReasoningOutput), Total: statusview.Tokens(r.Total),
		Time: (time.Duration(r.DurationMS) * time.Millisecond).Round(time.Second).String()}
	if priced && r.Cost != nil {
		c.Cost = fmt.Sprintf("$%.2f", *r.Cost)
		if r.Unpriced > 0 {
			c.Cost += "*"
		}
	}
	return c
}

// newChart makes the chart of d's rows by by: the top keys by total
// tokens over the range, each a colour, the rest as "other".
func newChart(d usageData, by usage.Dimension, loc *time.Location) chartView {
	c := chartView{Title: "Tokens by " + string(by), By: string(by), Priced: d.Priced, W: chartW, H: chartH,
		PlotX: chartLeft, PlotY: chartH - chartBottom, PlotW: chartW - chartLeft - chartRight}
	sum := d.Sums[by]
	class := map[string]string{}
	for i, r := range sum.Rows {
		c.Table = append(c.Table, cellsOf(r.Key, r, d.Priced))
		if i < usageTopKeys {
			class[r.Key] = "c" + strconv.Itoa(i)
			c.Legend = append(c.Legend, legendItem{Class: class[r.Key], Key: r.Key, Total: statusview.Tokens(r.Total)})
		}
	}
	if len(sum.Rows) > usageTopKeys {
		var other int64
		for _, r := range sum.Rows[usageTopKeys:] {
			other += r.Total
		}
		c.Legend = append(c.Legend, legendItem{Class: "cx", Key: fmt.Sprintf("%d others", len(sum.Rows)-usageTopKeys), Total: statusview.Tokens(other)})
	}
	n := len(d.Buckets)
	if n == 0 || sum.Total.Total == 0 {
		c.Empty = true
		return c
	}
	// Each bucket's stack, in the legend's order.
	index := map[time.Time]int{}
	for i, b := range d.Buckets {
		index[b] = i
	}
	stacks := make([]map[string]int64, n)
	tops := make([]int64, n)
	for _, r := range d.Rows {
		if r.By != by {
			continue
		}
		i := index[r.At]
		if stacks[i] == nil {
			stacks[i] = map[string]int64{}
		}
		k := cmp.Or(class[r.Key], "cx")
		stacks[i][k] += r.Total
		tops[i] += r.Total
	}
	top := niceCeil(slices.Max(tops))
	plotH := float64(chartH - chartBottom - chartTop)
	slot := c.PlotW / float64(n)
	barW := round1(math.Max(slot*0.8, 1))
	order := make([]legendItem, len(c.Legend))
	copy(order, c.Legend)
	for i, st := range stacks {
		y := c.PlotY
		x := round1(c.PlotX + float64(i)*slot + (slot-barW)/2)
		for _, l := range order {
			v := st[l.Class]
			if v == 0 {
				continue
			}
			h := float64(v) / float64(top) * plotH
			y -= h
			c.Bars = append(c.Bars, svgBar{X: x, Y: round1(y), W: barW, H: round1(math.Max(h, 0.5)), Class: l.Class,
				Title: fmt.Sprintf("%s, %s: %s tokens", l.Key, d.Buckets[i].In(loc).Format("Jan 2 15:04"), statusview.Tokens(v))})
		}
	}
	for _, f := range []float64{0, 0.5, 1} {
		c.YTicks = append(c.YTicks, svgTick{At: round1(c.PlotY - f*plotH), Label: statusview.Tokens(int64(f * float64(top)))})
	}
	for _, i := range []int{0, n / 2, n - 1} {
		if i == n/2 && (i == 0 || i == n-1) {
			continue
		}
		layout := "15:04"
		if d.Step >= 24*time.Hour || d.To.Sub(d.From) > 24*time.Hour {
			layout = "Jan 2"
			if d.Step < 24*time.Hour {
				layout = "Jan 2 15:04"
			}
		}
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case n - 1:
			anchor = "end"
		}
		c.XTicks = append(c.XTicks, svgTick{At: round1(c.PlotX + (float64(i)+0.5)*slot), Label: d.Buckets[i].In(loc).Format(layout), Anchor: anchor})
	}
	return c
}

// limitPoints draws samples' used percents over [from, to) as a
// polyline's points in a limitW × limitH box ("" without samples in it).
// It is a pure function.
func limitPoints(samples []usage.LimitSample, from, to time.Time) string {
	span := to.Sub(from).Seconds()
	if span <= 0 {
		return ""
	}
	var b strings.Builder
	for _, s := range samples {
		if s.At.Before(from) || !s.At.Before(to) {
			continue
		}
		x := s.At.Sub(from).Seconds() / span * limitW
		y := limitH - math.Min(s.UsedPct, 100)/100*limitH
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(round1(x), 'f', -1, 64) + "," + strconv.FormatFloat(round1(y), 'f', -1, 64))
	}
	return b.String()
}

// niceCeil is the smallest of 1, 2, 2.5, 5 times a power of ten that is
// at least n (1 for n ≤ 1). It is a pure function.
func niceCeil(n int64) int64 {
	if n <= 1 {
		return 1
	}
	p := int64(1)
	for p <= n/10 {
		p *= 10
	}
	for _, m := range []int64{10, 20, 25, 50, 100} {
		if v := p * m / 10; v >= n {
			return v
		}
	}
	return p * 10
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// stepText shows a bucket or window length: 5m, 1h, 3h, 1d, 7d.
func stepText(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
}

// usageCSVHeader is the header of the CSV download.
var usageCSVHeader = []string{"bucket_start", "by", "key", "turns", "input_tokens", "cached_input_tokens", "output_tokens",
	"reasoning_output_tokens", "total_tokens", "duration_ms", "cost_usd", "unpriced_turns"}

// writeUsageCSV writes rows as CSV, with usageCSVHeader. A key that a
// spreadsheet would take for a formula is quoted with a leading '.
func writeUsageCSV(w *csv.Writer, rows []usageRow) error {
	if err := w.Write(usageCSVHeader); err != nil {
		return err
	}
	for _, r := range rows {
		cost := ""
		if r.Cost != nil {
			cost = strconv.FormatFloat(*r.Cost, 'f', 6, 64)
		}
		rec := []string{r.At.UTC().Format(time.RFC3339), string(r.By), cellText(r.Key), strconv.Itoa(r.Turns),
			strconv.FormatInt(r.Tokens.Input, 10), strconv.FormatInt(r.Tokens.CachedInput, 10), strconv.FormatInt(r.Tokens.Output, 10),
			strconv.FormatInt(r.Tokens.ReasoningOutput, 10), strconv.FormatInt(r.Total, 10), strconv.FormatInt(r.DurationMS, 10),
			cost, strconv.Itoa(r.Unpriced)}
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

// cellText keeps a text cell of a CSV a text in a spreadsheet: one that
// starts as a formula does gets a leading '. It is a pure function.
func cellText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// usageJSON is the JSON download: the CSV's rows, the budgets and the
// rate-limit windows.
type usageJSON struct {
	Team    string                 `json:"team"`
	Since   time.Time              `json:"since"`
	Until   time.Time              `json:"until"`
	StepS   int64                  `json:"step_s"`
	Priced  bool                   `json:"priced"`
	Rows    []usageRow             `json:"rows"`
	Total   usage.Row              `json:"total"`
	Budgets []control.BudgetStatus `json:"budgets"`
	Limits  []usage.LimitRow       `json:"limits"`
	Skipped int                    `json:"skipped_lines"`
}

// usageOf gathers the usage of the request's range: the status (for the
// budgets and the accounts; a failure leaves them out) and the ledger.
func (s *Server) usageOf(r *http.Request) (*control.Status, usageData, error) {
	rg := rangeNamed(r.URL.Query().Get("range"))
	now := s.cfg.Now()
	var since time.Time
	if rg.Span > 0 {
		since = now.Add(-rg.Span)
	}
	data, err := s.cfg.Team.Usage(r.Context(), since)
	if err != nil {
		return nil, usageData{}, err
	}
	st, err := s.cfg.Team.Status(r.Context())
	if err != nil {
		s.cfg.Log.Debug("Console usage without the status", "error", err)
		st = nil
	}
	d := newUsageData(data.Turns, data.Limits, st, rg, now, s.cfg.Prices)
	d.Skipped = len(data.Skips)
	return st, d, nil
}

// teamOf is st's team name, "" without a status.
func teamOf(st *control.Status) string {
	if st == nil {
		return ""
	}
	return st.Team
}

func (s *Server) usagePage(w http.ResponseWriter, r *http.Request) {
	st, d, err := s.usageOf(r)
	if err != nil {
		s.render(w, r, "usage", usageView{Err: err.Error(), Range: rangeNamed("").Name, Nav: s.navOf("usage", nil)})
		return
	}
	v := newUsageView(teamOf(st), d, s.cfg.Loc)
	v.Nav = s.navOf("usage", st)
	s.render(w, r, "usage", v)
}

func (s *Server) usageCSV(w http.ResponseWriter, r *http.Request) {
	_, d, err := s.usageOf(r)
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="batty-usage-`+d.Range.Name+`.csv"`)
	if err := writeUsageCSV(csv.NewWriter(w), d.Rows); err != nil {
		s.cfg.Log.Warn("Console cannot write the usage CSV", "error", err)
	}
}

func (s *Server) usageJSONFile(w http.ResponseWriter, r *http.Request) {
	st, d, err := s.usageOf(r)
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Disposition", `attachment; filename="batty-usage-`+d.Range.Name+`.json"`)
	rows := d.Rows
	if rows == nil {
		rows = []usageRow{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(usageJSON{Team: teamOf(st), Since: d.From, Until: d.To, StepS: int64(d.Step / time.Second), Priced: d.Priced,
		Rows: rows, Total: d.Total, Budgets: d.Budgets, Limits: d.Limits, Skipped: d.Skipped}); err != nil {
		s.cfg.Log.Warn("Console cannot write the usage JSON", "error", err)
	}
}
