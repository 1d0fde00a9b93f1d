package codex

import "testing"

func TestHome(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"HOME=/h", "CODEX_HOME=/a", "CODEX_HOME=/b"}, "/b"},
		{[]string{"HOME=/h"}, "/h/.codex"},
		{[]string{"HOME=/h", "CODEX_HOME=rel"}, "/w/rel"},
		{[]string{"HOME=/h", "CODEX_HOME=/x/../y/"}, "/y"},
	} {
		if got := Home(c.env, "/w"); got != c.want {
			t.Errorf("Home(%q) = %q, want %q", c.env, got, c.want)
		}
	}
}
