package team

import (
	"errors"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/battyhq/batty/codex"
)

// instructions reads the prompt file abs (given as written in the team
// file) and returns its text without surrounding blank space. It reports a
// file that cannot be read, and one too large to hand to Codex: the text
// travels as codex's developer_instructions argument, which must fit the
// kernel's limit for one argument. Refusing it here means it is never a
// spawn failure while the team runs.
func (p *parser) instructions(n *yaml.Node, written, abs string) string {
	b, err := os.ReadFile(abs)
	if err != nil {
		p.add(n, "", "prompt file %.80q: %v", written, errors.Unwrap(err))
		return ""
	}
	text := strings.TrimSpace(string(b))
	var tooLong *codex.ArgTooLongError
	if err := codex.CheckInstructions(text); errors.As(err, &tooLong) {
		p.add(n, "shorten it; keep long reference material in files the agent reads",
			"prompt file %.80q is too large: its %d bytes become a %d-byte developer_instructions argument for codex, over Linux's limit of %d bytes for one argument (MAX_ARG_STRLEN)",
			written, len(text), tooLong.Len, codex.MaxArgLen)
		return ""
	}
	return text
}
