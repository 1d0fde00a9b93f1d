package searchindex

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzQuery: whatever a user types, the query the index is asked is one
// FTS5 accepts (every word quoted), and a search answers or says there is
// no word; the hits it serves hold every word.
func FuzzQuery(f *testing.F) {
	l := layout(f)
	team(f, l)
	w, _ := sync1(f, l)
	w.Close()
	for _, s := range []string{"parser", `"parser" OR x`, "NEAR(a b)", "a* -b ^c", "col:parser", `""`, "(", "ünïcode ÉTÉ", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		res, err := Search(context.Background(), l, Query{Text: s})
		if len(Terms(s)) == 0 {
			if err == nil {
				t.Fatalf("%q: no word, yet searched", s)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if res.Direct != "" || res.Stale != 0 {
			t.Fatalf("%q: direct %q, stale %d", s, res.Direct, res.Stale)
		}
		for _, h := range res.Hits {
			if !utf8.ValidString(h.Snippet) || strings.ContainsRune(h.Snippet, '\n') {
				t.Fatalf("%q: snippet %q", s, h.Snippet)
			}
		}
	})
}

func TestTermsAndSnippet(t *testing.T) {
	if got := Terms(`The "parser", the PARSER; don't-panic ÉTÉ 42`); strings.Join(got, "|") != "the|parser|don|t|panic|été|42" {
		t.Errorf("terms %q", got)
	}
	if got := matchExpr([]string{`a"b`, "c"}); got != `"a""b" "c"` {
		t.Errorf("match %q", got)
	}
	r := rec("a", "dev", "th", 1, strings.Repeat("x ", 100)+"the Parser\nis here "+strings.Repeat("y ", 100), "")
	field, snip := Snippet(r, []string{"parser"})
	if field != FieldMessage || !strings.Contains(snip, "the Parser is here") || !strings.HasPrefix(snip, "…") || !strings.HasSuffix(snip, "…") {
		t.Errorf("snippet %s %q", field, snip)
	}
}
