package preflight

import (
	"context"
	"github.com/battyhq/batty/codex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/battyhq/batty/codex/codextest"
)

// fakeCodex is a stand-in that answers --version and `login status` the way
// Codex CLI 0.169.0 does: logged in when $CODEX_HOME/auth.json exists.
const fakeCodex = `#!/bin/sh
case "$1" in
--version) echo "codex-cli 0.169.0"; exit 0 ;;
login) if [ -f "$CODEX_HOME/auth.json" ]; then echo "Logged in using ChatGPT" >&2; exit 0; fi
       echo "Not logged in" >&2; exit 1 ;;
esac
exit 2
`

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func check(t *testing.T, tg Target) *Problem {
	t.Helper()
	c := &Checker{Timeout: 2 * time.Second, BaseEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}}
	return c.Check(context.Background(), tg)
}

func TestCheck(t *testing.T) {
	home := t.TempDir()
	logged := t.TempDir()
	os.WriteFile(filepath.Join(logged, "auth.json"), []byte("{}"), 0o600)
	custom := t.TempDir()
	os.WriteFile(filepath.Join(custom, "config.toml"), []byte(mockHome), 0o600)
	fake := script(t, fakeCodex)
	nowhere := filepath.Join(t.TempDir(), "bin", "codex")
	tests := []struct {
		name string
		tg   Target
		kind Kind   // "" = no problem
		want string // in the problem's text
	}{
		{"missing path", Target{Bin: nowhere, Home: home}, KindMissing, "codex not found at " + nowhere + " — install it: npm install -g @openai/codex@" + codex.Version},
		{"not on PATH", Target{Bin: "codex-nowhere-xyz", Home: home}, KindMissing, `"codex-nowhere-xyz" is not on PATH — install it: npm install -g @openai/codex@` + codex.Version},
		{"not executable", Target{Bin: func() string { p := script(t, fakeCodex); os.Chmod(p, 0o644); return p }(), Home: home}, KindMissing, "chmod +x"},
		{"broken", Target{Bin: script(t, "#!/bin/sh\necho 'error while loading shared libraries: libssl.so.3' >&2\nexit 127\n"), Home: home}, KindBroken, "exited with status 127: error while loading shared libraries"},
		{"hangs", Target{Bin: script(t, "#!/bin/sh\nexec sleep 30\n"), Home: home}, KindBroken, "no answer within"},
		{"CODEX_HOME missing", Target{Bin: fake, Home: filepath.Join(home, "nope")}, KindHome, "CODEX_HOME " + filepath.Join(home, "nope") + " does not exist — create it and log in"},
		{"not logged in", Target{Bin: fake, Home: home}, KindLogin, "run: CODEX_HOME=" + home + " codex login"},
		{"logged in", Target{Bin: fake, Home: logged}, "", ""},
		{"API key in codex.env", Target{Bin: fake, Home: home, Env: []string{"OPENAI_API_KEY=sk-test"}}, "", ""},
		{"custom provider", Target{Bin: fake, Home: custom}, "", ""},
		{"custom provider by codex.config", Target{Bin: fake, Home: home, Config: map[string]string{"model_provider": `"local"`}}, "", ""},
		{"login status fails otherwise", Target{Bin: script(t, "#!/bin/sh\n[ \"$1\" = --version ] && exit 0\necho 'Error checking login status: bad auth.json' >&2\nexit 1\n"), Home: home}, KindLoginCheck, "bad auth.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			p := check(t, tt.tg)
			if time.Since(start) > 20*time.Second {
				t.Errorf("check took %s", time.Since(start))
			}
			if tt.kind == "" {
				if p != nil {
					t.Fatalf("problem %q; want none", p)
				}
				return
			}
			if p == nil || p.Kind != tt.kind || !strings.Contains(p.String(), tt.want) {
				t.Fatalf("problem %+v; want %s containing %q", p, tt.kind, tt.want)
			}
		})
	}
}

func TestKeyTellsTargetsApart(t *testing.T) {
	a := Target{Bin: "codex", Env: []string{"A=1"}, Config: map[string]string{"x": "1", "y": "2"}}
	b := Target{Bin: "codex", Env: []string{"A=1"}, Config: map[string]string{"y": "2", "x": "1"}}
	if a.Key() != b.Key() {
		t.Fatal("equal targets have different keys")
	}
	for _, c := range []Target{{Bin: "codex", Env: []string{"A=2"}}, {Bin: "codex", Home: "/h"}, {Bin: "codex", Args: []string{"--oss"}}, {Bin: "codex;", Env: nil}} {
		if c.Key() == a.Key() {
			t.Fatalf("%+v has the key of %+v", c, a)
		}
	}
}

// The real Codex CLI with an empty CODEX_HOME and the default provider is
// not logged in, and the check says how to log in.
func TestCheckRealCodexNotLoggedIn(t *testing.T) {
	bin := codextest.Codex(t)
	home := t.TempDir()
	c := &Checker{BaseEnv: append(withoutKeys(os.Environ()), "CODEX_HOME=/nonexistent")}
	p := c.Check(context.Background(), Target{Bin: bin, Home: home, Cwd: t.TempDir()})
	if p == nil || p.Kind != KindLogin || !strings.Contains(p.String(), "run: CODEX_HOME="+home+" codex login") {
		t.Fatalf("problem %+v; want not logged in", p)
	}
	// The mock server's home (a custom provider) needs no login.
	srv := codextest.NewServer(t)
	if p := c.Check(context.Background(), Target{Bin: bin, Home: srv.WriteHome(t), Cwd: t.TempDir()}); p != nil {
		t.Fatalf("custom provider: %v", p)
	}
}

func withoutKeys(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "OPENAI_API_KEY=") && !strings.HasPrefix(kv, "CODEX_API_KEY=") && !strings.HasPrefix(kv, "OPENAI_BASE_URL=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestLastLineKeepsCharactersWhole: a long last line is clipped at a UTF-8
// boundary, so the problem's detail stays valid text.
func TestLastLineKeepsCharactersWhole(t *testing.T) {
	got := lastLine("first\n" + "x" + strings.Repeat("é", 400) + "\n")
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > 300+len("…") {
		t.Fatalf("lastLine = %q", got)
	}
	if got := lastLine("one\ntwo\n"); got != "two" {
		t.Fatalf("lastLine = %q, want two", got)
	}
}

// A fix names the codex that runs: plain codex (or the configured name)
// when it is on PATH or a path is configured, else the pinned install batty
// fell back to.
func TestLoginCommand(t *testing.T) {
	pinned := codex.Binary{Path: "/h/.cache/batty-codex/0.169.0/node_modules/@openai/codex-linux-x64/vendor/codex",
		Launcher: "/h/.cache/batty-codex/0.169.0/node_modules/@openai/codex/bin/codex.js"}
	for _, tc := range []struct {
		configured string
		bin        codex.Binary
		onPath     bool
		want       string
	}{
		{"", pinned, true, "codex"},
		{"codex", pinned, true, "codex"},
		{"", pinned, false, pinned.Launcher},
		{"codex", codex.Binary{Path: "/opt/my codex"}, false, "'/opt/my codex'"},
		{"/usr/local/bin/codex", codex.Binary{Path: "/usr/local/bin/codex"}, false, "codex"},
		{"codex-nightly", codex.Binary{Path: "/x/codex-nightly"}, false, "codex-nightly"},
	} {
		if got := loginCommand(tc.configured, tc.bin, tc.onPath); got != tc.want {
			t.Errorf("loginCommand(%q, %+v, %v) = %q, want %q", tc.configured, tc.bin, tc.onPath, got, tc.want)
		}
	}
}
