package textclip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTail(t *testing.T) {
	for _, c := range []struct {
		s    string
		max  int
		mark string
		want string
	}{
		{"hello", 5, "…", "hello"},
		{"hello world", 8, "…", "…world"}, // 3 bytes of mark, 5 of text
		{"ab€cd", 5, "", "€cd"},           // never starts inside €
		{"ab€cd", 4, "", "cd"},            // … nor mid-sequence
		{"hello world", 2, Truncated, ""}, // the mark cut to max, whole characters
		{"", 0, "…", ""},
	} {
		got := Tail(c.s, c.max, c.mark)
		if got != c.want || len(got) > max(c.max, 0) && c.s != got {
			t.Errorf("Tail(%q, %d, %q) = %q, want %q", c.s, c.max, c.mark, got, c.want)
		}
	}
}

func TestTailWriter(t *testing.T) {
	w := &TailWriter{Max: 10, Mark: "…"}
	w.Write([]byte("short"))
	if got := w.String(); got != "short" {
		t.Fatalf("uncut: %q", got)
	}
	for range 100 {
		w.Write([]byte("0123456789€"))
	}
	got := w.String()
	if !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "€") || len(got) > 10 || !utf8.ValidString(got) {
		t.Fatalf("cut: %q", got)
	}
	if len(w.b) > 2*w.Max {
		t.Fatalf("holds %d bytes", len(w.b))
	}
}

// The cases of a setup's output tail: the mark "… " and whole characters.
func TestTailWriterCases(t *testing.T) {
	for _, tc := range []struct {
		writes []string
		max    int
		want   string
	}{
		{[]string{"ab", "cd"}, 10, "abcd"},
		{[]string{"abcdef", "gh"}, 6, "… gh"},
		{[]string{"0123456789"}, 10, "0123456789"},
		{[]string{"0123456789x"}, 10, "… 56789x"},
		{[]string{"ab", "0123456789"}, 10, "… 456789"},
		{[]string{"abcdé", "x"}, 6, "… x"}, // never starts inside a character
	} {
		b := &TailWriter{Max: tc.max, Mark: Ellipsis + " "}
		for _, w := range tc.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatal(n, err)
			}
		}
		if got := b.String(); got != tc.want || len(got) > tc.max {
			t.Errorf("%q max %d = %q, want %q", tc.writes, tc.max, got, tc.want)
		}
	}
}

// A verify's output: the end kept, whole characters, the cut marked.
func TestTailOfALongOutput(t *testing.T) {
	s := strings.Repeat("é", 3000) + "END"
	got := Tail(s, 4096, Truncated+"\n")
	if len(got) > 4096 || !strings.HasSuffix(got, "END") || !utf8.ValidString(got) || !strings.HasPrefix(got, Truncated+"\n") {
		t.Fatalf("Tail = %d bytes, valid %v, %q...", len(got), utf8.ValidString(got), got[:20])
	}
}

func TestHeadWriter(t *testing.T) {
	h := &HeadWriter{Max: 5}
	for _, w := range []string{"abc", "defgh", "ij"} {
		if n, err := h.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatal(n, err)
		}
	}
	if h.String() != "abcde" {
		t.Fatalf("HeadWriter kept %q", h.String())
	}
}
