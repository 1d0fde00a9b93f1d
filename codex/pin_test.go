package codex

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestScriptsPinTheSameVersion: the scripts that install the Codex CLI
// install Version, so the tests and the demo find what they expect.
func TestScriptsPinTheSameVersion(t *testing.T) {
	pin := regexp.MustCompile(`(?m)^CODEX_VERSION=(\S+)$`)
	for _, name := range []string{"test.sh", "demo.sh", "bench.sh"} {
		b, err := os.ReadFile(filepath.Join("..", "scripts", name))
		if err != nil {
			t.Fatal(err)
		}
		m := pin.FindSubmatch(b)
		if m == nil {
			t.Errorf("scripts/%s sets no CODEX_VERSION", name)
			continue
		}
		if string(m[1]) != Version {
			t.Errorf("scripts/%s pins Codex CLI %s, codex.Version is %s", name, m[1], Version)
		}
	}
}

func TestCacheDir(t *testing.T) {
	t.Setenv(EnvCache, "/x/cache")
	if got, want := PinnedLauncher(), filepath.Join("/x/cache", Version, "node_modules", ".bin", "codex"); got != want {
		t.Errorf("PinnedLauncher = %q, want %q", got, want)
	}
	t.Setenv(EnvCache, "")
	t.Setenv("HOME", "/home/someone")
	if got, want := CacheDir(), "/home/someone/.cache/batty-codex"; got != want {
		t.Errorf("CacheDir = %q, want %q", got, want)
	}
	t.Setenv("HOME", "")
	if got := PinnedLauncher(); got != "" {
		t.Errorf("PinnedLauncher without a home = %q, want \"\"", got)
	}
}
