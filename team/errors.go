package team

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Problem is one thing wrong with a team file.
type Problem struct {
	// File is the team file's path as given to Load or Parse.
	File string
	// Line is the 1-based line of the problem, or 0 when it concerns the
	// whole file (for example an empty file).
	Line int
	// Column is the 1-based column, or 0 when unknown.
	Column int
	// Message says what is wrong.
	Message string
	// Hint optionally says how to fix it, for example
	// `did you mean "manager"?`.
	Hint string
}

// String formats the problem as "file:line:col: message (hint)". The line
// and column are omitted when zero, and the parenthesised hint when empty.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	b.WriteString(": ")
	b.WriteString(p.Message)
	if p.Hint != "" {
		b.WriteString(" (")
		b.WriteString(p.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// ValidationError reports every problem found in a team file. Problems are
// sorted by position (whole-file problems first) and never empty when the
// error is returned by Load or Parse.
type ValidationError struct {
	Problems []Problem
}

// Error returns the problems formatted with Problem.String, one per line.
func (e *ValidationError) Error() string {
	if len(e.Problems) == 0 {
		return "invalid team file"
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// sortProblems orders problems by position and drops exact duplicates (the
// same node can be reached more than once through YAML aliases).
func sortProblems(ps []Problem) []Problem {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return slices.Compact(ps)
}

// closest returns the candidate most similar to s, or "" when none is
// similar enough to be worth suggesting.
func closest(s string, candidates []string) string {
	if s == "" || len(s) > 64 {
		return ""
	}
	norm := func(x string) string {
		return strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(x))
	}
	best, bestDist := "", -1
	for _, c := range candidates {
		if c == s || len(c) > 64 {
			continue
		}
		if norm(c) == norm(s) {
			return c
		}
		d := levenshtein(strings.ToLower(s), c)
		limit := max(2, len(c)/3)
		if d > limit || d >= len(s) || d >= len(c) {
			continue
		}
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// didYouMean returns a `did you mean "x"?` hint, or "" when nothing is close.
func didYouMean(s string, candidates []string) string {
	if c := closest(s, candidates); c != "" {
		return fmt.Sprintf("did you mean %q?", c)
	}
	return ""
}

// levenshtein returns the edit distance between a and b, counted in runes.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// nameHint explains the naming rule and, when possible, proposes a valid
// spelling of s.
func nameHint(s string) string {
	const rule = "use lowercase letters, digits and \"-\", starting with a letter or digit, at most 40 characters"
	if len(s) > 200 {
		return rule
	}
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	fixed := strings.TrimRight(b.String(), "-")
	if len(fixed) > MaxNameLen {
		fixed = strings.TrimRight(fixed[:MaxNameLen], "-")
	}
	if fixed != s && ValidName(fixed) {
		return fmt.Sprintf("%s; try %q", rule, fixed)
	}
	return rule
}
