package hosts

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/hosts/hoststest"
	"github.com/battyhq/batty/preflight"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
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

// startRemoteShim installs batty on the harness's host and starts a shim
// there over the transport, through package shim's own client.
func startRemoteShim(t *testing.T, s *hoststest.SSHD, tr *Transport, agent, codexBin string, env []string) *shimclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	batty, err := EnsureBatty(ctx, tr, s.Host, devBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := shimclient.Start(ctx, shimclient.SpawnOptions{
		Path: batty, Args: []string{"shim"}, Stderr: os.Stderr,
		Config: shimconfig.Config{Agent: agent, CodexBin: codexBin, Env: env, Instructions: "secret-instructions-text"},
		Remote: tr.ShimCommand(s.Host, "~"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if h := c.Hello(); h.Agent != agent || h.PID == 0 {
		t.Fatalf("hello = %+v", h)
	}
	return c
}

// pong sends a Ping and waits for its Pong among the shim's events.
func pong(t *testing.T, c *shimclient.Client, nonce uint64) {
	t.Helper()
	if err := c.Send(protocol.Ping{Nonce: nonce}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-c.Events():
			if !ok {
				t.Fatalf("events closed before the pong: %v", c.Err())
			}
			if p, ok := m.(protocol.Pong); ok && p.Nonce == nonce {
				return
			}
		case <-deadline:
			t.Fatal("no pong within 30s")
		}
	}
}

// TestSSHShimStdio runs the real `batty shim --stdio` on the host over
// ssh, driven by package shim's client: the handshake (its secrets in the
// Welcome, on no command line here or there), a ping, and a clean stop
// that leaves nothing of the user running but sshd's shared connection.
func TestSSHShimStdio(t *testing.T) {
	s, tr := sshTransport(t)
	const secret = "sk-remote-secret-value"
	c := startRemoteShim(t, s, tr, "remote-eng", "", []string{"OPENAI_API_KEY=" + secret})
	pong(t, c, 7)

	pids := []int{c.Pid(), c.Hello().PID}
	for _, l := range s.UserProcesses(t, true) {
		pid, _, _ := strings.Cut(l, " ")
		n, _ := strconv.Atoi(pid)
		pids = append(pids, n)
	}
	for _, pid := range pids {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err == nil && (strings.Contains(string(cmdline), secret) || strings.Contains(string(cmdline), "secret-instructions-text")) {
			t.Fatalf("process %d has a secret on its command line: %q", pid, cmdline)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Stop(ctx, time.Second, "test"); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if left := s.WaitNoUserProcesses(t, false, 15*time.Second); left != nil {
		t.Fatalf("left running on the host after a stop: %q", left)
	}
}

// TestSSHKillClient kills the local ssh of a remote shim in the middle
// of a turn, as a crash of the daemon would: the stream ends, the shim
// over there stops at the end of its stdin, killing its codex and what
// that started, and nothing of the user stays behind — none of its
// processes while ssh's shared connection lives on, not even sshd's
// session once that is closed.
func TestSSHKillClient(t *testing.T) {
	s, tr := sshTransport(t)
	// A codex whose turn starts a command in the background, says the
	// thread started once it runs, and waits.
	fake := filepath.Join(s.Home, "bin", "codex")
	script := "#!/bin/sh\nsleep 1000 &\necho '{\"type\":\"thread.started\",\"thread_id\":\"t-1\"}'\nwait\n"
	if err := os.MkdirAll(filepath.Dir(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := startRemoteShim(t, s, tr, "doomed", fake, nil)
	if err := c.Send(protocol.SendMessage{ID: "m1", From: "human", Body: "work"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for running := false; !running; {
		select {
		case m, ok := <-c.Events():
			if !ok {
				t.Fatalf("events closed before the turn ran: %v", c.Err())
			}
			if tc, ok := m.(protocol.ThreadChanged); ok && tc.ThreadID == "t-1" {
				running = true
			}
		case <-deadline:
			t.Fatal("the turn did not start within 30s")
		}
	}
	// The background command may still be the script's fork, not yet
	// sleep, when the thread's event arrives.
	for procs := []string(nil); !slices.ContainsFunc(procs, func(p string) bool { return strings.HasSuffix(p, " sleep") }); {
		select {
		case <-deadline:
			t.Fatalf("the turn's command is not running: %q", procs)
		case <-time.After(20 * time.Millisecond): // another user's processes: polled
		}
		procs = s.UserProcesses(t, false)
	}
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if left := s.WaitNoUserProcesses(t, false, 15*time.Second); left != nil {
		t.Fatalf("left running on the host after ssh was killed: %q", left)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Close(ctx, s.Host); err != nil {
		t.Fatal(err)
	}
	if left := s.WaitNoUserProcesses(t, true, 15*time.Second); left != nil {
		t.Fatalf("left running on the host after the shared connection closed: %q", left)
	}
}

// Two batty processes with sessions on one host (the daemon, a `batty
// fanout`) each have connections of their own: the one that ends closes
// its connections, and a session of the other goes on.
func TestSSHCloseLeavesAnotherOwnersSessions(t *testing.T) {
	s, tr := sshTransport(t)
	other := &Transport{ConfigFile: s.ConfigFile, ControlDir: tr.ControlDir, Owner: "other"}
	cmd, err := tr.Cmd(s.Host, "echo started; exec cat")
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	out := bufio.NewReader(outPipe)
	if line, err := out.ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("the session: %q, %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := other.Run(ctx, s.Host, "true", nil); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(ctx, s.Host); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(in, "still here\n"); err != nil {
		t.Fatalf("the session ended with the other's connections: %v", err)
	}
	if line, err := out.ReadString('\n'); err != nil || line != "still here\n" {
		t.Fatalf("the session ended with the other's connections: %q, %v", line, err)
	}
}

// TestSSHPlainCommandOutlivesKill is the reason the shim watches its
// stdin: sshd signals nothing to a session without a terminal, so a
// remote command that ignores the end of its stdin outlives a killed ssh
// (the harness kills it at the end). It also shows that the checks of
// TestSSHKillClient see such a survivor.
func TestSSHPlainCommandOutlivesKill(t *testing.T) {
	s, tr := sshTransport(t)
	cmd, err := tr.Cmd(s.Host, "echo started; exec sleep 1000")
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, len("started\n"))
	if _, err := io.ReadFull(out, line); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if left := s.WaitNoUserProcesses(t, false, 2*time.Second); !slices.ContainsFunc(left, func(p string) bool { return strings.HasSuffix(p, " sleep") }) {
		t.Fatalf("the remote command died with its ssh (%q): then the shim need not watch its stdin", left)
	}
}

// Many sessions at once on one host: more than sshd's MaxSessions (10 by
// default) commands run together over the transport, as the shims of many
// agents on one host do, and every one of them runs.
func TestSSHManySessionsAtOnce(t *testing.T) {
	s, tr := sshTransport(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 25
	errs := make(chan error, n)
	for i := range n {
		go func() {
			// Each holds its session until its stdin ends.
			out, err := tr.Run(ctx, s.Host, "read line; echo ok-$line", strings.NewReader(strconv.Itoa(i)+"\n"))
			if err == nil && string(out) != "ok-"+strconv.Itoa(i)+"\n" {
				err = fmt.Errorf("session %d: %q", i, out)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// The shims of many agents on one host hold their sessions for good: more
// of them than sshd's MaxSessions allows on one connection are all open
// at once, spread over several shared connections.
func TestSSHManyShimSessions(t *testing.T) {
	s, tr := sshTransport(t)
	const n = 25
	type session struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *strings.Builder
	}
	var open []session
	t.Cleanup(func() {
		for _, se := range open {
			se.cmd.Process.Kill()
			se.cmd.Wait()
		}
	})
	start := tr.ShimCommand(s.Host, "~")
	for i := range n {
		cmd, err := start([]string{"sh", "-c", "read line; echo ok-$line"})
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		open = append(open, session{cmd, in, out})
	}
	// Every session is open at once before any ends.
	for i, se := range open {
		fmt.Fprintf(se.in, "%d\n", i)
		se.in.Close()
	}
	for i, se := range open {
		if err := se.cmd.Wait(); err != nil || se.out.String() != fmt.Sprintf("ok-%d\n", i) {
			t.Errorf("session %d: %v: %q", i, err, se.out.String())
		}
	}
	open = nil
	if ents, _ := os.ReadDir(tr.ControlDir); len(ents) < (n+SessionsPerConnection-1)/SessionsPerConnection {
		t.Errorf("%d control sockets for %d sessions", len(ents), n)
	}
}

// TestSSHLongHome reaches a host through the real ssh with a home of
// over 200 bytes and no XDG_RUNTIME_DIR: the control sockets live in
// ~/.ssh/batty (ControlDirFor), whose path is far longer than a socket
// address holds, and the shared connection still works: opened, reused by
// a second run, closed.
func TestSSHLongHome(t *testing.T) {
	s := hoststest.StartSSHD(t)
	// Not under /tmp or $TMPDIR, which ControlDirFor refuses.
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip("no cache directory outside /tmp for a home:", err)
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	top, err := os.MkdirTemp(cache, "batty-long-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	home := top
	for len(home) < 200 {
		home = filepath.Join(home, strings.Repeat("h", 40))
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", "")
	dir := filepath.Join(home, ".ssh", "batty")
	if got := DefaultControlDir(); got != dir {
		t.Fatalf("control directory %q, want %q", got, dir)
	}
	tr := &Transport{ConfigFile: s.ConfigFile}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 2 { // the second run goes over the shared connection
		out, err := tr.Run(ctx, s.Host, "echo run "+strconv.Itoa(i), nil)
		if err != nil {
			t.Fatalf("run %d with the control directory %s (%d bytes): %v", i, dir, len(dir), err)
		}
		if want := "run " + strconv.Itoa(i) + "\n"; string(out) != want {
			t.Fatalf("run %d: out = %q, want %q", i, out, want)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Type()&os.ModeSocket == 0 {
		t.Fatalf("control directory holds %v (%v), want one shared connection's socket", entries, err)
	}
	if err := tr.Close(ctx, s.Host); err != nil {
		t.Fatal(err)
	}
	// The master removes its socket as it exits, after it has answered
	// -O exit: wait for that, up to a bound.
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries, err := os.ReadDir(dir)
		if err == nil && len(entries) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Close the control directory holds %v (%v)", entries, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
