package teamstatus

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/landing"
)

func TestProtectedDetail(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		total int
		want  string
	}{
		{nil, 0, ""},
		{[]string{".envrc"}, 1, "changes protected paths .envrc; "},
		{[]string{"a\n\x1b[31m/.envrc", ".github/workflows/x.yml"}, 2, "changes protected paths a /.envrc, .github/workflows/x.yml; "},
		{[]string{"1", "2", "3", "4", "5", "6", "7"}, 30, "changes protected paths 1, 2, 3, 4, 5 (and 25 more); "},
		{[]string{strings.Repeat("x", 300)}, 1, "changes protected paths " + strings.Repeat("x", 119) + "…; "},
	} {
		if got := ProtectedDetail(tc.paths, tc.total); got != tc.want {
			t.Errorf("ProtectedDetail(%q, %d) = %q, want %q", tc.paths, tc.total, got, tc.want)
		}
	}
}

// A landing held for review because of protected paths says why in its
// detail, which status and the console show.
func TestLandingsSayWhyProtectedWaits(t *testing.T) {
	st := Landings([]landing.Request{
		{ID: "r1", Agent: "eng", State: landing.Review, Protected: []string{".github/workflows/x.yml"}, ProtectedTotal: 1},
		{ID: "r2", Agent: "eng2", State: landing.Review, Review: true},
	})
	if want := "changes protected paths .github/workflows/x.yml; " + ReviewDetail("eng"); st[0].Detail != want || st[0].ProtectedTotal != 1 || st[0].Protected[0] != ".github/workflows/x.yml" {
		t.Errorf("protected: %+v", st[0])
	}
	if st[1].Detail != ReviewDetail("eng2") || st[1].Protected != nil {
		t.Errorf("asked: %+v", st[1])
	}
}
