package codex

import (
	"fmt"
	"unicode/utf8"
)

// PromptHeaderMax bounds the characters batty's prompt puts around a
// message body (shim.FormatPrompt: the header naming the message, its
// sender and how to answer, and a final line break), for the longest id,
// sender name and attempt number.
const PromptHeaderMax = 1024

// MaxBodyChars is the most characters (Unicode code points) a message body
// may have: codex refuses a turn whose input is longer than MaxInputChars
// characters, and batty's header takes up to PromptHeaderMax of them.
const MaxBodyChars = MaxInputChars - PromptHeaderMax

// CheckBodyLen refuses a body longer than MaxBodyChars characters, in
// codex's own words, with both figures and how to get around it. It is a
// pure function.
func CheckBodyLen(body string) error {
	if n := utf8.RuneCountInString(body); n > MaxBodyChars {
		return fmt.Errorf("message is %d characters: Input exceeds the maximum length of %d characters "+
			"(Codex takes %d per turn, batty's header included); shorten it, or write it to a file and send the path",
			n, MaxBodyChars, MaxInputChars)
	}
	return nil
}
