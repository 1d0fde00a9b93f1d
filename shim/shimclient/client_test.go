package shimclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/syncbuf"
	"github.com/battyhq/batty/team"
)

// fakeShimEnv selects how the test binary plays a shim under
// BATTY_TEST_ROLE=fakeshim (see fakeShimMain).
const fakeShimEnv = "FAKE_SHIM_MODE"

// fakeShimExitOnKill is the status the deaf fake exits with on a Kill
// command, which tells a test that the command, not a signal, ended it.
const fakeShimExitOnKill = 7

// fakeShimMain plays a shim that misbehaves on purpose, on fd 3:
//   - deaf: says hello, answers every command with a Warning naming it,
//     ignores Shutdown, exits fakeShimExitOnKill on a Kill command;
//   - stone: says hello, then ignores everything (a signal ends it);
//   - mute: never says hello;
//   - garbage: says hello, then sends a frame that is not msgpack;
//   - flood: says hello, then sends reply pieces past protocol.MaxReply
//     (a piece more than the bound allows), then a Warning.
func fakeShimMain() int {
	conn, err := protocol.FileConn(os.NewFile(shimconfig.ControlFD, "control"), protocol.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake shim:", err)
		return 2
	}
	mode := os.Getenv(fakeShimEnv)
	if mode == "mute" {
		time.Sleep(time.Hour)
		return 0
	}
	if _, err := conn.OfferHelloWelcome(protocol.Hello{Agent: "fake"}, protocol.DefaultHandshakeTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "fake shim:", err)
		return 2
	}
	switch mode {
	case "stone":
		time.Sleep(time.Hour)
		return 0
	case "garbage":
		if err := conn.WriteFrame([]byte{0xc1}); err != nil { // 0xc1: never used by msgpack
			fmt.Fprintln(os.Stderr, "fake shim:", err)
			return 2
		}
		time.Sleep(time.Hour)
		return 0
	case "flood":
		piece := strings.Repeat("f", protocol.MaxReplyChunk)
		for range protocol.MaxReply/protocol.MaxReplyChunk + 1 {
			if err := conn.Send(protocol.ReplyChunk{MessageID: "m", Data: piece}); err != nil {
				return 3 // the parent refused the flood and closed the channel
			}
		}
		conn.Send(protocol.Warning{Message: "after the flood"})
		time.Sleep(time.Hour)
		return 0
	}
	for {
		m, err := conn.Recv()
		if err != nil {
			return 3
		}
		conn.Send(protocol.Warning{Message: string(m.Kind())})
		if _, ok := m.(protocol.Kill); ok {
			return fakeShimExitOnKill
		}
	}
}

// startFake starts the test binary as a fake shim in mode. Cleanup closes
// the client and asserts that nothing it started is left.
func startFake(t *testing.T, ctx context.Context, mode string, handshake time.Duration) (*Client, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mark := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	env := append(os.Environ(), "BATTY_TEST_ROLE=fakeshim", fakeShimEnv+"="+mode, "BATTY_TEST_MARK="+mark)
	t.Cleanup(func() { codextest.AssertNoMarked(t, mark) })
	c, err := Start(ctx, SpawnOptions{Path: self, Env: env, Config: shimconfig.Config{Agent: "fake"}, Stderr: os.Stderr, HandshakeTimeout: handshake})
	if err == nil {
		t.Cleanup(c.Close)
		c.killAfter, c.signalAfter = 50*time.Millisecond, 200*time.Millisecond
	}
	return c, err
}

// startRealClient starts a real shim (this test binary as `batty shim`)
// whose codex is the fake, through a Client.
func startRealClient(t *testing.T) (*Client, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mark := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	cfg := shimconfig.Config{
		Agent:      "tester",
		CodexBin:   self,
		Env:        []string{"BATTY_TEST_ROLE=fakecodex", "FAKE_CODEX_STATE=" + t.TempDir()},
		Transcript: filepath.Join(t.TempDir(), "tester.log"),
		StopGrace:  300 * time.Millisecond,
	}
	log := &syncbuf.Buffer{}
	env := append(os.Environ(), "BATTY_TEST_ROLE=shim", "BATTY_TEST_MARK="+mark, "TZ=UTC")
	c, err := Start(context.Background(), SpawnOptions{Path: self, Env: env, Config: cfg, Stderr: log})
	if err != nil {
		t.Fatalf("start shim: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			t.Logf("shim log:\n%s", log.String())
		}
		codextest.AssertNoMarked(t, mark)
	})
	return c, mark
}

// nextEvent returns the next event of c, failing the test when none comes
// within eventWait or Events closed.
func nextEvent(t *testing.T, c *Client) protocol.Message {
	t.Helper()
	select {
	case m, ok := <-c.Events():
		if !ok {
			t.Fatalf("events closed (%v) while waiting for one", c.Err())
		}
		return m
	case <-time.After(eventWait):
		t.Fatalf("no event within %s", eventWait)
	}
	return nil
}

// drain reads c's events until Events closes and returns them.
func drain(t *testing.T, c *Client) []protocol.Message {
	t.Helper()
	var got []protocol.Message
	deadline := time.After(eventWait)
	for {
		select {
		case m, ok := <-c.Events():
			if !ok {
				return got
			}
			got = append(got, m)
		case <-deadline:
			t.Fatalf("events not closed within %s (so far: %s)", eventWait, describe(got))
		}
	}
}

// stopWithin runs Stop and fails the test when it does not return in time.
func stopWithin(t *testing.T, c *Client, ctx context.Context, grace time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Stop(ctx, grace, "test") }()
	select {
	case err := <-done:
		return err
	case <-time.After(eventWait):
		t.Fatalf("Stop did not return within %s", eventWait)
	}
	return nil
}

// A turn through a Client, then a Stop: the events arrive in order, Events
// closes with io.EOF after the last one, and Stop, Kill and Close called
// again change nothing.
func TestClientTurnThenStop(t *testing.T) {
	c, mark := startRealClient(t)
	if h := c.Hello(); h.Agent != "tester" || h.PID != c.Pid() {
		t.Fatalf("hello = %+v, want the shim's (pid %d)", h, c.Pid())
	}
	if err := c.Send(protocol.SendMessage{ID: "m1", From: team.Human, Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	for {
		if tf, ok := nextEvent(t, c).(protocol.TurnFinished); ok {
			if tf.MessageID != "m1" || tf.Status != protocol.TurnCompleted || tf.Reply != "ECHO:hi" {
				t.Fatalf("turn finished = %+v", tf)
			}
			break
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- c.Stop(context.Background(), time.Minute, "test") }()
	got := drain(t, c)
	asked := false
	for _, m := range got {
		if sc, ok := m.(protocol.StateChanged); ok && sc.Reason == "shutdown: test" {
			asked = true
		}
	}
	last, ok := got[len(got)-1].(protocol.StateChanged)
	if !asked || !ok || last.To != protocol.StateStopped {
		t.Fatalf("events after Stop: %s ending with %#v, want the stop asked for, then stopped", describe(got), got[len(got)-1])
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop = %v, want a clean exit", err)
	}
	if !errors.Is(c.Err(), io.EOF) {
		t.Fatalf("Err = %v, want io.EOF", c.Err())
	}
	if err := stopWithin(t, c, context.Background(), time.Minute); err != nil || c.ExitCode() != 0 {
		t.Fatalf("second Stop = %v, exit %d", err, c.ExitCode())
	}
	c.Kill()
	c.Close()
	c.Close()
	if err := c.Send(protocol.Ping{Nonce: 1}); !errors.Is(err, protocol.ErrClosed) {
		t.Fatalf("Send after the end = %v, want ErrClosed", err)
	}
	codextest.AssertNoMarked(t, mark)
}

// A shim killed with SIGKILL from outside: Events closes with io.EOF (the
// kernel closed its end between frames), and the exit says the signal.
func TestClientShimKilledFromOutside(t *testing.T) {
	c, mark := startRealClient(t)
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	drain(t, c)
	if !errors.Is(c.Err(), io.EOF) {
		t.Fatalf("Err = %v, want io.EOF", c.Err())
	}
	select {
	case <-c.Done():
	case <-time.After(eventWait):
		t.Fatal("Done not closed")
	}
	if code := c.ExitCode(); code != -1 {
		t.Fatalf("exit code = %d, want -1 (a signal)", code)
	}
	if err := c.Send(protocol.Ping{Nonce: 1}); !errors.Is(err, protocol.ErrClosed) {
		t.Fatalf("Send to a dead shim = %v, want ErrClosed", err)
	}
	codextest.AssertNoMarked(t, mark)
}

// A shim that sends a frame that cannot be decoded: Events closes with the
// decode error (not io.EOF), and the channel is closed.
func TestClientBrokenChannel(t *testing.T) {
	c, err := startFake(t, context.Background(), "garbage", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(t, c); len(got) != 0 {
		t.Fatalf("events = %s, want none", describe(got))
	}
	if err := c.Err(); err == nil || errors.Is(err, io.EOF) || errors.Is(err, protocol.ErrClosed) {
		t.Fatalf("Err = %v, want the decode error", err)
	}
	if err := c.Send(protocol.Ping{Nonce: 1}); !errors.Is(err, protocol.ErrClosed) {
		t.Fatalf("Send on a broken channel = %v, want ErrClosed", err)
	}
}

// A shim deaf to Shutdown gets a Kill command once the grace and the
// margin are over; it obeys that, so no signal is needed.
func TestClientStopSendsKillToDeafShim(t *testing.T) {
	c, err := startFake(t, context.Background(), "deaf", 0)
	if err != nil {
		t.Fatal(err)
	}
	stopWithin(t, c, context.Background(), 100*time.Millisecond)
	if code := c.ExitCode(); code != fakeShimExitOnKill {
		t.Fatalf("exit code = %d, want %d (the Kill command)", code, fakeShimExitOnKill)
	}
	var kinds []string
	for _, m := range drain(t, c) {
		kinds = append(kinds, m.(protocol.Warning).Message)
	}
	if fmt.Sprint(kinds) != fmt.Sprint([]protocol.Kind{protocol.KindShutdown, protocol.KindKill}) {
		t.Fatalf("commands the shim got = %v, want shutdown then kill", kinds)
	}
}

// A shim that ignores every command gets SIGKILL after the Kill command's
// bound; Stop returns once it is reaped.
func TestClientStopSignalsStoneShim(t *testing.T) {
	c, err := startFake(t, context.Background(), "stone", 0)
	if err != nil {
		t.Fatal(err)
	}
	stopWithin(t, c, context.Background(), 0)
	if code := c.ExitCode(); code != -1 {
		t.Fatalf("exit code = %d, want -1 (SIGKILL)", code)
	}
	drain(t, c)
}

// The end of Stop's context sends SIGKILL at once, long before the grace.
func TestClientStopContextEnds(t *testing.T) {
	c, err := startFake(t, context.Background(), "stone", 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopWithin(t, c, ctx, time.Hour)
	if code := c.ExitCode(); code != -1 {
		t.Fatalf("exit code = %d, want -1 (SIGKILL)", code)
	}
}

// Close with events unread: the shim is killed, Events closes, and the
// reader does not stay blocked on a full channel.
func TestClientCloseDropsUnreadEvents(t *testing.T) {
	c, err := startFake(t, context.Background(), "deaf", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range clientEventBuffer * 2 {
		if err := c.Send(protocol.Ping{Nonce: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	drain(t, c)
	if !errors.Is(c.Err(), protocol.ErrClosed) && !errors.Is(c.Err(), io.EOF) {
		t.Fatalf("Err = %v, want ErrClosed or io.EOF", c.Err())
	}
	if code := c.ExitCode(); code != -1 {
		t.Fatalf("exit code = %d, want -1 (SIGKILL)", code)
	}
}

// A shim that never says hello: the end of Start's context ends the wait
// long before the handshake's timeout, and nothing is left running.
func TestClientStartContextEndsHandshake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := startFake(t, ctx, "mute", time.Hour)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start = %v, want the context's deadline", err)
	}
	if took := time.Since(begin); took > eventWait {
		t.Fatalf("Start took %s", took)
	}
}
