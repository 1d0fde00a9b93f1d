package usage

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func at(h, m int) time.Time { return t0.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }

var sample = []Turn{
	{Agent: "eng-1", Role: "eng", Account: "work", Model: "gpt-5", At: at(0, 5), Tokens: Tokens{Input: 1000, CachedInput: 400, Output: 100, ReasoningOutput: 20}, DurationMS: 1000},
	{Agent: "eng-2", Role: "eng", Account: "home", Host: "box", Model: "gpt-5", At: at(0, 50), Tokens: Tokens{Input: 2000, Output: 300}, DurationMS: 2000},
	{Agent: "qa", Role: "qa", Account: "work", At: at(1, 10), Tokens: Tokens{Input: 500, CachedInput: 500, Output: 50}, DurationMS: 500},
	{Agent: "eng-1", Role: "eng", Account: "work", Model: "gpt-5", At: at(26, 0), Tokens: Tokens{Input: 10, Output: 1}, DurationMS: 10},
}

func keys(rows []Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Key)
	}
	return out
}

func TestSummarize(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	tests := []struct {
		name      string
		q         Query
		wantKeys  []string
		wantTurns int
		wantTotal int64
	}{
		{"all, no grouping", Query{}, nil, 4, 3961},
		{"by agent, most first", Query{By: ByAgent}, []string{"eng-2", "eng-1", "qa"}, 4, 3961},
		{"by role", Query{By: ByRole}, []string{"eng", "qa"}, 4, 3961},
		{"by account", Query{By: ByAccount}, []string{"home", "work"}, 4, 3961},
		{"by host: local for this machine", Query{By: ByHost}, []string{"box", "local"}, 4, 3961},
		{"by model: default for codex's", Query{By: ByModel}, []string{"gpt-5", "default"}, 4, 3961},
		{"by hour, in time order", Query{By: ByHour}, []string{"2030-03-04T10:00:00Z", "2030-03-04T11:00:00Z", "2030-03-05T12:00:00Z"}, 4, 3961},
		{"by day in a time zone", Query{By: ByDay, Loc: tokyo}, []string{"2030-03-04T00:00:00+09:00", "2030-03-05T00:00:00+09:00"}, 4, 3961},
		{"since, inclusive", Query{Since: at(0, 50), By: ByAgent}, []string{"eng-2", "qa", "eng-1"}, 3, 2861},
		{"range [since, until)", Query{Since: at(0, 50), Until: at(26, 0)}, nil, 2, 2850},
		{"empty range", Query{Since: at(30, 0)}, nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(sample, tt.q, nil)
			if got := keys(s.Rows); !reflect.DeepEqual(got, tt.wantKeys) {
				t.Errorf("rows %v, want %v", got, tt.wantKeys)
			}
			if s.Total.Turns != tt.wantTurns || s.Total.Total != tt.wantTotal {
				t.Errorf("total %d turns %d tokens, want %d, %d", s.Total.Turns, s.Total.Total, tt.wantTurns, tt.wantTotal)
			}
			var sum int64
			for _, r := range s.Rows {
				sum += r.Total
				if r.Cost != nil {
					t.Errorf("row %s has a cost without pricing", r.Key)
				}
			}
			if tt.q.By != ByNone && sum != s.Total.Total {
				t.Errorf("rows sum to %d, total %d", sum, s.Total.Total)
			}
			if s.Rows == nil {
				t.Error("rows nil: JSON would say null")
			}
		})
	}
}

func TestCost(t *testing.T) {
	prices := Prices{"gpt-5": {Input: 1.25, CachedInput: 0.125, Output: 10}}
	s := Summarize(sample, Query{By: ByModel}, prices)
	// gpt-5: fresh input 600+2000+10, cached 400, output 100+300+1.
	want := (2610*1.25 + 400*0.125 + 401*10) / 1e6
	gpt := s.Rows[0]
	if gpt.Key != "gpt-5" || gpt.Cost == nil || math.Abs(*gpt.Cost-want) > 1e-12 || gpt.Unpriced != 0 {
		t.Fatalf("gpt-5 row %+v, cost want %v", gpt, want)
	}
	def := s.Rows[1]
	if def.Cost == nil || *def.Cost != 0 || def.Unpriced != 1 {
		t.Fatalf("default-model row %+v: want no cost, 1 unpriced", def)
	}
	if s.Total.Unpriced != 1 || math.Abs(*s.Total.Cost-want) > 1e-12 {
		t.Fatalf("total %+v", s.Total)
	}
	// Cached input over input (not as Codex reports) costs no negative
	// fresh input.
	if c := (Price{Input: 1, CachedInput: 1, Output: 1}).Cost(Tokens{Input: 1, CachedInput: 5e6}); c != 5 {
		t.Fatalf("cost %v", c)
	}
}

func TestSum(t *testing.T) {
	got := Sum(sample, at(0, 0), at(2, 0), func(t Turn) bool { return t.Role == "eng" })
	if got != (Tokens{Input: 3000, CachedInput: 400, Output: 400, ReasoningOutput: 20}) {
		t.Fatalf("sum %+v", got)
	}
	big := []Turn{{Tokens: Tokens{Input: math.MaxInt64}}, {Tokens: Tokens{Input: 5}}}
	if got := Sum(big, time.Time{}, time.Time{}, nil); got.Input != math.MaxInt64 {
		t.Fatalf("saturating sum %d", got.Input)
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	paris := time.FixedZone("CEST", 2*3600)
	tests := []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "36h", want: now.Add(-36 * time.Hour)},
		{in: "7d", want: now.Add(-7 * 24 * time.Hour)},
		{in: "2w", want: now.Add(-14 * 24 * time.Hour)},
		{in: "2030-05-01T08:00:00Z", want: time.Date(2030, 5, 1, 8, 0, 0, 0, time.UTC)},
		{in: "2030-05-01", want: time.Date(2030, 5, 1, 0, 0, 0, 0, paris)},
		{in: "2030-05-01T08:30", want: time.Date(2030, 5, 1, 8, 30, 0, 0, paris)},
		{in: "2030-05-01 08:30", want: time.Date(2030, 5, 1, 8, 30, 0, 0, paris)},
		{in: "", bad: true},
		{in: "-5m", bad: true},
		{in: "0d", bad: true},
		{in: "1.5d", bad: true},
		{in: "yesterday", bad: true},
		{in: "99999999999d", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseWhen(tt.in, now, paris)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseWhen(%q) = %s, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("ParseWhen(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestSeries(t *testing.T) {
	tests := []struct {
		name     string
		from, to time.Time
		n        int
		step     time.Duration
		want     []int64
	}{
		{"an hour in 15-minute buckets", at(0, 0), at(1, 0), 4, 15 * time.Minute, []int64{1100, 0, 0, 2300}},
		{"two hours in hours", at(0, 0), at(2, 0), 2, time.Hour, []int64{3400, 550}},
		{"days", at(0, 0), at(27, 0), 2, 24 * time.Hour, []int64{3950, 11}},
		{"a range too long keeps the newest buckets", at(0, 0).Add(-200 * 24 * time.Hour), at(27, 0), 1, 30 * 24 * time.Hour, []int64{3961}},
		{"empty range", at(1, 0), at(1, 0), 10, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts, step := Series(sample, tt.from, tt.to, tt.n)
			var got []int64
			for _, p := range pts {
				got = append(got, p.Tokens)
			}
			if step != tt.step || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("series %v step %s; want %v step %s", got, step, tt.want, tt.step)
			}
		})
	}
}

func TestSparkline(t *testing.T) {
	tests := []struct {
		in   []int64
		top  int64
		want string
	}{
		{[]int64{0, 1, 4, 8}, 0, " ▁▄█"},
		{[]int64{0, 0}, 0, "  "},
		{[]int64{5}, 0, "█"},
		{nil, 0, ""},
		{[]int64{math.MaxInt64, 1}, 0, "█▁"},
		{[]int64{50, 100, 200}, 100, "▄██"},
	}
	for _, tt := range tests {
		if got := Sparkline(tt.in, tt.top); got != tt.want {
			t.Errorf("Sparkline(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLimitHistory(t *testing.T) {
	reset := at(5, 0)
	in := []LimitSample{
		{At: at(0, 10), Account: "work", Window: "secondary", UsedPct: 3},
		{At: at(0, 0), Account: "work", Window: "primary", UsedPct: 10, ResetsAt: reset},
		{At: at(0, 30), Account: "work", Window: "primary", UsedPct: 20, ResetsAt: reset, WindowMinutes: 300},
		{At: at(0, 20), Account: "", Window: "primary", UsedPct: 50},
		{At: at(9, 0), Account: "work", Window: "primary", UsedPct: 1},
	}
	rows := LimitHistory(in, Query{Until: at(8, 0)})
	var got []string
	for _, r := range rows {
		got = append(got, r.Account+"/"+r.Window)
	}
	if !reflect.DeepEqual(got, []string{"default/primary", "work/primary", "work/secondary"}) {
		t.Fatalf("rows %v", got)
	}
	w := rows[1]
	if w.UsedPct != 20 || w.WindowMinutes != 300 || w.ResetsAt == nil || !w.ResetsAt.Equal(reset) || len(w.Samples) != 2 || !w.SeenAt.Equal(at(0, 30)) {
		t.Fatalf("work/primary %+v", w)
	}
	if rows[2].ResetsAt != nil {
		t.Fatalf("unknown reset shown: %+v", rows[2])
	}
}

func TestParseDimension(t *testing.T) {
	for _, d := range Dimensions {
		if got, err := ParseDimension(string(d)); err != nil || got != d {
			t.Errorf("ParseDimension(%s) = %s, %v", d, got, err)
		}
	}
	if _, err := ParseDimension("week"); err == nil || !strings.Contains(err.Error(), "agent, role") {
		t.Errorf("ParseDimension(week): %v", err)
	}
}
