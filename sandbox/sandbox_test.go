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
	sh := []string{"/bin/sh", "-c", "go test ./..."}
	profile := func(fs, network string) []string {
		return []string{"sandbox",
			"-c", `default_permissions="batty"`,
			"-c", `permissions.batty={extends=":workspace",filesystem={` + fs + `},network={enabled=` + network + `}}`,
			"--", "/bin/sh", "-c", "go test ./..."}
	}
	tests := []struct {
		name     string
		policy   Policy
		dir, tmp string
		want     []string
	}{
		{"nothing besides the worktree", Policy{}, "/w/eng", "/tmp/t",
			profile(`"/tmp/t"="write","/w/eng"="write",":slash_tmp"="read"`, "false")},
		{"caches and the network", Policy{Writable: []string{"/root/.cache/go-build", "/root/go/pkg/mod/"}, Network: true}, "/w/eng", "/tmp/t",
			profile(`"/root/.cache/go-build"="write","/root/go/pkg/mod"="write","/tmp/t"="write","/w/eng"="write",":slash_tmp"="read"`, "true")},
		{"the state directory denied, the worktree in it writable, a denial inside another left out",
			Policy{Deny: []string{"/s/p", "/s/p/worktrees", "/run/user/1"}, Network: true}, "/s/p/worktrees/eng", "/tmp/t",
			profile(`"/run/user/1"="none","/s/p"="none","/s/p/worktrees/eng"="write","/tmp/t"="write",":slash_tmp"="read"`, "true")},
		{"quotes, backslashes and control characters", Policy{Writable: []string{`/a"b`, `/c\d`, "/e\tf\x7f"}}, "/w", "/t",
			profile(`"/a\"b"="write","/c\\d"="write","/e\tf\u007f"="write","/t"="write","/w"="write",":slash_tmp"="read"`, "false")},
		{"not ASCII", Policy{Writable: []string{"/srv/café"}}, "/w", "/t",
			profile(`"/srv/café"="write","/t"="write","/w"="write",":slash_tmp"="read"`, "false")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Args(tt.policy.Permissions(tt.dir, tt.tmp), sh); !reflect.DeepEqual(got, tt.want) {
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

// A command with the network on, in a worktree inside a denied state
// directory: it writes its worktree, but reads nothing of the state
// directory nor of another worktree, cannot connect to a unix socket in a
// denied directory (one outside is reached: the network is on), and does
// not get the hidden variables.
func TestCommandDenied(t *testing.T) {
	bin := codextest.Sandbox(t)
	state, sockets, open := t.TempDir(), t.TempDir(), t.TempDir()
	wt, other := filepath.Join(state, "worktrees", "eng"), filepath.Join(state, "worktrees", "other")
	for _, d := range []string{wt, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(state, "secret"), filepath.Join(other, "secret")} {
		if err := os.WriteFile(f, []byte("classified\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	denied, allowed := serveUnix(t, filepath.Join(sockets, "s")), serveUnix(t, filepath.Join(open, "s"))
	p := &Policy{Bin: bin, Homes: filepath.Join(t.TempDir(), "homes"), Network: true,
		Deny: []string{state, filepath.Join(state, "worktrees"), sockets}, HideEnv: []string{"SSH_AUTH_SOCK"}}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	connect := func(addr string) string {
		return "BATTY_SANDBOX_CONNECT=unix:" + addr + " " + self + " -test.run=^TestHelperConnect$"
	}
	t.Setenv("SSH_AUTH_SOCK", denied)

	if out, err := run(t, p, wt, `set -e; echo w > built; echo "agent=${SSH_AUTH_SOCK:-none}"; `+connect(allowed)); err != nil ||
		!strings.Contains(out, "agent=none") || !strings.Contains(out, "hello") {
		t.Fatalf("in its worktree, the socket outside: %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(wt, "built")); err != nil {
		t.Fatalf("the worktree was not written: %v", err)
	}
	for _, script := range []string{
		"cat " + filepath.Join(state, "secret"),
		"ls " + state,
		"cat " + filepath.Join(other, "secret"),
		"echo x > " + filepath.Join(other, "planted"),
		connect(denied),
	} {
		if out, err := run(t, p, wt, script); err == nil || strings.Contains(out, "classified") || strings.Contains(out, "hello") {
			t.Errorf("%s: %v: %s", script, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(other, "planted")); err == nil {
		t.Error("another worktree was written")
	}
}

// serveUnix listens on the unix socket path, greeting each connection
// with "hello", and returns path.
func serveUnix(t *testing.T, path string) string {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
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
	return path
}

// TestHelperConnect is the client of TestCommandNetwork and
// TestCommandDenied: with BATTY_SANDBOX_CONNECT set (host:port, or
// unix:path) it connects there and prints what it reads.
func TestHelperConnect(t *testing.T) {
	addr := os.Getenv("BATTY_SANDBOX_CONNECT")
	if addr == "" {
		t.Skip("the client of TestCommandNetwork")
	}
	network := "tcp"
	if a, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, addr = "unix", a
	}
	c, err := net.Dial(network, addr)
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
