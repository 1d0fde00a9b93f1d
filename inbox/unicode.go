package inbox

import (
	"fmt"
	"unicode/utf8"
)

// validUnicode reports where data is not valid Unicode text: a byte
// sequence that is not UTF-8, or a \u escape of a UTF-16 surrogate that is
// not part of a pair. encoding/json replaces both with U+FFFD without a
// word, so a message would run with text its sender never wrote. It scans
// escapes only as JSON strings hold them (a backslash and one character,
// or \uXXXX); outside strings valid JSON has no backslash, and whatever is
// not valid JSON fails to decode anyway. It is a pure function.
func validUnicode(data []byte) error {
	if !utf8.Valid(data) {
		for i := 0; i < len(data); {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				return fmt.Errorf("invalid UTF-8 at byte %d", i)
			}
			i += n
		}
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' || i+1 >= len(data) {
			continue
		}
		if data[i+1] != 'u' {
			i++ // skip the escaped character
			continue
		}
		r, ok := hex4(data[i+2:])
		if !ok {
			i++
			continue
		}
		switch {
		case r >= 0xD800 && r < 0xDC00: // high surrogate: a low one must follow
			if len(data) >= i+12 && data[i+6] == '\\' && data[i+7] == 'u' {
				if lo, ok := hex4(data[i+8:]); ok && lo >= 0xDC00 && lo < 0xE000 {
					i += 11
					continue
				}
			}
			return fmt.Errorf("unpaired UTF-16 surrogate escape at byte %d", i)
		case r >= 0xDC00 && r < 0xE000:
			return fmt.Errorf("unpaired UTF-16 surrogate escape at byte %d", i)
		}
		i += 5
	}
	return nil
}

// hex4 parses the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
