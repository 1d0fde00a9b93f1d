package ptylog

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestStampFormat: every line of the file starts with the full time it
// was written, to the millisecond with its zone, dim when coloured; the
// Tail ring keeps the time of day.
func TestStampFormat(t *testing.T) {
	zone := time.FixedZone("", 2*3600)
	at := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, zone)
	for _, color := range []bool{false, true} {
		w, path := openTest(t, Options{Color: color, Now: func() time.Time { return at }})
		w.Notice("hello")
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want := "2026-03-04T05:06:07.890+02:00 [batty] hello\n"
		if color {
			want = styleDim + "2026-03-04T05:06:07.890+02:00" + styleReset + " " + styleCyan + "[batty] " + styleReset + styleCyan + "hello" + styleReset + "\n"
		}
		if string(data) != want {
			t.Errorf("color=%v: file = %q, want %q", color, data, want)
		}
		got, ok := ParseStamp(string(data))
		if !ok || !got.Equal(at) {
			t.Errorf("color=%v: ParseStamp = %v %v, want %v", color, got, ok, at)
		}
		if tail := w.Tail(1); len(tail) != 1 || tail[0] != "05:06:07 [batty] hello" {
			t.Errorf("color=%v: Tail = %q", color, tail)
		}
	}
}

func TestShortStamps(t *testing.T) {
	tests := []struct{ in, want string }{
		{"2026-03-04T05:06:07.890Z a\n", "05:06:07 a\n"},
		{"2026-03-04T05:06:07.890+02:00 a\nb\n\x1b[2m2026-03-04T23:59:59.000-07:00\x1b[0m c", "05:06:07 a\nb\n\x1b[2m23:59:59\x1b[0m c"},
		{"12:00:00 old transcript\n", "12:00:00 old transcript\n"},
		{"2026-13-04T05:06:07.890Z bad month\n", "2026-13-04T05:06:07.890Z bad month\n"},
		{"text 2026-03-04T05:06:07.890Z inside\n", "text 2026-03-04T05:06:07.890Z inside\n"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := ShortStamps(tc.in); got != tc.want {
			t.Errorf("ShortStamps(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzStamps(f *testing.F) {
	f.Add("2026-03-04T05:06:07.890+02:00 a\nb")
	f.Add("\x1b[2m2026-03-04T05:06:07.890Z\x1b[0m")
	f.Add("2026-03-04T")
	f.Fuzz(func(t *testing.T, s string) {
		short := ShortStamps(s)
		if strings.Count(short, "\n") != strings.Count(s, "\n") {
			t.Fatalf("ShortStamps(%q) = %q changed the lines", s, short)
		}
		ParseStamp(s)
	})
}
