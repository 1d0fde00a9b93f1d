package shellword

import (
	"os/exec"
	"testing"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/local/bin/batty": "/usr/local/bin/batty",
		"/a b/batty":           "'/a b/batty'",
		"/it's":                `'/it'\''s'`,
		"/$HOME/`x`":           "'/$HOME/`x`'",
		"":                     "''",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// What a shell makes of a quoted word is the word.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"plain", "a b", "it's", "$(x) `y` \\z", "\n\t", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 200 || containsNUL(s) {
			return
		}
		out, err := exec.Command("sh", "-c", "printf %s "+Quote(s)).Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		if string(out) != s {
			t.Fatalf("Quote(%q) reads back as %q", s, out)
		}
	})
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}
