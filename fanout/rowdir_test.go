package fanout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRowDir: a row's directory is the template rendered for it, under
// the base unless absolute; it must exist as a directory, and a value
// that is empty or climbs out with .. is refused.
func TestRowDir(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"a", "a/b"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rel, _ := ParseTemplate("{d}", []string{"d"})
	abs, _ := ParseTemplate(base+"/{d}/", []string{"d"})
	for _, c := range []struct {
		tmpl *Template
		val  string
		want string // "" for an error containing bad
		bad  string
	}{
		{rel, "a", filepath.Join(base, "a"), ""},
		{rel, "a/b", filepath.Join(base, "a", "b"), ""},
		{abs, "a", filepath.Join(base, "a"), ""},
		{rel, "", "", "empty"},
		{rel, "../x", "", "climbs out"},
		{rel, "a/../../x", "", "climbs out"},
		{rel, "nope", "", "no such file"},
		{rel, "f", "", "not a directory"},
	} {
		got, err := RowDir(c.tmpl, base, []string{c.val})
		if c.want != "" && (err != nil || got != c.want) {
			t.Errorf("%q: %q, %v; want %q", c.val, got, err, c.want)
		}
		if c.want == "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%q: %q, %v; want an error with %q", c.val, got, err, c.bad)
		}
	}
	if lit, _ := ParseTemplate("/x/{{y}}", []string{"d"}); lit.HasColumns() || lit.Render(nil) != "/x/{y}" {
		t.Error("a template without placeholders")
	}
}
