package main

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/landing"
)

// batty review says which protected paths hold a landing, each name the
// agent chose cleaned to one line, and how many it leaves out.
func TestPrintReviewShowsProtectedPaths(t *testing.T) {
	l := control.LandingStatus{ID: "r1", Agent: "eng", State: "review", RequestedAt: time.Unix(0, 0), By: "eng",
		Tip: strings.Repeat("a", 40), Onto: strings.Repeat("b", 40),
		Protected: []string{".github/workflows/x.yml", "we\nird\x1b]0;pwn\x07/.envrc"}, ProtectedTotal: 4}
	var b strings.Builder
	printReview(&b, l, "main", "", "", landing.Summary{}, nil)
	out := b.String()
	for _, want := range []string{
		"  changes protected paths (4), which land only once you approve:\n    .github/workflows/x.yml\n    we ird",
		"/.envrc\n    … and 2 more\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("no %q in:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Fatalf("a control character reached the terminal:\n%q", out)
	}
	b.Reset()
	l.Protected, l.ProtectedTotal = nil, 0
	printReview(&b, l, "main", "", "", landing.Summary{}, nil)
	if strings.Contains(b.String(), "protected") {
		t.Fatalf("a landing without protected paths:\n%s", b.String())
	}
}
