package ptylog

import (
	"bytes"
	"strings"
	"testing"
)

func TestStripWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"plain", []string{"a\n", "b"}, "a\nb"},
		{"colour", []string{"\x1b[31mred\x1b[0m\n"}, "red\n"},
		{"sequence split between writes", []string{"x \x1b[3", "1mred\x1b[0", "m\nnext\n"}, "x red\nnext\n"},
		{"ESC alone at the end of a write", []string{"a\x1b", "[1mb\n"}, "ab\n"},
		{"partial line without ESC passes at once", []string{"abc", "def\n"}, "abcdef\n"},
		{"held line flushed", []string{"\x1b[1mlast"}, "last"},
		{"OSC", []string{"\x1b]0;title\x07text\n"}, "text\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			s := NewStripWriter(&out)
			for _, w := range tc.writes {
				if n, err := s.Write([]byte(w)); err != nil || n != len(w) {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Fatalf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}

// A line without an ESC is passed on at once, so `batty logs -f` shows a
// partial plain line without waiting for its end.
func TestStripWriterPassesPlainPartialLines(t *testing.T) {
	var out bytes.Buffer
	s := NewStripWriter(&out)
	s.Write([]byte("\x1b[1mdone\x1b[0m\nworking"))
	if out.String() != "done\nworking" {
		t.Fatalf("got %q", out.String())
	}
}

// However the input is cut into writes, the output is StripANSI of the
// whole, and has no ESC left.
func FuzzStripWriter(f *testing.F) {
	f.Add("\x1b[31mred\x1b[0m\nplain\n", uint8(3))
	f.Add("a\x1b]0;t\x07b\nc\x1b", uint8(1))
	f.Add("\x1b(B\x1bPdcs\x1b\\\n", uint8(5))
	f.Fuzz(func(t *testing.T, in string, step uint8) {
		n := int(step%16) + 1
		var out bytes.Buffer
		s := NewStripWriter(&out)
		for i := 0; i < len(in); i += n {
			s.Write([]byte(in[i:min(i+n, len(in))]))
		}
		s.Flush()
		if want := StripANSI(in); out.String() != want {
			t.Fatalf("in %q by %d: got %q, want %q", in, n, out.String(), want)
		}
		if strings.IndexByte(out.String(), esc) >= 0 {
			t.Fatalf("ESC left in %q", out.String())
		}
	})
}
