package ptylog

import (
	"bytes"
	"testing"

	"github.com/battyhq/batty/safetext"
)

func TestCleanWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		colour bool
		writes []string
		want   string
	}{
		{"plain", false, []string{"a\n", "b"}, "a\nb"},
		{"colour stripped", false, []string{"\x1b[31mred\x1b[0m\n"}, "red\n"},
		{"colour kept", true, []string{"\x1b[31mred\x1b[0m\n"}, "\x1b[31mred\x1b[0m\n"},
		{"sequence split between writes", false, []string{"x \x1b[3", "1mred\x1b[0", "m\nnext\n"}, "x red\nnext\n"},
		{"sgr split between writes kept", true, []string{"x \x1b[3", "1mred\n"}, "x \x1b[31mred\n"},
		{"ESC alone at the end of a write", false, []string{"a\x1b", "[1mb\n"}, "ab\n"},
		{"partial line without ESC passes at once", false, []string{"abc", "def\n"}, "abcdef\n"},
		{"held line flushed", false, []string{"\x1b[1mlast"}, "last"},
		{"OSC", false, []string{"\x1b]0;title\x07text\n"}, "text\n"},
		{"OSC 52 and title dropped with colour on", true, []string{"\x1b]52;c;eA==\x07a\x1b]0;t\x1b\\b\n"}, "ab\n"},
		{"CR LF split between writes", true, []string{"a\r", "\nb\n"}, "a\nb\n"},
		{"rune split between writes", true, []string{"\xc3", "\xa9\n"}, "é\n"},
		{"bidi and controls shown", true, []string{"\u202eevil\x07\x08\n"}, `\u202eevil\x07\x08` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			c := NewCleanWriter(&out, tc.colour)
			for _, w := range tc.writes {
				if n, err := c.Write([]byte(w)); err != nil || n != len(w) {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Fatalf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}

// A plain partial line is passed on at once, so `batty logs -f` shows it
// without waiting for its end.
func TestCleanWriterPassesPlainPartialLines(t *testing.T) {
	var out bytes.Buffer
	c := NewCleanWriter(&out, false)
	c.Write([]byte("\x1b[1mdone\x1b[0m\nworking"))
	if out.String() != "done\nworking" {
		t.Fatalf("got %q", out.String())
	}
}

// However the input is cut into writes, the output is the whole cleaned at
// once.
func FuzzCleanWriter(f *testing.F) {
	f.Add("\x1b[31mred\x1b[0m\nplain\n", uint8(3), false)
	f.Add("a\x1b]0;t\x07b\nc\x1b", uint8(1), true)
	f.Add("\x1b(B\x1bPdcs\x1b\\\n", uint8(5), true)
	f.Add("é\r\n\u202e", uint8(1), false)
	f.Fuzz(func(t *testing.T, in string, step uint8, colour bool) {
		n := int(step%16) + 1
		var out bytes.Buffer
		c := NewCleanWriter(&out, colour)
		for i := 0; i < len(in); i += n {
			c.Write([]byte(in[i:min(i+n, len(in))]))
		}
		c.Flush()
		want := safetext.Text(in)
		if colour {
			want = safetext.Styled(in)
		}
		if out.String() != want {
			t.Fatalf("in %q by %d: got %q, want %q", in, n, out.String(), want)
		}
	})
}
