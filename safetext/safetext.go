// Package safetext makes text that batty did not write itself — a model's
// reply, an agent's message, Codex's error, a line of a file — safe to print
// on a terminal or to hand on as one line (a pane title, an environment
// variable).
//
// Such text could otherwise drive the terminal that shows it: an OSC 52
// sequence writes the clipboard, OSC 0 sets the window title, CSI moves
// the cursor over earlier output, a carriage return or backspaces overwrite
// a line, and the bidirectional controls (U+202E and its kin) show text in
// another order than it is read (and run). Every place of batty that prints
// or hands on outside text goes through Line or Text; the transcript reader
// keeps its own colours with Styled. Writer cleans a stream (a transcript,
// a diff) a line at a time with any of them.
//
// What is removed and how it is shown:
//
//   - An escape sequence (ESC followed by CSI parameters and a final byte,
//     an OSC, DCS, SOS, PM or APC string up to its BEL or ESC \ — or to the
//     end of the line when it has none — or a two-character escape) is
//     dropped whole, and so is an ESC that starts none: it is formatting,
//     mostly the colours of a command's output, and shows nothing worth
//     reading.
//   - Every other control character (C0 but newline and tab, DEL, C1), the
//     line and paragraph separators U+2028 and U+2029, and the invisible
//     format characters (Unicode category Cf: the bidirectional marks,
//     embeddings, overrides and isolates U+200E, U+200F, U+061C,
//     U+202A–U+202E, U+2066–U+2069, zero-width spaces, U+FEFF, the tag
//     characters, …), save the zero-width joiner and non-joiner that
//     scripts and emoji need, is shown as a visible escape in Go's notation:
//     `\x07`, `\x7f`, `\u009b`, `\u202e`, `\U000e0041`. The reader sees that
//     something was there and what.
//   - Invalid UTF-8 becomes U+FFFD.
//   - Text keeps newlines and tabs; a CR LF becomes a newline and a lone CR
//     a newline too (it would overwrite the line). Block, for text whose
//     lines mean something each (a diff), shows a lone CR escaped instead,
//     so that every line shown is a line of the text. Line turns every run
//     of newlines, carriage returns and tabs into one space.
//
// The functions (but Writer) are pure, never fail, and are idempotent: cleaning clean
// text changes nothing, and text without anything to clean is returned as
// it is without allocating.
package safetext

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/battyhq/batty/textclip"
)

const esc = 0x1b

// Text returns s safe to print on a terminal, its lines kept: escape
// sequences are dropped, a CR LF or a lone CR becomes "\n", every other
// control character and invisible format character is shown escaped
// (`\x07`, `\u202e`), invalid UTF-8 becomes U+FFFD. Only "\n" and "\t"
// remain of the control characters. See the package documentation.
func Text(s string) string { return clean(s, modeText) }

// Styled is Text for the transcripts batty renders itself: the colour
// sequences (SGR: ESC [ digits and semicolons m) are kept, every other
// escape sequence is dropped and every other control character is escaped
// as by Text. `batty logs` prints a transcript through it, so that what an
// agent might have written into the file cannot drive the terminal.
func Styled(s string) string { return clean(s, modeStyled) }

// Block is Text for text whose lines each mean something, such as a diff
// (where a line's first character says what it is): a lone CR is shown
// escaped (`\x0d`) rather than made a line break, so every line of the
// result is a line of s, cleaned. A CR LF still ends a line ("\n").
func Block(s string) string { return clean(s, modeBlock) }

// Line returns s safe to show as one line: as Text, and every run of
// newlines, carriage returns and tabs becomes one space, and surrounding
// white space is trimmed. With max > 0 the result is at most max runes: a
// longer one is cut to max-1 runes and ends with "…". So Line(Line(s, n), n)
// is Line(s, n).
func Line(s string, max int) string {
	s = strings.TrimSpace(clean(s, modeLine))
	if max <= 0 || len(s) <= max {
		return s
	}
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return strings.TrimRightFunc(textclip.Runes(s, max-1, ""), unicode.IsSpace) + textclip.Ellipsis
}

// StripANSI returns s without its escape sequences (see the package
// documentation), every other byte kept as it is, control characters
// included. It turns a transcript batty rendered into plain text; text from
// elsewhere wants Text.
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

type mode int

const (
	modeText   mode = iota // keep \n and \t
	modeStyled             // as modeText, and keep SGR sequences
	modeLine               // \n, \r and \t runs become one space
	modeBlock              // as modeText, and a lone \r is escaped
)

// clean is Text, Styled or Line without the trimming and cutting of Line.
func clean(s string, m mode) string {
	if safe(s, m) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	space := false // modeLine: the last rune written was a space for a break
	for i := 0; i < len(s); {
		c := s[i]
		if m == modeLine && (c == '\n' || c == '\r' || c == '\t') {
			if !space {
				b.WriteByte(' ')
				space = true
			}
			i++
			continue
		}
		if c == esc {
			j := skipEscape(s, i)
			if m == modeStyled && isSGR(s[i:j]) {
				b.WriteString(s[i:j])
			}
			i = j
			continue // a dropped sequence ends no run of line breaks
		}
		space = false
		if c < utf8.RuneSelf {
			switch {
			case c == '\r':
				if i+1 < len(s) && s[i+1] == '\n' {
					i++ // the \n is written next round
					continue
				}
				if m == modeBlock {
					writeEscaped(&b, '\r')
				} else {
					b.WriteByte('\n')
				}
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

// safe reports whether clean would return s unchanged: printable ASCII
// (plus \n and \t but in modeLine) only.
func safe(s string, m mode) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			continue
		}
		if (c == '\n' || c == '\t') && m != modeLine {
			continue
		}
		return false
	}
	return true
}

// unsafeRune reports the non-ASCII runes shown escaped: the C1 controls
// (which include the 8-bit CSI, U+009B), the line and paragraph separators
// and the invisible format characters but the zero-width joiner and
// non-joiner.
func unsafeRune(r rune) bool {
	switch {
	case r < 0xa0:
		return true // C1 (the caller handles ASCII)
	case r == '\u2028' || r == '\u2029':
		return true
	case r == '\u200c' || r == '\u200d':
		return false
	}
	return unicode.Is(unicode.Cf, r)
}

// isSGR reports whether seq is exactly one SGR sequence: ESC [, digits and
// semicolons, m.
func isSGR(seq string) bool {
	if len(seq) < 3 || seq[0] != esc || seq[1] != '[' || seq[len(seq)-1] != 'm' {
		return false
	}
	for i := 2; i < len(seq)-1; i++ {
		if c := seq[i]; (c < '0' || c > '9') && c != ';' {
			return false
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

// writeEscaped writes r as Go writes it in a quoted string: \xHH below
// U+0080, \uHHHH up to U+FFFF, \UHHHHHHHH above.
func writeEscaped(b *strings.Builder, r rune) {
	digits := 4
	switch {
	case r < 0x80:
		b.WriteString(`\x`)
		digits = 2
	case r > 0xffff:
		b.WriteString(`\U`)
		digits = 8
	default:
		b.WriteString(`\u`)
	}
	for shift := (digits - 1) * 4; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(r>>shift)&0xf])
	}
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
