package console

import (
	"testing"
	"time"
)

func TestTokensAndAge(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1.0k", 12345: "12.3k", 4_500_000: "4.5M"} {
		if got := tokens(n); got != want {
			t.Errorf("tokens(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0s", 42 * time.Second: "42s", 185 * time.Second: "3m05s", 2*time.Hour + 7*time.Minute + 9*time.Second: "2h07m"} {
		if got := age(d); got != want {
			t.Errorf("age(%s) = %q, want %q", d, got, want)
		}
	}
}
