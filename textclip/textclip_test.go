package textclip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBytes(t *testing.T) {
	tests := []struct {
		s    string
		max  int
		mark string
		want string
	}{
		{"hello", 5, Ellipsis, "hello"},
		{"hello", 10, Ellipsis, "hello"},
		{"hello world", 8, Ellipsis, "hello…"},
		{"hello world", 5, "", "hello"},
		{"héllo", 2, "", "h"}, // é is two bytes: not split
		{"héllo", 3, "", "hé"},
		{"日本語", 7, "", "日本"},
		{"日本語", 8, "", "日本"},
		{"日本語テキスト", 10, Ellipsis, "日本…"},
		{"héllo", 2 + len(Ellipsis), Ellipsis, "h…"}, // as scriptedmodel cuts a command's output
		{"abc", 3 + len(Ellipsis), Ellipsis, "abc"},
		{"hello", 2, Ellipsis, Ellipsis}, // no room: the mark alone
		{"hello", 0, "", ""},
		{"hello", -1, "", ""},
		{"", 0, Ellipsis, ""},
		{"abcdefghijklmnopqrstuvwxyz", 20, "… [truncated]", "abcde… [truncated]"},
	}
	for _, tt := range tests {
		if got := Bytes(tt.s, tt.max, tt.mark); got != tt.want {
			t.Errorf("Bytes(%q, %d, %q) = %q, want %q", tt.s, tt.max, tt.mark, got, tt.want)
		}
	}
}

// Cases of the protocol package's former Prefix and Clip.
func TestBytesAsPrefixAndClip(t *testing.T) {
	for _, c := range []struct {
		s          string
		max        int
		prefix     string
		clipped    string
		clipChange bool
	}{
		{"hello", 10, "hello", "hello", false},
		{"hello", 5, "hello", "hello", false},
		{"hello", 4, "hell", "", true},
		{"héllo", 2, "h", "", true},
		{"€€", 4, "€", "", true},
		{"abc", 0, "", "", true},
		{strings.Repeat("x", 20), 16, strings.Repeat("x", 16), "x" + Truncated, true},
	} {
		if got := Bytes(c.s, c.max, ""); got != c.prefix {
			t.Errorf("Bytes(%q, %d, \"\") = %q, want %q", c.s, c.max, got, c.prefix)
		}
		got := Bytes(c.s, c.max, Truncated)
		if len(got) > max(c.max, 0) && c.clipChange && len(c.s) > c.max && c.max >= len(Truncated) {
			t.Errorf("Bytes(%q, %d, Truncated) = %q: longer than the limit", c.s, c.max, got)
		}
		if !c.clipChange && got != c.s {
			t.Errorf("Bytes(%q, %d, Truncated) = %q, want it unchanged", c.s, c.max, got)
		}
		if c.clipped != "" && got != c.clipped {
			t.Errorf("Bytes(%q, %d, Truncated) = %q, want %q", c.s, c.max, got, c.clipped)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Bytes(%q, %d, Truncated) = %q: not valid UTF-8", c.s, c.max, got)
		}
	}
}

func TestRunes(t *testing.T) {
	tests := []struct {
		s    string
		max  int
		mark string
		want string
	}{
		{"hello", 5, Ellipsis, "hello"},
		{"héllo", 5, Ellipsis, "héllo"}, // 6 bytes, 5 runes
		{"hello world", 6, Ellipsis, "hello…"},
		{"日本語テキスト", 3, Ellipsis, "日本…"},
		{"日本語テキスト", 3, "", "日本語"},
		{"hello", 1, Ellipsis, Ellipsis},
		{"hello", 0, "", ""},
		{"", 0, Ellipsis, ""},
	}
	for _, tt := range tests {
		if got := Runes(tt.s, tt.max, tt.mark); got != tt.want {
			t.Errorf("Runes(%q, %d, %q) = %q, want %q", tt.s, tt.max, tt.mark, got, tt.want)
		}
	}
}

func FuzzClip(f *testing.F) {
	f.Add("héllo wörld", 4, "…")
	f.Add("\xff\xfe日本", 3, "")
	f.Fuzz(func(t *testing.T, s string, max int, mark string) {
		max %= 1 << 12
		b := Bytes(s, max, mark)
		switch {
		case len(s) <= max:
			if b != s {
				t.Fatalf("Bytes changed a text within its limit: %q", b)
			}
		case len(mark) >= max:
			if b != mark {
				t.Fatalf("Bytes(%q, %d, %q) = %q, want the mark alone", s, max, mark, b)
			}
		default:
			head := strings.TrimSuffix(b, mark)
			if len(b) > max || !strings.HasPrefix(s, head) || !strings.HasSuffix(b, mark) {
				t.Fatalf("Bytes(%q, %d, %q) = %q", s, max, mark, b)
			}
			if utf8.ValidString(s) && !utf8.ValidString(head) {
				t.Fatalf("Bytes split a character: %q", head)
			}
		}
		r := Runes(s, max, mark)
		if utf8.RuneCountInString(s) <= max {
			if r != s {
				t.Fatalf("Runes changed a text within its limit: %q", r)
			}
		} else if n := utf8.RuneCountInString(r); n > max && r != mark {
			t.Fatalf("Runes(%q, %d, %q) = %q: %d runes", s, max, mark, r, n)
		}
	})
}
