package searchindex

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/battyhq/batty/journal"
)

// maxTerms bounds the words of a query.
const maxTerms = 16

// Terms splits a query into the words the index matches, as the index's
// tokenizer (FTS5 unicode61, diacritics kept) splits a text: runs of
// letters and digits, case folded; at most maxTerms, each once. Pure.
func Terms(q string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range words(q) {
		if seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == maxTerms {
			break
		}
	}
	return out
}

// tokenRune reports whether r is part of a word for unicode61: a letter,
// a number, or a private-use character.
func tokenRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// words is the words of s, case folded.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !tokenRune(r) })
}

// matchExpr is the FTS5 query of terms: each a quoted string, all of them
// required. Pure.
func matchExpr(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(q, " ")
}

// Field names a part of a turn a hit was found in.
const (
	FieldMessage = "message"
	FieldReply   = "reply"
	FieldCommand = "command"
	FieldError   = "error"
)

// fieldsOf are the searchable texts of r, by field.
func fieldsOf(r journal.Record) [][2]string {
	f := [][2]string{{FieldMessage, r.Message.Body}, {FieldReply, r.Reply}}
	for _, c := range r.Commands {
		f = append(f, [2]string{FieldCommand, c.Command + "\n" + c.Output})
	}
	if r.Error != "" {
		f = append(f, [2]string{FieldError, r.Error})
	}
	return f
}

// commandsText is what the index holds of r's commands.
func commandsText(r journal.Record) string {
	var b strings.Builder
	for _, c := range r.Commands {
		b.WriteString(c.Command)
		b.WriteByte('\n')
		b.WriteString(c.Output)
		b.WriteByte('\n')
	}
	if r.Error != "" {
		b.WriteString(r.Error)
	}
	return b.String()
}

// Matches reports whether every term is a word of r's searchable texts,
// as the index matches them. Pure.
func Matches(r journal.Record, terms []string) bool {
	if len(terms) == 0 {
		return false
	}
	have := map[string]bool{}
	for _, f := range fieldsOf(r) {
		for _, w := range words(f[1]) {
			have[w] = true
		}
	}
	for _, t := range terms {
		if !have[t] {
			return false
		}
	}
	return true
}

// snippetWidth is about how many bytes of text a snippet shows on each
// side of the word it found.
const snippetWidth = 80

// Snippet is where in r the first term occurs: the field and the text
// around it, on one line (line breaks shown as spaces), marked with "…"
// where cut. Pure.
func Snippet(r journal.Record, terms []string) (field, text string) {
	for _, t := range terms {
		for _, f := range fieldsOf(r) {
			if i := wordIndex(f[1], t); i >= 0 {
				return f[0], around(f[1], i, len(t))
			}
		}
	}
	return "", ""
}

// wordIndex is the byte offset in s of the first word that folds to
// term, -1 when none does.
func wordIndex(s, term string) int {
	start := -1
	for i, r := range s {
		if tokenRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && strings.ToLower(s[start:i]) == term {
			return start
		}
		start = -1
	}
	if start >= 0 && strings.ToLower(s[start:]) == term {
		return start
	}
	return -1
}

// around cuts s to about snippetWidth bytes each side of [i, i+n), on rune
// boundaries, and puts it on one line.
func around(s string, i, n int) string {
	from, to := max(i-snippetWidth, 0), min(i+n+snippetWidth, len(s))
	for from > 0 && !utf8.RuneStart(s[from]) {
		from--
	}
	for to < len(s) && !utf8.RuneStart(s[to]) {
		to++
	}
	out := strings.Join(strings.Fields(s[from:to]), " ")
	if from > 0 {
		out = "…" + out
	}
	if to < len(s) {
		out += "…"
	}
	return out
}
