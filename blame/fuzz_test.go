package blame

import (
	"strings"
	"testing"
)

// FuzzParse: git's output as an agent's commits make it never panics the
// parsers, and what they return is well formed.
func FuzzParse(f *testing.F) {
	sha := strings.Repeat("a", 40)
	f.Add(sha + " 1 1 1\nauthor x\nauthor-time 1\nsummary s\n\tline\n")
	f.Add(sha + "\x1fp\x1fm1\x1fs\x1e\n")
	f.Fuzz(func(t *testing.T, s string) {
		if ls, err := parsePorcelain(s); err == nil {
			for _, l := range ls {
				if l.final < 1 || !isSHA(l.sha) {
					t.Fatalf("line %+v", l)
				}
			}
		}
		for _, e := range parseLog(s) {
			if !isSHA(e.sha) {
				t.Fatalf("entry %+v", e)
			}
		}
	})
}
