package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/syncbuf"
)

// TestMain lets this test binary also be a shim and a fake codex, selected
// by BATTY_TEST_ROLE.
func TestMain(m *testing.M) {
	switch os.Getenv("BATTY_TEST_ROLE") {
	case "shim":
		os.Exit(shim.Main(os.Args[1:]))
	case "fakecodex":
		os.Exit(codextest.FakeMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// recorder keeps the events a session hands out; hit closes on the first
// one cond accepts.
type recorder struct {
	mu   sync.Mutex
	all  []protocol.Message
	cond func(protocol.Message) bool
	hit  chan struct{}
	once sync.Once
}

func (r *recorder) event(m protocol.Message) {
	r.mu.Lock()
	r.all = append(r.all, m)
	r.mu.Unlock()
	if r.cond != nil && r.cond(m) {
		r.once.Do(func() { close(r.hit) })
	}
}

// finished returns the status of each TurnFinished, by message id.
func (r *recorder) finished() map[string]protocol.TurnStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]protocol.TurnStatus{}
	for _, m := range r.all {
		if e, ok := m.(protocol.TurnFinished); ok {
			out[e.MessageID] = e.Status
		}
	}
	return out
}

// newSession is a session on a real shim of this binary with the fake
// codex; cleanup asserts that no process it started is left.
func newSession(t *testing.T, rec *recorder, notes io.Writer) Session {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mark := fmt.Sprintf("chat-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { codextest.AssertNoMarked(t, mark) })
	return Session{
		Spawn: shimclient.SpawnOptions{Path: self,
			Env: append(os.Environ(), "BATTY_TEST_ROLE=shim", "BATTY_LOG_LEVEL=warn", codextest.MarkEnv+"="+mark),
			Config: shimconfig.Config{Agent: "chat", CodexBin: self, StopGrace: 300 * time.Millisecond,
				Env: []string{"BATTY_TEST_ROLE=fakecodex", "FAKE_CODEX_STATE=" + dir}},
			Stderr: notes},
		Event: rec.event, Notes: notes, ShutdownTimeout: 10 * time.Minute,
	}
}

// TestRunSendsEveryLine: each non-blank line is a message chat-N, a line
// Codex would refuse is not sent and counts as failed, and Run returns
// once every turn has finished and the shim has exited.
func TestRunSendsEveryLine(t *testing.T) {
	var notes syncbuf.Buffer
	rec := &recorder{}
	s := newSession(t, rec, &notes)
	in := "first scenario:text\n\n  \nsecond scenario:text\n"
	ok, err := s.Run(context.Background(), strings.NewReader(in))
	if err != nil || !ok {
		t.Fatalf("Run = %v, %v; notes %q", ok, err, notes.String())
	}
	if got := rec.finished(); len(got) != 2 || got["chat-1"] != protocol.TurnCompleted || got["chat-2"] != protocol.TurnCompleted {
		t.Errorf("finished turns %v, want chat-1 and chat-2 completed", got)
	}

	long := strings.Repeat("x", 2<<20) + "\n"
	ok, err = newSession(t, &recorder{}, &notes).Run(context.Background(), strings.NewReader("fine scenario:text\n"+long))
	if err != nil || ok || !strings.Contains(notes.String(), "batty chat: chat-2 not sent: ") {
		t.Errorf("a line over Codex's limit: Run = %v, %v; notes %q", ok, err, notes.String())
	}
}

// TestRunStopsOnItsInterrupts: the first interrupt shuts the shim down
// (the turn in flight gets ShutdownTimeout), the second kills it at once;
// Run then reports the message unfinished.
func TestRunStopsOnItsInterrupts(t *testing.T) {
	var notes syncbuf.Buffer
	rec := &recorder{hit: make(chan struct{}), cond: func(m protocol.Message) bool {
		_, started := m.(protocol.TurnStarted)
		return started
	}}
	s := newSession(t, rec, &notes)
	sigs := make(chan os.Signal, 2)
	s.Interrupts = sigs
	in, feed := io.Pipe() // stdin stays open: only the interrupts end the session
	defer feed.Close()
	go func() {
		fmt.Fprintln(feed, "slow scenario:sleepms:120000")
		select {
		case <-rec.hit:
		case <-time.After(60 * time.Second):
		}
		sigs <- syscall.SIGINT
		sigs <- syscall.SIGTERM
	}()
	start := time.Now()
	ok, err := s.Run(context.Background(), in)
	if err != nil || ok {
		t.Fatalf("Run = %v, %v; want not ok, no error", ok, err)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("Run took %s: the second interrupt did not kill the shim", took)
	}
	if st, ok := rec.finished()["chat-1"]; ok && st == protocol.TurnCompleted {
		t.Errorf("chat-1 completed, want it cut short")
	}
	for _, want := range []string{"batty chat: interrupt: stopping (again to kill)", "batty chat: shim exited (status "} {
		if !strings.Contains(notes.String(), want) {
			t.Errorf("notes %q lack %q", notes.String(), want)
		}
	}
}

// TestChannelBroken: the shim's clean exit is no error; anything else
// names the unfinished messages and wraps the cause.
func TestChannelBroken(t *testing.T) {
	cause := errors.New("bad frame")
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{io.EOF, ""},
		{fmt.Errorf("read: %w", io.EOF), ""},
		{cause, "the shim broke the control channel (now closed) with 2 message(s) unfinished: bad frame"},
	} {
		got := channelBroken(c.err, 2)
		if (got == nil) != (c.want == "") || got != nil && (got.Error() != c.want || !errors.Is(got, c.err)) {
			t.Errorf("channelBroken(%v) = %v, want %q", c.err, got, c.want)
		}
	}
}
