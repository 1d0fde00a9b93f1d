package hosts

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/hosts/hoststest"
	"github.com/battyhq/batty/preflight"
)

func TestExpandHome(t *testing.T) {
	for _, tt := range []struct{ in, home, want string }{
		{"~", "/h", "/h"},
		{"~/bin/codex", "/h", "/h/bin/codex"},
		{"~bob/x", "/h", "~bob/x"},
		{"/abs", "/h", "/abs"},
		{"codex", "/h", "codex"},
		{"~/x", "", "~/x"},
	} {
		if got := ExpandHome(tt.in, tt.home); got != tt.want {
			t.Errorf("ExpandHome(%q, %q) = %q, want %q", tt.in, tt.home, got, tt.want)
		}
	}
}

func TestParseAnswer(t *testing.T) {
	ans, err := parseAnswer([]byte("motd line\n{\"problem\":{\"kind\":\"codex_missing\",\"detail\":\"d\",\"fix\":\"f\"}}\n"))
	if err != nil || ans.Problem == nil || ans.Problem.Kind != "codex_missing" || ans.Problem.Fix != "f" {
		t.Fatalf("parseAnswer = %+v, %v", ans, err)
	}
	if ans, err := parseAnswer([]byte(`{"problem":null}`)); err != nil || ans.Problem != nil {
		t.Fatalf("no problem: %+v, %v", ans, err)
	}
	for _, bad := range []string{"", "sh: batty: not found", `{"problem":{"kind":"x"}}`, `{"problem":`} {
		if _, err := parseAnswer([]byte(bad)); err == nil {
			t.Errorf("parseAnswer(%q) accepted", bad)
		}
	}
}

// TestPreflightCommandHost runs the real `batty preflight --json`
// through a command host here, with a scratch HOME: a missing codex is
// named with the fix, a codex that needs a login is found logged out
// unless the target's environment (sent on stdin) holds a key.
func TestPreflightCommandHost(t *testing.T) {
	home := t.TempDir()
	h := localHost(home)
	tr := &Transport{}
	batty := hoststest.Batty(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	p, err := Preflight(ctx, tr, h, batty, preflight.Target{Bin: "~/none/codex", Cwd: "~"})
	if err != nil {
		t.Fatal(err)
	}
	if p == nil || p.Kind != preflight.KindMissing || p.Detail != "on host here: codex not found at "+filepath.Join(home, "none", "codex") ||
		!strings.HasPrefix(p.Fix, "on here: install it: npm install -g @openai/codex@") {
		t.Fatalf("missing codex: %+v", p)
	}

	fake := filepath.Join(home, "codex")
	script := "#!/bin/sh\ncase \"$1\" in\n--version) echo codex-cli 0.169.0;;\nlogin) echo 'Not logged in'; exit 1;;\nesac\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err = Preflight(ctx, tr, h, batty, preflight.Target{Bin: "~/codex", Cwd: "~", Home: "~"})
	if err != nil || p == nil || p.Kind != preflight.KindLogin {
		t.Fatalf("logged out: %+v, %v", p, err)
	}
	p, err = Preflight(ctx, tr, h, batty, preflight.Target{Bin: "~/codex", Cwd: "~", Home: "~", Env: []string{"OPENAI_API_KEY=sk-x"}})
	if err != nil || p != nil {
		t.Fatalf("with a key: %+v, %v", p, err)
	}
	if _, err := Preflight(ctx, tr, h, "/nonexistent/batty", preflight.Target{Bin: "codex"}); err == nil {
		t.Fatal("a missing batty on the host went unnoticed")
	}
}

func TestPreflightLimit(t *testing.T) {
	for _, c := range []struct{ check, want time.Duration }{
		{0, 2*preflight.DefaultTimeout + ShimHandshakeTimeout},
		{30 * time.Second, time.Minute + ShimHandshakeTimeout},
	} {
		if got := PreflightLimit(c.check); got != c.want {
			t.Errorf("PreflightLimit(%s) = %s, want %s", c.check, got, c.want)
		}
	}
}
