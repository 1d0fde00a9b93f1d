package shim

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
)

// The longest header FormatPrompt writes fits in promptHeaderMax, so a body
// of MaxBodyChars characters never makes codex refuse the prompt.
func TestLongestPromptFitsCodexLimit(t *testing.T) {
	body := strings.Repeat("é", MaxBodyChars)
	for _, m := range []protocol.SendMessage{
		{ID: strings.Repeat("i", inbox.MaxIDLen), From: strings.Repeat("a", inbox.MaxNameLen), Body: body, Attempt: inbox.MaxAttempt},
		{ID: strings.Repeat("i", inbox.MaxIDLen), From: HumanSender, Body: body, Attempt: inbox.MaxAttempt},
		{ID: strings.Repeat("i", inbox.MaxIDLen), From: strings.Repeat("a", inbox.MaxNameLen), Body: body, Attempt: inbox.MaxAttempt,
			RetryNote: strings.Repeat("é", 1<<20)},
		{ID: strings.Repeat("i", inbox.MaxIDLen), From: strings.Repeat("a", inbox.MaxNameLen), Body: body, Attempt: inbox.MaxAttempt,
			RetryNote: strings.Repeat("é", 1<<20), InReplyTo: strings.Repeat("r", 1<<20)},
	} {
		if n := utf8.RuneCountInString(FormatPrompt(m)); n > codex.MaxInputChars {
			t.Errorf("prompt of %d characters, codex takes %d", n, codex.MaxInputChars)
		}
	}
	if len(body) > inbox.MaxBodyLen {
		t.Errorf("a body of MaxBodyChars two-byte characters (%d bytes) is over inbox.MaxBodyLen %d", len(body), inbox.MaxBodyLen)
	}
	if max4 := 4 * MaxBodyChars; max4 > inbox.MaxBodyLen {
		t.Errorf("MaxBodyChars four-byte characters (%d bytes) are over inbox.MaxBodyLen %d", max4, inbox.MaxBodyLen)
	}
}

func TestCheckBodyLen(t *testing.T) {
	if err := CheckBodyLen(strings.Repeat("語", MaxBodyChars)); err != nil {
		t.Fatalf("a body of MaxBodyChars characters: %v", err)
	}
	err := CheckBodyLen(strings.Repeat("x", MaxBodyChars+1))
	if err == nil || !strings.Contains(err.Error(), "Input exceeds the maximum length of 1047552 characters") {
		t.Fatalf("error = %v", err)
	}
}
