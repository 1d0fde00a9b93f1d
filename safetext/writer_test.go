package safetext

import (
	"bytes"
	"strings"
	"testing"
)

// However a stream is cut into writes, a Writer writes what its function
// makes of the whole: a sequence, a CR LF or a rune split between writes
// is still recognised.
func TestWriter(t *testing.T) {
	in := "+a\x1b]52;c;eA==\x07b\r\n+c\rd\u202e\n+é\x1b[2J"
	want := Block(in)
	for cut := range len(in) + 1 {
		var out bytes.Buffer
		w := NewWriter(&out, Block)
		for _, part := range []string{in[:cut], in[cut:]} {
			if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
				t.Fatalf("cut %d: Write(%q) = %d, %v", cut, part, n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("cut %d: got %q, want %q", cut, out.String(), want)
		}
	}
	if strings.ContainsRune(want, '\r') || strings.ContainsRune(want, 0x1b) {
		t.Fatalf("Block left a control: %q", want)
	}
}
