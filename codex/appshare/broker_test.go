package appshare

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/appserver"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/unixsock"
)

// env is the shared process's environment: this process's, with
// CODEX_HOME and the test's mark.
func env(home, mark string) []string {
	var e []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CODEX_HOME=") || strings.HasPrefix(kv, codextest.MarkEnv+"=") {
			continue
		}
		e = append(e, kv)
	}
	return append(e, "CODEX_HOME="+home, codextest.MarkEnv+"="+mark)
}

func newMark(t *testing.T) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// deaths records OnDeath calls.
type deaths struct {
	mu   sync.Mutex
	hows []string
	ch   chan struct{}
}

func (d *deaths) note(_ int, how string) {
	d.mu.Lock()
	d.hows = append(d.hows, how)
	d.mu.Unlock()
	d.ch <- struct{}{}
}

// startBroker runs a broker on a real app-server against a mock; allow
// decides admissions (nil: everyone, each connection as an agent of its
// own). Its socket's directory has a path of over 200 bytes, longer than
// a socket address holds (as a state directory under a long home has).
func startBroker(t *testing.T, ctx context.Context, allow func(int) (string, error)) (*Broker, *codextest.Server, string, *deaths) {
	t.Helper()
	bin := codextest.CodexNative(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	mark := newMark(t)
	if allow == nil {
		var n atomic.Int32
		allow = func(int) (string, error) { return fmt.Sprintf("agent-%d", n.Add(1)), nil }
	}
	d := &deaths{ch: make(chan struct{}, 4)}
	top, err := os.MkdirTemp("", "appshare-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(top) })
	dir := top
	for len(dir) < 200 {
		dir = filepath.Join(dir, strings.Repeat("s", 50))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := Listen(ctx, Options{
		Server: appserver.Options{Bin: bin, Env: env(home, mark), Cwd: t.TempDir()},
		Socket: filepath.Join(dir, "s"), Allow: allow, OnDeath: d.note, Restart: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		codextest.AssertNoMarked(t, mark)
	})
	return b, srv, mark, d
}

// dial connects a client to the broker and opens its session.
func dial(t *testing.T, ctx context.Context, b *Broker) *appserver.Client {
	t.Helper()
	nc, err := unixsock.Dial(ctx, b.Socket())
	if err != nil {
		t.Fatal(err)
	}
	c, err := appserver.Dial(ctx, nc, appserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("initialize through the broker: %v", err)
	}
	return c
}

// TestBrokerSessions runs two connections on one real process: each runs
// turns on its own thread, at the same time; neither may start a turn on,
// resume or interrupt the other's thread; a method the broker does not
// forward is refused; a connection that ends with a turn running has that
// turn interrupted, and the other connection's thread goes on.
func TestBrokerSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, srv, _, _ := startBroker(t, ctx, nil)
	a, c := dial(t, ctx, b), dial(t, ctx, b)
	ta, err := a.StartThread(ctx, appserver.ThreadOptions{ApprovalPolicy: "never"})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := c.StartThread(ctx, appserver.ThreadOptions{ApprovalPolicy: "never"})
	if err != nil {
		t.Fatal(err)
	}

	slow := make(chan error, 1)
	go func() {
		res, err := a.RunTurn(ctx, ta.ID, "[[mock:slow 60]]", nil)
		if err == nil && res.Status != appserver.StatusInterrupted {
			err = fmt.Errorf("status %s", res.Status)
		}
		slow <- err
	}()
	if err := srv.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	res, err := c.RunTurn(ctx, tc.ID, "[[mock:reply C-OK]]", nil)
	if err != nil || res.FinalMessage != "C-OK" {
		t.Fatalf("c's turn while a's runs: %+v, %v", res, err)
	}
	var rpc *appserver.RPCError
	if _, err := c.RunTurn(ctx, ta.ID, "steal", nil); !errors.As(err, &rpc) {
		t.Errorf("turn on another connection's thread: %v, want a refusal", err)
	}
	if _, err := c.ResumeThread(ctx, ta.ID, appserver.ThreadOptions{}); !errors.As(err, &rpc) {
		t.Errorf("resume of another connection's thread: %v, want a refusal", err)
	}
	if err := c.Call(ctx, appserver.MethodTurnInterrupt, map[string]any{"threadId": ta.ID, "turnId": "x"}, nil); !errors.As(err, &rpc) {
		t.Errorf("interrupt of another connection's thread: %v, want a refusal", err)
	}
	if err := c.Call(ctx, "command/exec", map[string]any{"command": []string{"true"}}, nil); !errors.As(err, &rpc) || rpc.Code != -32601 {
		t.Errorf("command/exec through the broker: %v, want -32601", err)
	}
	// a ends with its turn running: the broker interrupts it.
	n := len(srv.Requests())
	_ = a.Close()
	if err := <-slow; !errors.Is(err, appserver.ErrClosed) {
		t.Fatalf("a's turn after a closed: %v", err)
	}
	res, err = c.RunTurn(ctx, tc.ID, "[[mock:reply C-AGAIN]]", nil)
	if err != nil || res.FinalMessage != "C-AGAIN" {
		t.Fatalf("c's turn after a left: %+v, %v", res, err)
	}
	if got := len(srv.Requests()); got != n+1 {
		t.Errorf("%d model requests after a left, want 1 (c's)", got-n)
	}
	// a's thread is free again: c may resume it.
	if _, err := c.ResumeThread(ctx, ta.ID, appserver.ThreadOptions{}); err != nil {
		t.Errorf("resume of a thread whose connection ended: %v", err)
	}
}

// TestBrokerRefusesStrangers checks that Allow's refusal closes the
// connection before anything is forwarded, and that Allow sees the peer's
// pid.
func TestBrokerRefusesStrangers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var seen sync.Map
	b, _, _, _ := startBroker(t, ctx, func(pid int) (string, error) {
		seen.Store(pid, true)
		return "", errors.New("not a shim")
	})
	nc, err := unixsock.Dial(ctx, b.Socket())
	if err != nil {
		t.Fatal(err)
	}
	c, err := appserver.Dial(ctx, nc, appserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx); err == nil {
		t.Fatal("initialize of a refused peer: no error")
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("the refused peer's connection did not end")
	}
	if _, ok := seen.Load(os.Getpid()); !ok {
		t.Error("Allow was not asked about this process's pid")
	}
	// A refused peer reads one JSON-RPC error line, then the end.
	raw, err := unixsock.Dial(ctx, b.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(raw); err != nil || string(got) != refusal {
		t.Errorf("a refused peer read %q, %v; want %q then the end", got, err, refusal)
	}
	if fi, err := os.Lstat(b.Socket()); err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %s: %v, %v; want a socket, 0600", b.Socket(), fi, err)
	}
}

// TestBrokerRestartsAKilledProcess kills the shared process with SIGKILL
// while a turn runs: OnDeath is called once, naming the signal; the
// connection ends (the turn fails with ErrClosed, for its shim to retry);
// a new process starts, and a new connection resumes the thread and runs
// a turn whose request carries the earlier one.
func TestBrokerRestartsAKilledProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, srv, _, d := startBroker(t, ctx, nil)
	a := dial(t, ctx, b)
	th, err := a.StartThread(ctx, appserver.ThreadOptions{ApprovalPolicy: "never"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := a.RunTurn(ctx, th.ID, "first FIRST-7710", nil); err != nil || res.Status != appserver.StatusCompleted {
		t.Fatalf("first turn: %+v, %v", res, err)
	}
	turn := make(chan error, 1)
	go func() {
		_, err := a.RunTurn(ctx, th.ID, "[[mock:slow 60]]", nil)
		turn <- err
	}()
	if err := srv.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	pid := b.Pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-turn; !errors.Is(err, appserver.ErrClosed) {
		t.Fatalf("turn of a killed process: %v, want ErrClosed", err)
	}
	select {
	case <-d.ch:
	case <-ctx.Done():
		t.Fatal("no OnDeath")
	}
	d.mu.Lock()
	hows := d.hows
	d.mu.Unlock()
	if len(hows) != 1 || !strings.Contains(hows[0], "killed") {
		t.Fatalf("OnDeath calls %q, want one naming the signal", hows)
	}
	a2 := dial(t, ctx, b)
	if b.Pid() == pid || b.Starts() != 2 {
		t.Fatalf("pid %d (was %d), %d starts; want a second process", b.Pid(), pid, b.Starts())
	}
	if _, err := a2.ResumeThread(ctx, th.ID, appserver.ThreadOptions{ApprovalPolicy: "never"}); err != nil {
		t.Fatal(err)
	}
	res, err := a2.RunTurn(ctx, th.ID, "[[mock:reply AGAIN-OK]]", nil)
	if err != nil || res.FinalMessage != "AGAIN-OK" {
		t.Fatalf("turn after the restart: %+v, %v", res, err)
	}
	reqs := srv.Requests()
	if !strings.Contains(strings.Join(reqs[len(reqs)-1].UserTexts, "\n"), "FIRST-7710") {
		t.Error("the resumed thread's request lacks the first turn")
	}
	select {
	case <-d.ch:
		t.Error("a second OnDeath")
	default:
	}
}
