package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
)

func TestArgs(t *testing.T) {
	head := func(roots, network string) []string {
		return []string{"sandbox",
			"-c", `sandbox_mode="workspace-write"`,
			"-c", "sandbox_workspace_write.writable_roots=[" + roots + "]",
			"-c", "sandbox_workspace_write.network_access=" + network,
			"-c", "sandbox_workspace_write.exclude_slash_tmp=true",
			"-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true",
			"--"}
	}
	sh := []string{"/bin/sh", "-c", "go test ./..."}
	tests := []struct {
		name     string
		writable []string
		network  bool
		want     []string
	}{
		{"nothing besides the worktree", nil, false, append(head("", "false"), sh...)},
		{"caches and the network", []string{"/root/.cache/go-build", "/root/go/pkg/mod"}, true,
			append(head(`"/root/.cache/go-build","/root/go/pkg/mod"`, "true"), sh...)},
		{"quotes, backslashes and control characters", []string{`/a"b`, `/c\d`, "/e\tf\x7f"}, false,
			append(head(`"/a\"b","/c\\d","/e\u0009f\u007F"`, "false"), sh...)},
		{"not ASCII", []string{"/srv/café"}, false, append(head(`"/srv/café"`, "false"), sh...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Args(tt.writable, tt.network, sh); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Args =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestClassifyAndHint(t *testing.T) {
	tests := []struct {
		name    string
		output  string
		network bool
		want    Refusal
		hint    []string // words of the hint; nil: no hint
	}{
		{"a plain failure", "--- FAIL: TestX\nexpected 2, got 3\n", false, RefusedNothing, nil},
		{"a read-only file system", "touch: cannot touch '/home/u/x': Read-only file system\n", false, RefusedWrite,
			[]string{"verify runs in Codex's sandbox", "write refused", KeyWritable, KeyOff}},
		{"go's cache", "go: creating work dir: mkdir /root/.cache/go-build/00: read-only file system", true, RefusedWrite,
			[]string{KeyWritable}},
		{"a socket refused", "httptest: failed to listen on a port: listen tcp6 [::1]:0: socket: operation not permitted", false, RefusedNetwork,
			[]string{"without the network", KeyNetwork("verify") + ": true", KeyOff}},
		{"a name lookup", "curl: (6) Could not resolve host: example.com", false, RefusedNetwork, []string{KeyNetwork("verify")}},
		{"a name lookup with the network allowed", "curl: (6) Could not resolve host: example.com", true, RefusedNetwork, nil},
		{"not permitted", "mkfifo: operation not permitted", false, RefusedSomething,
			[]string{KeyWritable, KeyNetwork("verify") + ": true", KeyOff}},
		{"not permitted with the network allowed", "open /etc/x: permission denied", true, RefusedSomething,
			[]string{"write refused", KeyWritable}},
		{"the sandbox did not start", "bwrap: No permissions to create new namespace", false, Unavailable,
			[]string{"could not start", "codex sandbox -- /bin/true", KeyOff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.output); got != tt.want {
				t.Errorf("Classify = %d, want %d", got, tt.want)
			}
			hint := Hint("verify", tt.output, tt.network)
			if tt.hint == nil && hint != "" {
				t.Errorf("Hint = %q, want none", hint)
			}
			if tt.hint != nil && hint == "" {
				t.Fatalf("no hint, want one with %q", tt.hint)
			}
			for _, w := range tt.hint {
				if !strings.Contains(hint, w) {
					t.Errorf("Hint = %q, want it to say %q", hint, w)
				}
			}
		})
	}
	if h := Hint("setup", "socket: operation not permitted", false); !strings.Contains(h, "workspace.sandbox.setup_network: true") {
		t.Errorf("setup's hint = %q, want it to name setup_network", h)
	}
}

func TestCommandWithoutSandbox(t *testing.T) {
	dir := t.TempDir()
	var p *Policy
	cmd, done, err := p.Command(dir, `echo "$X" > out`, append(os.Environ(), "X=plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if cmd.Path != "/bin/sh" || cmd.Dir != dir {
		t.Fatalf("cmd %s in %s", cmd.Path, cmd.Dir)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out")); string(b) != "plain\n" {
		t.Fatalf("out = %q", b)
	}
}

func TestCommandRefusesAPolicyItCannotRun(t *testing.T) {
	for _, p := range []*Policy{
		{Homes: "/x"},
		{Bin: "codex", Homes: "rel"},
		{Bin: "codex", Homes: "/x", Writable: []string{"cache"}},
		{Bin: "/nonexistent/codex", Homes: t.TempDir()},
	} {
		if _, _, err := p.Command(t.TempDir(), "true", nil); err == nil {
			t.Errorf("Command(%+v) ran", p)
		}
	}
}

// run runs script in dir under p and returns its output and error; the
// private directories are gone after.
func run(t *testing.T, p *Policy, dir, script string) (string, error) {
	t.Helper()
	cmd, done, err := p.Command(dir, script, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	done()
	return string(out), err
}

// The real sandbox: the command writes its directory, its TMPDIR and the
// writable directories (a missing one made), nothing else; its private
// directories are removed after.
func TestCommandInTheSandbox(t *testing.T) {
	bin := codextest.Sandbox(t)
	dir, outside, homes := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "homes")
	cache := filepath.Join(t.TempDir(), "cache", "new")
	p := &Policy{Bin: bin, Homes: homes, Writable: []string{cache}}

	out, err := run(t, p, dir, `set -e; echo in > in; echo c > "`+cache+`/c"; echo t > "$TMPDIR/t"; echo "TMP=$TMPDIR"`)
	if err != nil {
		t.Fatalf("writes inside: %v\n%s", err, out)
	}
	for _, f := range []string{filepath.Join(dir, "in"), filepath.Join(cache, "c")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	i := strings.Index(out, "TMP=")
	if i < 0 {
		t.Fatalf("no TMPDIR in %q", out)
	}
	tmp := strings.TrimSpace(out[i+len("TMP="):])
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) || tmp == os.TempDir() {
		t.Errorf("the private TMPDIR %q after the run: %v", tmp, err)
	}
	if ents, err := os.ReadDir(homes); err != nil || len(ents) != 0 {
		t.Errorf("CODEX_HOMEs left in %s: %v, %v", homes, ents, err)
	}

	for _, target := range []string{filepath.Join(outside, "x"), filepath.Join(os.TempDir(), "batty-sandbox-escape"), filepath.Join(homes, "x")} {
		out, err := run(t, p, dir, `echo x > "`+target+`"`)
		if err == nil {
			os.Remove(target)
			t.Fatalf("wrote %s: %s", target, out)
		}
		if Classify(out) != RefusedWrite {
			t.Errorf("writing %s: %q does not read as a refused write", target, out)
		}
	}
	// A .git in the directory is codex's to protect, as for agents.
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, p, dir, `mkdir .git/x`); err == nil {
		t.Fatalf("wrote into .git: %s", out)
	}
}

// Without the network no socket opens, not even on loopback; with it, the
// command reaches a server here.
func TestCommandNetwork(t *testing.T) {
	bin := codextest.Sandbox(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	// The client is this test binary (TestHelperConnect).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := "BATTY_SANDBOX_CONNECT=" + ln.Addr().String() + " " + self + " -test.run=^TestHelperConnect$"
	p := &Policy{Bin: bin, Homes: filepath.Join(t.TempDir(), "homes")}
	if out, err := run(t, p, t.TempDir(), script); err == nil {
		t.Fatalf("connected without the network: %s", out)
	} else if Classify(out) == RefusedNothing {
		t.Errorf("a refused connection reads as nothing: %s", out)
	}
	p.Network = true
	if out, err := run(t, p, t.TempDir(), script); err != nil || !strings.Contains(out, "hello") {
		t.Fatalf("with the network: %v: %s", err, out)
	}
}

// TestHelperConnect is the client of TestCommandNetwork: with
// BATTY_SANDBOX_CONNECT set it connects there and prints what it reads.
func TestHelperConnect(t *testing.T) {
	addr := os.Getenv("BATTY_SANDBOX_CONNECT")
	if addr == "" {
		t.Skip("the client of TestCommandNetwork")
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(c)
	fmt.Print(string(b))
	os.Exit(0)
}

// fakeSandboxCodex writes a codex whose `sandbox` subcommand runs body.
func fakeSandboxCodex(t *testing.T, body string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "codex")
	script := "#!/bin/sh\nif [ \"$1\" = sandbox ]; then\n" + body + "\nfi\necho codex-cli 0.171.0\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// Try passes with the real Codex's sandbox, and fails, saying why, with
// a codex whose sandbox cannot start or does not run the command.
func TestTry(t *testing.T) {
	ctx := context.Background()
	homes := t.TempDir()
	if bin, err := codextest.SandboxBinary(); err == nil {
		if err := Try(ctx, &Policy{Bin: bin, Homes: homes}, t.TempDir(), nil); err != nil {
			t.Errorf("the real sandbox: %v", err)
		}
	} else {
		t.Logf("no real sandbox here: %v", err)
	}
	for _, c := range []struct{ name, body, want string }{
		{"cannot start", "echo 'bwrap: No permissions to creating new namespace' >&2; exit 1", "bwrap: No permissions"},
		{"runs nothing", "exit 0", "did not write its working directory"},
	} {
		dir := t.TempDir()
		err := Try(ctx, &Policy{Bin: fakeSandboxCodex(t, c.body), Homes: homes}, dir, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("%s: the trial left %v", c.name, left)
		}
	}
	if fix := TrialFix("/opt/codex"); !strings.Contains(fix, "/opt/codex sandbox -- /bin/true") || !strings.Contains(fix, KeyOff) {
		t.Errorf("TrialFix = %q", fix)
	}
}
