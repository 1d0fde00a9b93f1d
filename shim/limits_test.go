package shim

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/team"
)

// The longest header FormatPrompt writes fits in codex.PromptHeaderMax, so a body
// of codex.MaxBodyChars characters never makes codex refuse the prompt.
func TestLongestPromptFitsCodexLimit(t *testing.T) {
	body := strings.Repeat("é", codex.MaxBodyChars)
	for _, m := range []protocol.SendMessage{
		{ID: strings.Repeat("i", inbox.MaxIDLen), From: strings.Repeat("a", inbox.MaxNameLen), Body: body, Attempt: inbox.MaxAttempt},
		{ID: strings.Repeat("i", inbox.MaxIDLen), From: team.Human, Body: body, Attempt: inbox.MaxAttempt},
		{ID: strings.Repeat("i", inbox.MaxIDLen), From: strings.Repeat("a", inbox.MaxNameLen), Body: body, Attempt: inbox.MaxAttempt,
			RetryNote: strings.Repeat("é", 1<<20)},
		{ID: strings.Repeat("i", inbox.MaxIDLen), From: strings.Repeat("a", inbox.MaxNameLen), Body: body, Attempt: inbox.MaxAttempt,
			RetryNote: strings.Repeat("é", 1<<20), InReplyTo: strings.Repeat("r", 1<<20)},
		{ID: strings.Repeat("i", inbox.MaxIDLen), From: strings.Repeat("a", inbox.MaxNameLen), Body: body, Attempt: inbox.MaxAttempt,
			RetryNote: strings.Repeat("é", 1<<20), InReplyTo: strings.Repeat("r", 1<<20), Notice: strings.Repeat("é", 1<<20)},
		{ID: strings.Repeat("i", inbox.MaxIDLen), From: strings.Repeat("a", inbox.MaxNameLen), Body: body, Attempt: inbox.MaxAttempt,
			InReplyTo: strings.Repeat("r", 1<<20), Notice: strings.Repeat("é", 1<<20)},
	} {
		if n := utf8.RuneCountInString(FormatPrompt(m)); n > codex.MaxInputChars {
			t.Errorf("prompt of %d characters, codex takes %d", n, codex.MaxInputChars)
		}
	}
	if len(body) > inbox.MaxBodyLen {
		t.Errorf("a body of codex.MaxBodyChars two-byte characters (%d bytes) is over inbox.MaxBodyLen %d", len(body), inbox.MaxBodyLen)
	}
	if max4 := 4 * codex.MaxBodyChars; max4 > inbox.MaxBodyLen {
		t.Errorf("codex.MaxBodyChars four-byte characters (%d bytes) are over inbox.MaxBodyLen %d", max4, inbox.MaxBodyLen)
	}
}
