// Package textclip cuts a text to a size without splitting a UTF-8
// character, marking the cut. It is one job: making a text safe to show on
// a terminal is package safetext's (which clips with this package).
//
// Bytes bounds a size in bytes (what is stored or sent), Runes a length in
// characters (what is shown). Both are pure functions and never split a
// UTF-8 sequence of s; invalid bytes in s are kept as they are.
package textclip

import "unicode/utf8"

// Marks of a cut.
const (
	// Ellipsis is the short mark, for a text shown on one line.
	Ellipsis = "…"
	// Truncated is the mark of a stored or sent text that lost its end.
	Truncated = "… [truncated]"
)

// Bytes returns s when it is at most max bytes long; else the longest
// prefix of s that does not split a UTF-8 sequence and leaves room for mark,
// followed by mark: at most max bytes in all (when max < len(mark), mark
// alone). With mark "" it is the longest such prefix of s.
func Bytes(s string, max int, mark string) string {
	if len(s) <= max {
		return s
	}
	n := max - len(mark)
	if n <= 0 {
		return mark
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + mark
}

// Runes returns s when it has at most max runes; else its first runes
// followed by mark, max runes in all (mark counted by its runes; when max
// is less than that, mark alone).
func Runes(s string, max int, mark string) string {
	if len(s) <= max || utf8.RuneCountInString(s) <= max {
		return s
	}
	keep := max - utf8.RuneCountInString(mark)
	if keep <= 0 {
		return mark
	}
	count := 0
	for i := range s {
		if count == keep {
			return s[:i] + mark
		}
		count++
	}
	return s + mark // not reached: s has more than max runes
}
