package codex

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
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

// TestScriptsTestTheTestedVersions: scripts/test.sh runs the conformance
// suite against exactly TestedVersions, and the pin is the newest of them.
func TestScriptsTestTheTestedVersions(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "scripts", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CODEX_TESTED="([^"]*)"$`).FindSubmatch(b)
	if m == nil {
		t.Fatal(`scripts/test.sh sets no CODEX_TESTED="…"`)
	}
	if got, want := strings.Fields(string(m[1])), TestedVersions; !slices.Equal(got, want) {
		t.Errorf("scripts/test.sh tests Codex CLI %v, codex.TestedVersions is %v", got, want)
	}
	if TestedVersions[len(TestedVersions)-1] != Version {
		t.Errorf("the pin %s is not the newest tested version (%v)", Version, TestedVersions)
	}
}

func TestVersionOf(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"codex-cli 0.171.0\n", "0.171.0"},
		{"codex-cli 0.169.0", "0.169.0"},
		{"WARNING: proceeding, even though we could not update PATH\ncodex-cli 0.172.0-alpha.3\n", "0.172.0-alpha.3"},
		{"codex 1.2.3", "1.2.3"},
		{"", ""},
		{"error: something\n", ""},
		{"codex-cli 0.171.0 extra", ""},
		{"fakecodex-cli 9.9.9", ""},
	} {
		if got := VersionOf(c.out); got != c.want {
			t.Errorf("VersionOf(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}

func TestTested(t *testing.T) {
	for v, want := range map[string]bool{"0.169.0": true, "0.171.0": true, "0.170.0": false, "0.172.0": false, "": false, "0.171": false} {
		if Tested(v) != want {
			t.Errorf("Tested(%q) = %v, want %v", v, !want, want)
		}
	}
}

func TestVersionWarning(t *testing.T) {
	for _, v := range []string{"", "0.169.0", "0.171.0"} {
		if w := VersionWarning(v); w != "" {
			t.Errorf("VersionWarning(%q) = %q, want none", v, w)
		}
	}
	w := VersionWarning("0.172.0")
	for _, want := range []string{"codex 0.172.0", "0.169.0, 0.171.0", "batty doctor"} {
		if !strings.Contains(w, want) {
			t.Errorf("VersionWarning(0.172.0) = %q, want it to say %q", w, want)
		}
	}
}
