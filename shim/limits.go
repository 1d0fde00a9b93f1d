package shim

import (
	"github.com/battyhq/batty/codex"
)

// promptHeaderMax bounds the characters FormatPrompt puts around a body
// (codex.PromptHeaderMax).
const promptHeaderMax = codex.PromptHeaderMax

// MaxBodyChars is the most characters (Unicode code points) a message body
// may have (codex.MaxBodyChars): codex refuses a turn whose input is longer
// than codex.MaxInputChars characters, and the header batty puts before the
// body takes up to promptHeaderMax of them.
const MaxBodyChars = codex.MaxBodyChars

// CheckBodyLen refuses a body longer than MaxBodyChars characters, in
// codex's own words, with both figures and how to get around it
// (codex.CheckBodyLen). It is a pure function.
func CheckBodyLen(body string) error { return codex.CheckBodyLen(body) }
