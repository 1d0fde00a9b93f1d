package shim

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

// TestTranscriptStream: a shim with TranscriptStream writes no file and
// sends its transcript's lines to the parent instead, in order: the
// start notice, then the turn's header and its end.
func TestTranscriptStream(t *testing.T) {
	var file string
	h := startShim(t, func(c *shimconfig.Config) { file, c.TranscriptStream = c.Transcript, true })
	h.send("m1", "hello")
	h.expect(kAccepted, kState, kStarted, kThread)
	h.finished("m1", protocol.TurnCompleted)
	deadline := time.Now().Add(eventWait)
	for !strings.Contains(h.tlines.String(), "completed") {
		if time.Now().After(deadline) {
			t.Fatalf("transcript lines: %q", h.tlines.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	all := h.tlines.String()
	start, header := strings.Index(all, "shim started for tester"), strings.Index(all, "m1")
	if start < 0 || header < start {
		t.Fatalf("transcript lines: %q", all)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a transcript file was written: %v", err)
	}
}
