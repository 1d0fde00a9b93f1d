package ptylog

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/battyhq/batty/safetext"
)

func intp(n int) *int { return &n }

// Colour helpers for expected output.
const ts = "\x1b[2m15:04:05\x1b[0m "

func c(style, text string) string { return style + text + styleReset }

func TestFormatting(t *testing.T) {
	rule := strings.Repeat("━", ruleWidth)
	tests := []struct {
		name  string
		call  func(w *Writer)
		plain []string // without the "15:04:05 " prefix
		color []string // full lines with Color on; nil = only checked by stripping
	}{
		{
			name: "turn header new thread",
			call: func(w *Writer) {
				w.TurnHeader(TurnHeader{From: "architect", MessageID: "m-42", Time: fixedTime})
			},
			plain: []string{rule, "── message m-42 from architect · 2026-01-02 15:04:05 · thread new ──"},
			color: []string{
				ts + c(styleCyan, rule),
				ts + c(styleBoldCyan, "── message m-42 from architect · 2026-01-02 15:04:05 · thread new ──"),
			},
		},
		{
			name: "turn header resumed retry",
			call: func(w *Writer) {
				w.TurnHeader(TurnHeader{From: "lead", MessageID: "m-7", ThreadID: "t-123", Resume: true, Attempt: 2})
			},
			plain: []string{rule, "── message m-7 from lead · 2026-01-02 15:04:05 · thread t-123 (resumed) · attempt 2 ──"},
		},
		{
			name: "turn header with a preview",
			call: func(w *Writer) {
				w.TurnHeader(TurnHeader{From: "lead", MessageID: "m-8", Time: fixedTime, Preview: []string{"Fix the \x1b[31mbuild", "then tell me\a"}})
			},
			plain: []string{rule, "── message m-8 from lead · 2026-01-02 15:04:05 · thread new ──", "│ Fix the build", `│ then tell me\x07`},
		},
		{
			name:  "turn header unknown fields",
			call:  func(w *Writer) { w.TurnHeader(TurnHeader{MessageID: "a\nb", Time: fixedTime}) },
			plain: []string{rule, "── message a b from ? · 2026-01-02 15:04:05 · thread new ──"},
		},
		{
			name:  "agent message multi-line",
			call:  func(w *Writer) { w.AgentMessage("Done.\n\nSecond line\n") },
			plain: []string{"» Done.", "  ", "  Second line"},
			color: []string{ts + c(styleBold, "» ") + "Done.", ts + "  ", ts + "  Second line"},
		},
		{
			name:  "agent message empty",
			call:  func(w *Writer) { w.AgentMessage(" \n") },
			plain: []string{"» (empty message)"},
			color: []string{ts + c(styleBold, "» ") + c(styleDim, "(empty message)")},
		},
		{
			name:  "reasoning dimmed",
			call:  func(w *Writer) { w.Reasoning("Plan:\n- read code") },
			plain: []string{"~ Plan:", "  - read code"},
			color: []string{ts + c(styleDim, "~ ") + c(styleDim, "Plan:"), ts + c(styleDim, "  ") + c(styleDim, "- read code")},
		},
		{
			name: "reasoning empty writes nothing",
			call: func(w *Writer) { w.Reasoning("\n\n") },
		},
		{
			name: "command started then finished",
			call: func(w *Writer) {
				w.CommandStarted("go test ./...")
				w.CommandFinished("go test ./...", intp(0), "completed", "ok  pkg 0.1s\n")
			},
			plain: []string{"$ go test ./...", "  ok  pkg 0.1s", "  exit 0"},
			color: []string{ts + c(styleBold, "$ go test ./..."), ts + "  ok  pkg 0.1s", ts + "  " + c(styleGreen, "exit 0")},
		},
		{
			name:  "command finished alone fails",
			call:  func(w *Writer) { w.CommandFinished("false", intp(1), "failed", "") },
			plain: []string{"$ false", "  exit 1"},
			color: []string{ts + c(styleBold, "$ false"), ts + "  " + c(styleRed, "exit 1")},
		},
		{
			name:  "command declined without exit code",
			call:  func(w *Writer) { w.CommandFinished("rm -rf /", nil, "declined", "") },
			plain: []string{"$ rm -rf /", "  declined"},
			color: []string{ts + c(styleBold, "$ rm -rf /"), ts + "  " + c(styleYellow, "declined")},
		},
		{
			name:  "command without exit code or status",
			call:  func(w *Writer) { w.CommandFinished("x", nil, "", "") },
			plain: []string{"$ x", "  exit ?"},
		},
		{
			name:  "command exit code with unusual status",
			call:  func(w *Writer) { w.CommandFinished("x", intp(130), "interrupted", "") },
			plain: []string{"$ x", "  exit 130 (interrupted)"},
		},
		{
			name: "command repeated when another event intervenes",
			call: func(w *Writer) {
				w.CommandStarted("make")
				w.Notice("thread changed")
				w.CommandFinished("make", intp(2), "failed", "boom")
			},
			plain: []string{"$ make", "[batty] thread changed", "$ make", "  boom", "  exit 2"},
		},
		{
			name: "command repeated when a different command finishes",
			call: func(w *Writer) {
				w.CommandStarted("a")
				w.CommandFinished("b", intp(0), "completed", "")
			},
			plain: []string{"$ a", "$ b", "  exit 0"},
		},
		{
			name:  "multi-line command",
			call:  func(w *Writer) { w.CommandStarted("bash -lc 'a\nb'") },
			plain: []string{"$ bash -lc 'a", "  b'"},
		},
		{
			name: "file changes",
			call: func(w *Writer) {
				w.FileChanges([]FileChange{{"a.go", "add"}, {"b.go", "update"}, {"c.go", "delete"}, {"d.go", "rename"}, {"e.go", "M"}})
			},
			plain: []string{"A a.go", "M b.go", "D c.go", "? d.go (rename)", "M e.go"},
			color: []string{
				ts + c(styleGreen, "A") + " a.go",
				ts + c(styleYellow, "M") + " b.go",
				ts + c(styleRed, "D") + " c.go",
				ts + c(styleYellow, "?") + " d.go (rename)",
				ts + c(styleYellow, "M") + " e.go",
			},
		},
		{
			name: "no file changes writes nothing",
			call: func(w *Writer) { w.FileChanges(nil) },
		},
		{
			name:  "web search",
			call:  func(w *Writer) { w.WebSearch("go\ttail -F") },
			plain: []string{"web search: go tail -F"},
			color: []string{ts + c(styleMagenta, "web search: go tail -F")},
		},
		{
			name:  "warning",
			call:  func(w *Writer) { w.Warning("disk slow\nretrying") },
			plain: []string{"warning: disk slow", "  retrying"},
			color: []string{ts + c(styleYellow, "warning: ") + c(styleYellow, "disk slow"), ts + c(styleYellow, "  ") + c(styleYellow, "retrying")},
		},
		{
			name:  "error",
			call:  func(w *Writer) { w.Error("boom") },
			plain: []string{"error: boom"},
			color: []string{ts + c(styleRed, "error: ") + c(styleRed, "boom")},
		},
		{
			name:  "notice",
			call:  func(w *Writer) { w.Notice("started") },
			plain: []string{"[batty] started"},
			color: []string{ts + c(styleCyan, "[batty] ") + c(styleCyan, "started")},
		},
		{
			name:  "empty notice",
			call:  func(w *Writer) { w.Notice("") },
			plain: []string{"[batty]"},
		},
		{
			name: "usage",
			call: func(w *Writer) {
				w.Usage(UsageLine{TurnInput: 9526, TurnOutput: 3, TotalInput: 19124, TotalOutput: 10, ContextPct: 7, Duration: 1234 * time.Millisecond})
			},
			plain: []string{"tokens: in 9,526 (cached 0) out 3 · thread total in 19,124 out 10 · ctx 7% · 1.2s"},
			color: []string{ts + c(styleDim, "tokens: in 9,526 (cached 0) out 3 · thread total in 19,124 out 10 · ctx 7% · 1.2s")},
		},
		{
			name: "usage unknown context and duration",
			call: func(w *Writer) {
				w.Usage(UsageLine{TurnInput: 1234567, TurnCachedInput: 1000, TurnOutput: 50, TurnReasoning: 20, ContextPct: -1})
			},
			plain: []string{"tokens: in 1,234,567 (cached 1,000) out 50 (reasoning 20) · thread total in 0 out 0"},
		},
		{
			name:  "usage short duration",
			call:  func(w *Writer) { w.Usage(UsageLine{ContextPct: 7.6, Duration: 850 * time.Millisecond}) },
			plain: []string{"tokens: in 0 (cached 0) out 0 · thread total in 0 out 0 · ctx 8% · 850ms"},
		},
		{
			name:  "turn end completed",
			call:  func(w *Writer) { w.TurnEnd("completed", "") },
			plain: []string{"✔ completed"},
			color: []string{ts + c(styleGreen, "✔ completed")},
		},
		{
			name:  "turn end failed",
			call:  func(w *Writer) { w.TurnEnd("failed", "model error") },
			plain: []string{"✘ failed: model error"},
			color: []string{ts + c(styleRed, "✘ failed: ") + c(styleRed, "model error")},
		},
		{
			name:  "turn end interrupted",
			call:  func(w *Writer) { w.TurnEnd("interrupted", "") },
			plain: []string{"■ interrupted"},
			color: []string{ts + c(styleYellow, "■ interrupted")},
		},
		{
			name:  "turn end timed out",
			call:  func(w *Writer) { w.TurnEnd("timed_out", "") },
			plain: []string{"⏱ timed_out"},
			color: []string{ts + c(styleYellow, "⏱ timed_out")},
		},
		{
			name:  "turn end other status",
			call:  func(w *Writer) { w.TurnEnd("weird", "x") },
			plain: []string{"• weird: x"},
		},
	}
	for _, tt := range tests {
		for _, color := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/color=%v", tt.name, color), func(t *testing.T) {
				w, path := openTest(t, Options{Color: color})
				tt.call(w)
				if err := w.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				var want []string
				for _, l := range tt.plain {
					want = append(want, "15:04:05 "+l)
				}
				got := readLines(t, path)
				if got2 := w.Tail(100); !slices.Equal(got2, want) {
					t.Errorf("Tail:\n got %q\nwant %q", got2, want)
				}
				if !color {
					if !slices.Equal(got, want) {
						t.Errorf("file:\n got %q\nwant %q", got, want)
					}
					return
				}
				if tt.color != nil && !slices.Equal(got, tt.color) {
					t.Errorf("coloured file:\n got %q\nwant %q", got, tt.color)
				}
				stripped := make([]string, len(got))
				for i, l := range got {
					stripped[i] = safetext.StripANSI(l)
					checkOnlyOurSequences(t, l)
				}
				if len(got) == 0 {
					stripped = nil
				}
				if !slices.Equal(stripped, want) {
					t.Errorf("stripped file:\n got %q\nwant %q", stripped, want)
				}
			})
		}
	}
}

func TestCommandOutputHeadAndTail(t *testing.T) {
	numbered := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		return b.String()
	}
	span := func(from, to int) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("  line %d", i))
		}
		return out
	}
	long := strings.Repeat("x", 1000)
	wide := strings.Repeat("é", 450)
	tests := []struct {
		name   string
		output string
		want   []string // output lines, between "$ cmd" and "exit 0"
	}{
		{"empty", "", nil},
		{"short", numbered(3), span(1, 3)},
		{"exactly head plus tail", numbered(20), span(1, 20)},
		{"one omitted", numbered(21), slices.Concat(span(1, 10), []string{"  … 1 line omitted …"}, span(12, 21))},
		{"many omitted", numbered(100), slices.Concat(span(1, 10), []string{"  … 80 lines omitted …"}, span(91, 100))},
		{"long line cut", long, []string{"  " + strings.Repeat("x", 400) + "… (+600 chars)"}},
		{"long line cut on rune boundary", wide, []string{"  " + strings.Repeat("é", 400) + "… (+50 chars)"}},
		{"crlf output", "a\r\nb\r\n", []string{"  a", "  b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, path := openTest(t, Options{})
			w.CommandFinished("cmd", intp(0), "completed", tt.output)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			want := slices.Concat([]string{"$ cmd"}, tt.want, []string{"  exit 0"})
			for i := range want {
				want[i] = "15:04:05 " + want[i]
			}
			if got := readLines(t, path); !slices.Equal(got, want) {
				t.Errorf("got %q\nwant %q", got, want)
			}
		})
	}
}

func TestUntrustedTextCannotEmitEscapes(t *testing.T) {
	evil := "hi\x1b[31mred\x1b[0m \x1b]0;pwned\x07title \x1b[2J\x1b[H bell\x07 nul\x00 \u009b31m \u202eabc over\rwrite \x1b]52;c;Y2F0IH4vLnNzaC9pZF9yc2E=\x07\u200f\u061c\u2067x"
	want := []string{
		`15:04:05 » hired title  bell\x07 nul\x00 \u009b31m \u202eabc over`,
		`15:04:05   write \u200f\u061c\u2067x`,
	}
	for _, color := range []bool{false, true} {
		t.Run(fmt.Sprintf("color=%v", color), func(t *testing.T) {
			w, path := openTest(t, Options{Color: color})
			w.AgentMessage(evil)
			w.Reasoning(evil)
			w.CommandFinished(evil, intp(0), evil, evil)
			w.FileChanges([]FileChange{{Path: evil, Kind: evil}})
			w.WebSearch(evil)
			w.Warning(evil)
			w.Error(evil)
			w.Notice(evil)
			w.TurnEnd(evil, evil)
			w.TurnHeader(TurnHeader{From: evil, MessageID: evil, ThreadID: evil})
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			lines := readLines(t, path)
			for _, l := range lines {
				if color {
					checkOnlyOurSequences(t, l)
				} else if strings.ContainsRune(l, 0x1b) {
					t.Errorf("ESC in uncoloured line %q", l)
				}
				for _, r := range safetext.StripANSI(l) {
					if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Cf, r) {
						t.Errorf("control character %U in line %q", r, l)
					}
				}
			}
			plain := w.Tail(len(lines))
			if !slices.Equal(plain[:2], want) {
				t.Errorf("agent message:\n got %q\nwant %q", plain[:2], want)
			}
		})
	}
}

func TestFormatInt(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {19124, "19,124"},
		{123456, "123,456"}, {1234567, "1,234,567"}, {-1234, "-1,234"}, {-12, "-12"},
	}
	for _, tt := range tests {
		if got := formatInt(tt.n); got != tt.want {
			t.Errorf("formatInt(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
