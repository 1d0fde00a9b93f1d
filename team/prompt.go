package team

import (
	"errors"

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
	text, err := codex.ReadInstructions(abs)
	var tooLong *codex.ArgTooLongError
	switch {
	case errors.As(err, &tooLong):
		p.add(n, "shorten it; keep long reference material in files the agent reads",
			"prompt file %.80q is too large: it becomes a %d-byte developer_instructions argument for codex, at most %d allowed (Linux allows one argument %d bytes plus its terminating NUL, MAX_ARG_STRLEN = %d, and batty keeps %d of them for its own instructions to the agent)",
			written, tooLong.Len, tooLong.Max(), codex.MaxArgLen-1, codex.MaxArgLen, tooLong.Reserved)
		return ""
	case err != nil:
		p.add(n, "", "prompt file %.80q: %v", written, err)
		return ""
	}
	return text
}
