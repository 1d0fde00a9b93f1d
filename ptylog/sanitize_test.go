package ptylog

import "testing"

func TestSanitize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello world", "hello world"},
		{"newline and tab kept", "a\n\tb", "a\n\tb"},
		{"unicode kept", "héllo 世界 ✔", "héllo 世界 ✔"},
		{"sgr stripped", "a\x1b[31mred\x1b[0m", "ared"},
		{"cursor movement stripped", "\x1b[2J\x1b[1;1Hx\x1b[?25l", "x"},
		{"osc title with bel", "\x1b]0;pwned\x07title", "title"},
		{"osc hyperlink with st", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"unterminated osc stops at newline", "a\x1b]0;title\nnext", "a\nnext"},
		{"dcs stripped", "\x1bPq#0;2;0;0;0\x1b\\ok", "ok"},
		{"two-byte escape", "\x1bc reset \x1b7", " reset "},
		{"charset escape", "\x1b(Bx", "x"},
		{"lone esc at end", "end\x1b", "end"},
		{"esc before control", "a\x1b\x07b", `a\x07b`},
		{"bell escaped", "bell\x07", `bell\x07`},
		{"nul escaped", "nul\x00", `nul\x00`},
		{"backspace escaped", "ab\bc", `ab\x08c`},
		{"del escaped", "del\x7f", `del\x7f`},
		{"crlf normalized", "a\r\nb", "a\nb"},
		{"lone cr becomes newline", "over\rwrite", "over\nwrite"},
		{"c1 csi escaped", "\u009b31m", `\u009b31m`},
		{"bidi override escaped", "rtl\u202egnp\u2066", `rtl\u202egnp\u2066`},
		{"invalid utf8 replaced", "bad\xffutf", "bad\uFFFDutf"},
		{"backslash sequences left alone", `\x1b[31m`, `\x1b[31m`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sanitize(tt.in); got != tt.want {
				t.Errorf("sanitize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestStripANSI(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no escapes", "plain", "plain"},
		{"our colours", "\x1b[2m15:04:05\x1b[0m \x1b[1;36mhead\x1b[0m", "15:04:05 head"},
		{"osc", "\x1b]0;t\x07x", "x"},
		{"other controls kept", "a\x07b\tc", "a\x07b\tc"},
		{"trailing esc", "x\x1b", "x"},
		{"truncated csi", "x\x1b[31", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StripANSI(tt.in); got != tt.want {
				t.Errorf("StripANSI(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCleanInline(t *testing.T) {
	if got, want := cleanInline(" a\nb\tc \x1b[1m"), "a b c"; got != want {
		t.Errorf("cleanInline = %q, want %q", got, want)
	}
}

func TestOneLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"two\nlines\tand\x1b[31mred\x7f\u009bcsi", 100, "two lines and [31mred  csi"},
		{"abcdef", 4, "abcd…"},
		{"abcd", 4, "abcd"},
		{"ééééé", 4, "éééé…"},
	} {
		if got := OneLine(c.in, c.max); got != c.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}
