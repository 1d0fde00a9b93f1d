package ptylog

import (
	"strings"
	"unicode/utf8"

	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/textclip"
)

// cleanBlock makes multi-line text from the model or a command safe for the
// transcript (safetext.Text) and trims leading blank lines and trailing
// white space.
func cleanBlock(s string) string {
	s = strings.TrimRight(safetext.Text(s), " \t\n")
	return strings.TrimLeft(s, "\n")
}

// cleanInline makes text meant for a single transcript line safe
// (safetext.Line) and caps it at maxLineRunes, noting how many were cut.
func cleanInline(s string) string {
	return truncateLine(safetext.Line(s, 0))
}

// truncateLine caps s at maxLineRunes runes, noting how many were cut.
func truncateLine(s string) string {
	const limit = maxLineRunes
	if len(s) <= limit {
		return s
	}
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	return textclip.Runes(s, limit, "") + "… (+" + formatInt(int64(n-limit)) + " chars)"
}
