package ptylog

import (
	"strings"
	"unicode/utf8"
)

const esc = 0x1b

// StripANSI returns s without ANSI escape sequences: CSI (ESC [ ... final),
// OSC/DCS/SOS/PM/APC strings (terminated by BEL or ESC \, or cut at the end
// of the line when unterminated) and two-character escapes. All other bytes,
// including other control characters, are kept. It never blocks and returns
// s itself when there is nothing to strip.
func StripANSI(s string) string {
	i := strings.IndexByte(s, esc)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		s = s[skipEscape(s, i):]
		i = strings.IndexByte(s, esc)
	}
	b.WriteString(s)
	return b.String()
}

// skipEscape returns the index just past the escape sequence that starts
// with the ESC at s[i].
func skipEscape(s string, i int) int {
	j := i + 1
	if j >= len(s) {
		return j
	}
	c := s[j]
	switch {
	case c == '[': // CSI: parameters and intermediates, then a final byte.
		j++
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
			j++
		}
		if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
			j++
		}
		return j
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_': // control strings
		j++
		for ; j < len(s); j++ {
			switch s[j] {
			case 0x07:
				return j + 1
			case esc:
				if j+1 < len(s) && s[j+1] == '\\' {
					return j + 2
				}
				return j // an ESC aborts the string and starts a new sequence
			case '\n':
				return j
			}
		}
		return j
	case c >= 0x20 && c <= 0x2f: // nF: intermediates, then a final byte.
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
			j++
		}
		if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7e {
			j++
		}
		return j
	case c >= 0x30 && c <= 0x7e: // Fp, Fe, Fs: ESC 7, ESC M, ESC c, ...
		return j + 1
	default: // a lone ESC
		return j
	}
}

// safeText reports whether s is printable ASCII plus \n and \t only.
func safeText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// sanitize makes untrusted text safe to print in a terminal: escape
// sequences are removed, "\r\n" becomes "\n" and a lone "\r" becomes "\n",
// other C0/C1 control characters, DEL and bidirectional overrides are shown
// escaped (\x07, \u009b, \u202e), invalid UTF-8 becomes U+FFFD. \n and \t are
// kept.
func sanitize(s string) string {
	if safeText(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == esc:
				i = skipEscape(s, i)
				continue
			case c == '\r':
				if i+1 < len(s) && s[i+1] == '\n' {
					i++ // the \n is written next round
					continue
				}
				b.WriteByte('\n')
			case c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f):
				b.WriteByte(c)
			default:
				writeEscaped(&b, rune(c))
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case unsafeRune(r):
			writeEscaped(&b, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports non-ASCII runes a terminal would interpret rather than
// print: C1 controls (U+0080-U+009F, which include the 8-bit CSI) and the
// bidirectional embedding, override and isolate controls.
func unsafeRune(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) ||
		(r >= 0x202a && r <= 0x202e) ||
		(r >= 0x2066 && r <= 0x2069)
}

const hexDigits = "0123456789abcdef"

// writeEscaped writes r as \xHH (below U+0100 and ASCII) or \uHHHH.
func writeEscaped(b *strings.Builder, r rune) {
	if r < 0x80 {
		b.WriteString(`\x`)
		b.WriteByte(hexDigits[r>>4])
		b.WriteByte(hexDigits[r&0xf])
		return
	}
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(r>>shift)&0xf])
	}
}

// cleanBlock sanitizes multi-line text and trims leading blank lines and
// trailing whitespace.
func cleanBlock(s string) string {
	s = sanitize(s)
	s = strings.TrimRight(s, " \t\n")
	return strings.TrimLeft(s, "\n")
}

// cleanInline sanitizes text meant for a single line: newlines and tabs
// become spaces, surrounding space is trimmed and the result is capped at
// maxLineRunes.
func cleanInline(s string) string {
	s = sanitize(s)
	if strings.ContainsAny(s, "\n\t") {
		s = strings.Map(func(r rune) rune {
			if r == '\n' || r == '\t' {
				return ' '
			}
			return r
		}, s)
	}
	return truncateLine(strings.TrimSpace(s), maxLineRunes)
}

// truncateLine caps s at limit runes, noting how many were cut.
func truncateLine(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	cut, count := 0, 0
	for i := range s {
		if count == limit {
			cut = i
			break
		}
		count++
	}
	return s[:cut] + "… (+" + formatInt(int64(n-limit)) + " chars)"
}

// OneLine makes s safe as one line of a title, pane or feed: every control
// character (C0, DEL, C1; newlines and escapes included) becomes a space,
// and s is cut after max runes, ending with "…". It keeps everything else
// as it is (strip colours first with StripANSI). It is a pure function.
func OneLine(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
