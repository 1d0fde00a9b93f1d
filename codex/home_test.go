package codex

import (
	"strings"
	"testing"
)

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

func TestWithHome(t *testing.T) {
	env := []string{"A=1", "CODEX_HOME=/old", "B=2", "CODEX_HOME=/older"}
	got := WithHome(env, "/new")
	if strings.Join(got, " ") != "A=1 B=2 CODEX_HOME=/new" || env[1] != "CODEX_HOME=/old" {
		t.Fatalf("WithHome = %q (env now %q)", got, env)
	}
}
