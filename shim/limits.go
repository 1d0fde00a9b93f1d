package shim

import (
	"fmt"
	"unicode/utf8"

	"github.com/battyhq/batty/codex"
)

// promptHeaderMax bounds the characters FormatPrompt puts around a body
// (the header naming the message, its sender and how to answer, and a final
// line break), for the longest id, sender name and attempt number.
const promptHeaderMax = 1024

// MaxBodyChars is the most characters (Unicode code points) a message body
// may have: codex refuses a turn whose input is longer than
// codex.MaxInputChars characters, and the header batty puts before the body
// takes up to promptHeaderMax of them.
const MaxBodyChars = codex.MaxInputChars - promptHeaderMax

// CheckBodyLen refuses a body longer than MaxBodyChars characters, in
// codex's own words, with both figures and how to get around it. It is a
// pure function.
func CheckBodyLen(body string) error {
	if n := utf8.RuneCountInString(body); n > MaxBodyChars {
		return fmt.Errorf("message is %d characters: Input exceeds the maximum length of %d characters "+
			"(Codex takes %d per turn, batty's header included); shorten it, or write it to a file and send the path",
			n, MaxBodyChars, codex.MaxInputChars)
	}
	return nil
}
