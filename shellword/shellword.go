// Package shellword quotes a string as one word for a POSIX shell, for the
// commands batty spells out to a model or a user (the batty command in an
// agent's instructions, a login command in a fix).
package shellword

import "strings"

// Quote returns s as one word for a POSIX shell: unchanged when it is made
// only of characters no shell treats specially, else in single quotes (a
// single quote inside ends the quoting, is escaped with a backslash, and
// the quoting starts again). It is a pure function.
func Quote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:@%=", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
