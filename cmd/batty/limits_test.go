package main

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/codex"
)

// batty send measures a message in characters, the unit of Codex's limit,
// and refuses one Codex would refuse with Codex's wording; nothing is
// written then.
func TestSendLimitIsCodexCharacters(t *testing.T) {
	dir, l := writeTeam(t)
	wide := strings.Repeat("語", 600_000) // 1.8 MB, well within the limit in characters
	id, box := mustSend(t, dir, nil, wide, "architect", "-")
	if m := pendingMessage(t, l, box, id); m.Body != wide {
		t.Fatalf("body of %d bytes stored as %d", len(wide), len(m.Body))
	}

	before, _, _ := openBox(t, l, "architect").Count()
	long := strings.Repeat("x", codex.MaxBodyChars+1) // within the old byte limit
	_, errOut, code := runBattyIn(t, dir, nil, long, "send", "architect", "-")
	if code != 1 || !strings.Contains(errOut, "Input exceeds the maximum length of 1047552 characters") {
		t.Fatalf("over the limit: exit %d, stderr %.300s", code, errOut)
	}
	if after, _, _ := openBox(t, l, "architect").Count(); after != before {
		t.Fatalf("%d pending after a refused send, want %d", after, before)
	}
}

// batty chat does not send a line Codex would refuse: it says why and the
// line counts as failed.
func TestChatRefusesALineOverCodexLimit(t *testing.T) {
	long := strings.Repeat("x", codex.MaxBodyChars+1)
	out, errOut, code := runBatty(t, nil, long+"\n", "chat", "--codex-bin", "/nonexistent/codex")
	if code != 1 || !strings.Contains(errOut, "chat-1 not sent") || !strings.Contains(errOut, "Input exceeds the maximum length of 1047552 characters") {
		t.Fatalf("exit %d\nstdout:\n%.300s\nstderr:\n%.300s", code, out, errOut)
	}
	if strings.Contains(out, "chat-1") {
		t.Fatalf("the line was sent:\n%.300s", out)
	}
}
