package shim

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/battyhq/batty/safetext"
)

func TestMessagePreview(t *testing.T) {
	long := strings.Repeat("é", 250)
	tests := []struct {
		name, body string
		want       []string
	}{
		{"one line", "hello", []string{"hello"}},
		{"leading blank lines", "\n\n  hi  \n", []string{"hi"}},
		{"three lines", "a\nb\nc", []string{"a", "b", "c"}},
		{"more lines", "a\n\nc\nd\ne", []string{"a", "", "c", "… 2 more lines"}},
		{"one more line", "a\nb\nc\nd", []string{"a", "b", "c", "… 1 more line"}},
		{"long line", long, []string{strings.Repeat("é", 199) + "…"}},
		{"empty", " \n ", nil},
	}
	for _, tc := range tests {
		if got := messagePreview(tc.body); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: messagePreview(%q) = %q, want %q", tc.name, tc.body, got, tc.want)
		}
	}
}

// TestTranscriptShowsIncomingMessage: the transcript shows the first lines
// of the message that starts a turn, under its header, cleaned.
func TestTranscriptShowsIncomingMessage(t *testing.T) {
	h := startShim(t, nil)
	h.send("20261121T120000.000000000Z-1f2e3d4c", "please review\x1b]0;title\x07 the build\nsecond line\nthird\nfourth\nfifth")
	h.expect(kAccepted, kState, kStarted, kThread, kFinished, kState)
	data, err := os.ReadFile(h.cfg.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	text := safetext.StripANSI(string(data))
	// The header names the message by its short id (inbox.ShortID).
	for _, want := range []string{"message 1f2e3d4c from human", "│ please review the build", "│ second line", "│ third", "│ … 2 more lines"} {
		if !strings.Contains(text, want) {
			t.Errorf("transcript lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "fourth") || strings.Contains(text, "title") || strings.Contains(text, "message 2026") {
		t.Errorf("transcript shows more than the preview, or an escape's text:\n%s", text)
	}
}
