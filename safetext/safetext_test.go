package safetext

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "hello world", "hello world"},
		{"newline and tab kept", "a\n\tb", "a\n\tb"},
		{"unicode kept", "héllo 世界 ✔", "héllo 世界 ✔"},
		{"emoji joiners kept", "👩\u200d💻 نیم\u200cفاصله", "👩\u200d💻 نیم\u200cفاصله"},
		{"sgr dropped", "a\x1b[31mred\x1b[0m", "ared"},
		{"cursor movement dropped", "\x1b[2J\x1b[1;1Hx\x1b[?25l", "x"},
		{"osc 0 title with bel", "\x1b]0;pwned\x07title", "title"},
		{"osc 52 clipboard with st", "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x1b\\ok", "ok"},
		{"osc hyperlink", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"unterminated osc stops at newline", "a\x1b]0;title\nnext", "a\nnext"},
		{"dcs dropped", "\x1bPq#0;2;0;0;0\x1b\\ok", "ok"},
		{"two-byte escape", "\x1bc reset \x1b7", " reset "},
		{"charset escape", "\x1b(Bx", "x"},
		{"lone esc at end", "end\x1b", "end"},
		{"esc before control", "a\x1b\x07b", `a\x07b`},
		{"bell", "bell\x07", `bell\x07`},
		{"nul", "nul\x00", `nul\x00`},
		{"backspace", "ab\bc", `ab\x08c`},
		{"del", "del\x7f", `del\x7f`},
		{"crlf", "a\r\nb", "a\nb"},
		{"lone cr", "over\rwrite", "over\nwrite"},
		{"c1 csi", "\u009b31m", `\u009b31m`},
		{"c1 next line", "a\u0085b", `a\u0085b`},
		{"raw 8-bit csi is invalid utf-8", "a\x9b31m", "a\uFFFD31m"},
		{"bidi override and isolate", "rtl\u202egnp\u2066", `rtl\u202egnp\u2066`},
		{"bidi embeddings", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
		{"bidi isolates", "\u2067\u2068\u2069", `\u2067\u2068\u2069`},
		{"bidi marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		{"zero width space and bom", "a\u200bb\ufeff", `a\u200bb\ufeff`},
		{"line and paragraph separators", "a\u2028b\u2029", `a\u2028b\u2029`},
		{"tag characters", "x\U000e0041\U000e007f", `x\U000e0041\U000e007f`},
		{"invalid utf8", "bad\xffutf", "bad\uFFFDutf"},
		{"backslash sequences left alone", `\x1b[31m`, `\x1b[31m`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestBlock(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"+a\r-b\n", `+a\x0d-b` + "\n"},
		{"+a\r\n+b\n", "+a\n+b\n"},
		{"+\x1b]52;c;eA==\x07x\x1b[2J\u202e\tend\r", `+x\u202e` + "\tend" + `\x0d`},
	} {
		if got := Block(tt.in); got != tt.want {
			t.Errorf("Block(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStyled(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"\x1b[2m15:04:05\x1b[0m \x1b[1;36mhead\x1b[0m", "\x1b[2m15:04:05\x1b[0m \x1b[1;36mhead\x1b[0m"},
		{"\x1b[31mred\x1b]52;c;eA==\x07\x1b[2J\u202e\r\n", "\x1b[31mred\\u202e\n"},
		{"\x1b[?25l\x1b[38:5:1m\x1b[m", "\x1b[m"},
	} {
		if got := Styled(tt.in); got != tt.want {
			t.Errorf("Styled(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLine(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"  two\nlines\r\n\tand \x1b[31mred\x7f\u009bcsi\n", 0, `two lines and red\x7f\u009bcsi`},
		{"title\x1b]0;pwned\x07 \u202eevil", 0, `title \u202eevil`},
		{"abcdef", 4, "abc…"},
		{"abcd", 4, "abcd"},
		{"ab cdef", 4, "ab…"},
		{"ééééé", 4, "ééé…"},
		{"x", 1, "x"},
		{"xy", 1, "…"},
		{"\r\n", 5, ""},
		{"a\r\x1b\rb", 0, "a b"}, // a dropped ESC between breaks: still one space
	} {
		if got := Line(tt.in, tt.max); got != tt.want {
			t.Errorf("Line(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestStripANSI(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[2m15:04:05\x1b[0m \x1b[1;36mhead\x1b[0m", "15:04:05 head"},
		{"\x1b]0;t\x07x", "x"},
		{"a\x07b\tc", "a\x07b\tc"},
		{"x\x1b", "x"},
		{"x\x1b[31", "x"},
	} {
		if got := StripANSI(tt.in); got != tt.want {
			t.Errorf("StripANSI(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCleanTextIsNotCopied(t *testing.T) {
	s := strings.Repeat("clean text\n\twith lines ", 10)
	if n := testing.AllocsPerRun(10, func() { _ = Text(s) }); n != 0 {
		t.Errorf("Text of clean text allocates %v times", n)
	}
}

// badRune reports a rune no output may hold: a control character (ESC,
// CR, BEL, DEL, C1…), a line or paragraph separator, or an invisible
// format character other than the joiners. keep lists the controls
// allowed.
func badRune(r rune, keep string) bool {
	if strings.ContainsRune(keep, r) {
		return false
	}
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' ||
		(unicode.Is(unicode.Cf, r) && r != '\u200c' && r != '\u200d')
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "plain", "a\x1b]52;c;eA==\x07b", "\x1b]0;t\x1b\\", "\u202eabc\u2066", "a\r\nb\rc\bd",
		"\x1b[31mred\x1b[0m", "\xff\xfe", "\u009b2J", "tab\there\n\n", "\U000e0041", "é", "\x1b", "\x1b[", "\x1bP"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 1000
		text := Text(s)
		line := Line(s, max)
		styled := Styled(s)
		block := Block(s)
		for name, out := range map[string]string{"Text": text, "Line": line, "Styled": StripANSI(styled), "Block": block} {
			if !utf8.ValidString(out) {
				t.Fatalf("%s(%q) = %q: not valid UTF-8", name, s, out)
			}
			keep := "\n\t"
			if name == "Line" {
				keep = ""
			}
			for _, r := range out {
				if badRune(r, keep) {
					t.Fatalf("%s(%q) = %q holds %U", name, s, out, r)
				}
			}
		}
		if max > 0 && utf8.RuneCountInString(line) > max {
			t.Fatalf("Line(%q, %d) = %q: more than %d runes", s, max, line, max)
		}
		if Text(text) != text {
			t.Fatalf("Text is not idempotent on %q: %q, then %q", s, text, Text(text))
		}
		if l2 := Line(line, max); l2 != line {
			t.Fatalf("Line is not idempotent on %q: %q, then %q", s, line, l2)
		}
		if Block(block) != block {
			t.Fatalf("Block is not idempotent on %q: %q, then %q", s, block, Block(block))
		}
		if strings.Count(block, "\n") != strings.Count(s, "\n") {
			t.Fatalf("Block(%q) = %q: not one line per line", s, block)
		}
		if Styled(styled) != styled {
			t.Fatalf("Styled is not idempotent on %q: %q, then %q", s, styled, Styled(styled))
		}
		if Line(text, max) != line {
			t.Fatalf("Line(Text(%q)) = %q, Line = %q", s, Line(text, max), line)
		}
	})
}
