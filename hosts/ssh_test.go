package hosts

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/hosts/hoststest"
	"github.com/battyhq/batty/preflight"
)

// sshTransport starts the sshd harness and returns it with a transport
// that reaches it (its config file, a short control directory of the
// test's) whose shared connection is closed when the test ends.
func sshTransport(t *testing.T) (*hoststest.SSHD, *Transport) {
	t.Helper()
	s := hoststest.StartSSHD(t)
	tr := &Transport{ConfigFile: s.ConfigFile, ControlDir: filepath.Join(shortTempDir(t), "c")}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tr.Close(ctx, s.Host); err != nil {
			t.Errorf("closing the shared connection: %v", err)
		}
	})
	return s, tr
}

func TestSSHRunsAsTheUser(t *testing.T) {
	s, tr := sshTransport(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 2 { // the second run goes over the shared connection
		out, err := tr.Run(ctx, s.Host, `id -un; printf '%s\n' "$HOME"; cat`, strings.NewReader("stdin "+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if want := s.User + "\n" + s.Home + "\nstdin " + strconv.Itoa(i); string(out) != want {
			t.Fatalf("run %d: out = %q, want %q", i, out, want)
		}
	}
	entries, err := os.ReadDir(tr.ControlDir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("control directory holds %v (%v), want one shared connection's socket", entries, err)
	}
	// A remote failure comes back with its status and stderr.
	if _, err := tr.Run(ctx, s.Host, "echo nope >&2; exit 7", nil); err == nil || !strings.Contains(err.Error(), "exit status 7") || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("failing remote command: %v", err)
	}
}

// TestSSHUnknownHostKey checks that a host whose key is not known is
// refused, not trusted on first use.
func TestSSHUnknownHostKey(t *testing.T) {
	s, tr := sshTransport(t)
	cfg, err := os.ReadFile(s.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(cfg), "\n") {
		if strings.Contains(l, "UserKnownHostsFile") {
			l = "  UserKnownHostsFile " + empty
		}
		if strings.Contains(l, "StrictHostKeyChecking") {
			continue // the user's default: ask, which BatchMode turns into no
		}
		lines = append(lines, l)
	}
	other := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(other, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	tr2 := &Transport{ConfigFile: other, ControlDir: tr.ControlDir}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := tr2.Run(ctx, s.Host, "echo in", nil); err == nil || !strings.Contains(err.Error(), "Host key verification failed") {
		t.Fatalf("unknown host key: %q, %v", out, err)
	}
	if b, _ := os.ReadFile(empty); len(b) != 0 {
		t.Fatalf("the host key was added to known_hosts: %s", b)
	}
}

func TestSSHEnsureBatty(t *testing.T) {
	s, tr := sshTransport(t)
	b := devBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path, err := EnsureBatty(ctx, tr, s.Host, b)
	if err != nil {
		t.Fatal(err)
	}
	installed := filepath.Join(s.Home, ".cache", "batty", b.Key, "batty")
	fi, err := os.Stat(installed)
	if err != nil {
		t.Fatalf("not installed at %s: %v", installed, err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != s.UID || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed binary: owner %d mode %v, want %d 0755", st.Uid, fi.Mode().Perm(), s.UID)
	}
	out, err := tr.Run(ctx, s.Host, ShellCommand(path, "version"), nil)
	if err != nil || strings.TrimSpace(string(out)) != b.Version {
		t.Fatalf("installed batty version: %q, %v; want %q", out, err, b.Version)
	}

	// The second time: nothing to do (a binary that cannot be read would
	// fail an upload).
	again := b
	again.Path = filepath.Join(t.TempDir(), "absent")
	if _, err := EnsureBatty(ctx, tr, s.Host, again); err != nil {
		t.Fatalf("second EnsureBatty: %v", err)
	}
	if fi2, err := os.Stat(installed); err != nil || !os.SameFile(fi, fi2) {
		t.Fatalf("second EnsureBatty replaced the binary: %v", err)
	}
}

func TestSSHPreflight(t *testing.T) {
	s, tr := sshTransport(t)
	b := devBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	batty, err := EnsureBatty(ctx, tr, s.Host, b)
	if err != nil {
		t.Fatal(err)
	}

	// No codex on the host's PATH: the problem says so, with the fix.
	p, err := Preflight(ctx, tr, s.Host, batty, preflight.Target{Bin: "codex", Cwd: "~"})
	if err != nil {
		t.Fatal(err)
	}
	if p == nil || p.Kind != preflight.KindMissing || !strings.Contains(p.Detail, "on host sshtest: codex not found") ||
		!strings.Contains(p.Fix, "on sshtest: install it: npm install -g @openai/codex@") {
		t.Fatalf("missing codex: %+v", p)
	}

	// A codex there that needs a login: the key in the target's
	// environment (sent on stdin, never on a command line) is enough.
	fake := filepath.Join(s.Home, "bin", "codex")
	script := "#!/bin/sh\ncase \"$1\" in\n--version) echo codex-cli 0.169.0;;\nlogin) echo 'Not logged in'; exit 1;;\nesac\n"
	if err := os.MkdirAll(filepath.Dir(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err = Preflight(ctx, tr, s.Host, batty, preflight.Target{Bin: "~/bin/codex", Cwd: "~"})
	if err != nil {
		t.Fatal(err)
	}
	if p == nil || p.Kind != preflight.KindLogin || !strings.HasPrefix(p.Fix, "on sshtest: run: ") {
		t.Fatalf("codex not logged in: %+v", p)
	}
	p, err = Preflight(ctx, tr, s.Host, batty, preflight.Target{Bin: "~/bin/codex", Cwd: "~", Env: []string{"OPENAI_API_KEY=sk-test-secret"}})
	if err != nil || p != nil {
		t.Fatalf("codex with a key: %+v, %v", p, err)
	}
}
