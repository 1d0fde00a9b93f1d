package appserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/reap"
)

// markEnv marks every process an end-to-end test starts, so the test can
// find any left behind.
const markEnv = "BATTY_APPSERVER_TEST_MARK"

// e2eEnv is the environment for a real app-server: this process's, with
// CODEX_HOME set to home and the test's mark.
func e2eEnv(home, mark string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CODEX_HOME=") || strings.HasPrefix(kv, "RUST_BACKTRACE=") || strings.HasPrefix(kv, markEnv+"=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "CODEX_HOME="+home, markEnv+"="+mark)
}

func randomMark(t *testing.T) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// rateHeaders are the rate-limit headers of a ChatGPT-backed Responses
// API, which codex turns into account/rateLimits/updated.
func rateHeaders() http.Header {
	h := http.Header{}
	h.Set("x-codex-primary-used-percent", "42")
	h.Set("x-codex-primary-window-minutes", "300")
	h.Set("x-codex-primary-reset-at", "1900000000")
	h.Set("x-codex-secondary-used-percent", "7")
	h.Set("x-codex-secondary-window-minutes", "10080")
	h.Set("x-codex-secondary-reset-at", "1900500000")
	return h
}

// startReal starts and initializes a real app-server; Cleanup closes it.
func startReal(t *testing.T, ctx context.Context, bin string, env []string, dir string) *Client {
	t.Helper()
	c, err := Start(ctx, Options{Bin: bin, Env: env, Cwd: dir, ClientName: "batty-test", ClientVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("initialize: %v (stderr %q)", err, c.Stderr())
	}
	return c
}

// waitGone waits until process pid has exited (it may remain a zombie).
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	fd, err := reap.OpenPidfd(pid)
	if errors.Is(err, syscall.ESRCH) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if !fd.WaitExit(time.Now().Add(10 * time.Second)) {
		t.Fatalf("%s (pid %d) still runs after Close", what, pid)
	}
}

// TestRealAppServer runs the pinned Codex CLI's app-server against the
// mock Responses API: two turns on one thread (the second request carries
// the first turn), typed rate limits from the response headers, an
// interrupt, a thread resumed by id in a second server, and no process
// left once the clients are closed, not even a command the model started.
func TestRealAppServer(t *testing.T) {
	bin := codextest.CodexNative(t)
	srv := codextest.NewServer(t)
	srv.Handle(func(r codextest.Request) codextest.Reply {
		rep := srv.Scripted(r)
		rep.Header = rateHeaders()
		return rep
	})
	home := srv.WriteHome(t)
	dir := t.TempDir()
	mark := randomMark(t)
	env := e2eEnv(home, mark)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	c := startReal(t, ctx, bin, env, dir)
	if _, err := c.RateLimits(ctx); err == nil {
		t.Error("account/rateLimits/read without a ChatGPT login: no error")
	}
	th, err := c.StartThread(ctx, ThreadOptions{Cwd: dir, Sandbox: "danger-full-access", ApprovalPolicy: "never",
		DeveloperInstructions: "DEV-INSTR-7341 answer briefly"})
	if err != nil {
		t.Fatal(err)
	}

	// Turn 1.
	var seen []string
	res, err := c.RunTurn(ctx, th.ID, "first turn ALPHA-5521", func(n Notification) { seen = append(seen, n.Method) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusCompleted || res.FinalMessage != "ECHO: first turn ALPHA-5521" {
		t.Fatalf("turn 1: %+v", res)
	}
	if res.Usage == nil || res.Usage.Total.InputTokens == 0 {
		t.Errorf("turn 1 usage %+v", res.Usage)
	}
	if rl := res.RateLimits; rl == nil || rl.Primary == nil || rl.Primary.UsedPercent != 42 || rl.Primary.WindowMinutes != 300 ||
		rl.Primary.ResetsAt != 1900000000 || rl.Secondary == nil || rl.Secondary.UsedPercent != 7 {
		t.Errorf("turn 1 rate limits %+v", rl)
	}
	for _, m := range []string{NotifyTurnStarted, NotifyItemCompleted, NotifyTurnCompleted} {
		if !strings.Contains(strings.Join(seen, " "), m) {
			t.Errorf("notifications %v lack %s", seen, m)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(strings.Join(reqs[0].InputTexts, "\n"), "DEV-INSTR-7341") {
		t.Fatalf("turn 1: %d requests; developer instructions missing from %q", len(reqs), reqs[0].InputTexts)
	}

	// Turn 2 on the same thread: the request carries turn 1.
	res, err = c.RunTurn(ctx, th.ID, "[[mock:reply SECOND-OK]]", nil)
	if err != nil || res.Status != StatusCompleted || res.FinalMessage != "SECOND-OK" {
		t.Fatalf("turn 2: %+v, %v", res, err)
	}
	reqs = srv.Requests()
	last := reqs[len(reqs)-1]
	if !strings.Contains(strings.Join(last.UserTexts, "\n"), "first turn ALPHA-5521") ||
		!strings.Contains(strings.Join(last.InputTexts, "\n"), "assistant: ECHO: first turn ALPHA-5521") {
		t.Fatalf("turn 2's request lacks turn 1: %q", last.InputTexts)
	}

	// A typed failure.
	res, err = c.RunTurn(ctx, th.ID, "[[mock:quota]]", nil)
	if err != nil || res.Status != StatusFailed || res.Error == nil || res.Error.Code != "usageLimitExceeded" {
		t.Fatalf("quota turn: %+v, %v", res, err)
	}

	// Interrupt a turn whose model request hangs.
	n := len(srv.Requests())
	type out struct {
		res TurnResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := c.RunTurn(ctx, th.ID, "[[mock:slow 60]]", nil)
		done <- out{r, err}
	}()
	if err := srv.WaitRequests(ctx, n+1); err != nil {
		t.Fatal(err)
	}
	if err := c.Interrupt(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil || o.res.Status != StatusInterrupted {
		t.Fatalf("interrupted turn: %+v, %v", o.res, o.err)
	}
	pid1 := c.Pid()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid1, "first app-server")

	// A second server resumes the thread by id; the model sees turn 1.
	c2 := startReal(t, ctx, bin, env, dir)
	th2, err := c2.ResumeThread(ctx, th.ID, ThreadOptions{Cwd: dir, ApprovalPolicy: "never"})
	if err != nil {
		t.Fatal(err)
	}
	if th2.ID != th.ID {
		t.Fatalf("resumed thread %q, want %q", th2.ID, th.ID)
	}
	res, err = c2.RunTurn(ctx, th.ID, "[[mock:reply RESUMED-OK]]", nil)
	if err != nil || res.Status != StatusCompleted || res.FinalMessage != "RESUMED-OK" {
		t.Fatalf("resumed turn: %+v, %v", res, err)
	}
	reqs = srv.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(strings.Join(last.UserTexts, "\n"), "first turn ALPHA-5521") {
		t.Fatalf("the resumed thread's request lacks turn 1: %q", last.UserTexts)
	}

	// Close while the model's command runs: the command dies too.
	fifo := filepath.Join(t.TempDir(), "pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened read-write, the FIFO never reports end of file; the deadline
	// bounds the wait for the command's pid.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	turnDone := make(chan error, 1)
	go func() {
		_, err := c2.RunTurn(ctx, th.ID, "[[mock:shell echo $$ > "+fifo+"; exec sleep 300]]", nil)
		turnDone <- err
	}()
	if err := f.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		t.Fatalf("the command's pid: %v (stderr %q)", err, c2.Stderr())
	}
	cmdPid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	pid2 := c2.Pid()
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-turnDone; !errors.Is(err, ErrClosed) {
		t.Fatalf("turn cut by Close: %v, want ErrClosed", err)
	}
	waitGone(t, pid2, "second app-server")
	waitGone(t, cmdPid, "the model's command")
	if left := reap.Marked(markEnv, mark); len(left) > 0 {
		t.Fatalf("processes left behind: %v", left)
	}
}

// TestRealAppServerDies checks what a client sees when the server dies
// under a running turn.
func TestRealAppServerDies(t *testing.T) {
	bin := codextest.CodexNative(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := startReal(t, ctx, bin, e2eEnv(home, randomMark(t)), dir)
	th, err := c.StartThread(ctx, ThreadOptions{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.RunTurn(ctx, th.ID, "[[mock:slow 60]]", nil)
		done <- err
	}()
	if err := srv.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "signal: killed") {
		t.Fatalf("turn of a killed server: %v, want ErrClosed naming the signal", err)
	}
	if _, err := c.StartThread(ctx, ThreadOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after death: %v", err)
	}
}

// TestRealAppServerContextEndKills checks that ending Start's context
// kills and reaps the server, and fails the client's calls.
func TestRealAppServerContextEndKills(t *testing.T) {
	bin := codextest.CodexNative(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	dir := t.TempDir()
	mark := randomMark(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := startReal(t, ctx, bin, e2eEnv(home, mark), dir)
	pid := c.Pid()
	cancel()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not end with its context")
	}
	if err := c.Err(); !errors.Is(err, ErrClosed) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Err() = %v, want ErrClosed and context.Canceled", err)
	}
	waitGone(t, pid, "app-server")
	if left := reap.Marked(markEnv, mark); len(left) > 0 {
		t.Fatalf("processes left behind: %v", left)
	}
	if _, err := c.StartThread(context.Background(), ThreadOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after the context ended: %v", err)
	}
}
