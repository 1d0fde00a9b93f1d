package codextest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/battyhq/batty/codex"
)

// DefaultModel is the model slug a written home configures when
// [HomeConfig.Model] is empty. It is a slug codex 0.169.0 knows, so codex
// uses its built-in metadata and tools (exec_command among them); an
// unknown slug such as "mock-model" works too, but then codex prints a
// non-fatal item.completed of type "error" ("Model metadata for … not
// found…") before turn.started in every run.
const DefaultModel = "gpt-5.5"

// ProviderID is the id of the custom model provider in a written home.
const ProviderID = "mock"

// HomeConfig adjusts the config.toml that [Server.WriteHomeWith] writes.
// Zero fields take the defaults.
type HomeConfig struct {
	// Dir is the directory to use as CODEX_HOME; "" means a new
	// t.TempDir(). It is created if missing.
	Dir string
	// Model is the model slug; "" means [DefaultModel].
	Model string
	// ApprovalPolicy is codex's approval_policy; "" means "never".
	ApprovalPolicy string
	// SandboxMode is codex's sandbox_mode; "" means "danger-full-access".
	SandboxMode string
	// StreamMaxRetries is the provider's stream_max_retries: how often
	// codex retries a turn whose stream failed by itself, printing
	// "Reconnecting... N/MAX (…)" (0: never).
	StreamMaxRetries int
	// Extra is TOML inserted after the top-level keys and before the
	// tables the home always has ([analytics], [features],
	// [model_providers.mock]); it must not redefine them.
	Extra string
}

// WriteHome writes a CODEX_HOME directory in a new t.TempDir() whose
// config.toml points codex at s (see [Server.WriteHomeWith] for the
// settings) and returns its path.
func (s *Server) WriteHome(t testing.TB) string {
	t.Helper()
	return s.WriteHomeWith(t, HomeConfig{})
}

// WriteHomeWith writes a CODEX_HOME whose config.toml selects a custom
// provider ([ProviderID]) with wire_api "responses", base_url s.URL and
// request_max_retries = 0, stream_max_retries = cfg.StreamMaxRetries, the model cfg.Model,
// approval_policy "never" and sandbox_mode "danger-full-access" (unless
// cfg says otherwise), and turns off everything that would reach the
// network or slow a run: update checks, analytics, web search, plugins,
// apps, the shell snapshot and websockets. It returns the home's path and
// fails the test if it cannot be written.
func (s *Server) WriteHomeWith(t testing.TB, cfg HomeConfig) string {
	t.Helper()
	dir := cfg.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("codextest: create CODEX_HOME: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(s.ConfigTOML(cfg)), 0o644); err != nil {
		t.Fatalf("codextest: write config.toml: %v", err)
	}
	return dir
}

// ConfigTOML returns the config.toml text [Server.WriteHomeWith] writes for
// cfg (cfg.Dir is not used).
func (s *Server) ConfigTOML(cfg HomeConfig) string {
	return codex.LocalProvider{
		ID: ProviderID, Name: "codextest mock", BaseURL: s.URL, Model: or(cfg.Model, DefaultModel),
		ApprovalPolicy: or(cfg.ApprovalPolicy, "never"), SandboxMode: or(cfg.SandboxMode, "danger-full-access"),
		StreamMaxRetries: cfg.StreamMaxRetries, Extra: cfg.Extra,
	}.ConfigTOML()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// EnvVersion names the environment variable that selects another
// installed Codex CLI for the tests: its version, installed by
// scripts/test.sh under codex.CacheDir()/<version> as the pin is. Unset,
// the tests run the pin, codex.Version. scripts/test.sh runs the
// conformance suite once more for each other tested version with it set.
const EnvVersion = "BATTY_CODEX_VERSION"

// Version is the Codex CLI version the tests run: $BATTY_CODEX_VERSION,
// else the pin (what [Codex] finds unless $BATTY_CODEX_BIN names a binary).
func Version() string { return version() }

func version() string {
	if v := os.Getenv(EnvVersion); v != "" {
		return v
	}
	return codex.Version
}

// installDir is the npm prefix of the Codex CLI the tests run,
// codex.CacheDir()/version(), "" when the cache directory is unknown.
func installDir() string {
	c := codex.CacheDir()
	if c == "" {
		return ""
	}
	return filepath.Join(c, version())
}

// launcher is the npm launcher of the Codex CLI the tests run.
func launcher() string {
	d := installDir()
	if d == "" {
		return ""
	}
	return filepath.Join(d, "node_modules", ".bin", "codex")
}

// Codex returns the codex executable for tests: $BATTY_CODEX_BIN if set,
// else the npm launcher of the installed version the tests run (the pin,
// codex.PinnedLauncher(), unless $BATTY_CODEX_VERSION names another). When that file is missing it
// calls t.Skip, except when the environment has CI=true, where it calls
// t.Fatal (end-to-end tests must run in CI).
func Codex(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("BATTY_CODEX_BIN"); p != "" {
		return requireExecutable(t, p, "$BATTY_CODEX_BIN")
	}
	return requireExecutable(t, launcher(), "codex "+version())
}

// CodexNative is like [Codex] but prefers the install's native
// binary (node_modules/@openai/codex-<os>-<arch>/vendor/<triple>/bin/codex),
// which starts about 65 ms faster and runs as one process instead of a
// Node launcher plus a child. With $BATTY_CODEX_BIN set, or when the native
// binary is not there, it returns what [Codex] returns (skipping or failing
// the same way).
func CodexNative(t testing.TB) string {
	t.Helper()
	if os.Getenv("BATTY_CODEX_BIN") == "" {
		if p := nativePath(); p != "" && isExecutable(p) {
			return p
		}
	}
	return Codex(t)
}

// nativePath returns where the install the tests run keeps the native binary for
// this platform, or "" for a platform codex does not ship.
func nativePath() string {
	pkgs := map[string][2]string{
		"linux/amd64":  {"codex-linux-x64", "x86_64-unknown-linux-musl"},
		"linux/arm64":  {"codex-linux-arm64", "aarch64-unknown-linux-musl"},
		"darwin/amd64": {"codex-darwin-x64", "x86_64-apple-darwin"},
		"darwin/arm64": {"codex-darwin-arm64", "aarch64-apple-darwin"},
	}
	p, ok := pkgs[runtime.GOOS+"/"+runtime.GOARCH]
	d := installDir()
	if !ok || d == "" {
		return ""
	}
	return filepath.Join(d, "node_modules", "@openai", p[0], "vendor", p[1], "bin", "codex")
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// requireExecutable returns p if it is an executable file, else skips the
// test (or fails it when CI=true).
func requireExecutable(t testing.TB, p, what string) string {
	t.Helper()
	if isExecutable(p) {
		return p
	}
	msg := fmt.Sprintf("codextest: %s not found or not executable at %s (install @openai/codex@%s there or set BATTY_CODEX_BIN)", what, p, version())
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// SandboxBinary returns the codex executable of the tests ($BATTY_CODEX_BIN,
// else the native binary of the install the tests run, else its launcher) once `codex
// sandbox -- /bin/true` ran with it, or an error saying why it cannot be
// used: it is missing, or Codex's Linux sandbox does not work on this
// machine. For a test that runs in the sandbox where it can, and without
// it elsewhere; [Sandbox] is for a test that needs it.
func SandboxBinary() (string, error) {
	bin := os.Getenv("BATTY_CODEX_BIN")
	if bin == "" {
		bin = nativePath()
		if bin == "" || !isExecutable(bin) {
			bin = launcher()
		}
	}
	if !isExecutable(bin) {
		return "", fmt.Errorf("codextest: no codex executable at %s (install @openai/codex@%s there or set BATTY_CODEX_BIN)", bin, version())
	}
	dir, err := os.MkdirTemp("", "codextest-sandbox-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(bin, "sandbox", "--", "/bin/true")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CODEX_HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("codextest: codex's sandbox cannot run on this machine (%v): %s", err, out)
	}
	return bin, nil
}

// Sandbox returns [SandboxBinary]'s codex executable. When it has none it
// skips the test saying why, except when the environment has CI=true,
// where it fails it (CI runs where the sandbox works, and the tests of
// what batty runs in it must run there).
func Sandbox(t testing.TB) string {
	t.Helper()
	bin, err := SandboxBinary()
	if err == nil {
		return bin
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
	t.Skip(err)
	return ""
}
