package shim

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
)

// TestReplyLargerThanAFrame: a reply larger than the 16 MiB frame limit
// still ends its message in exactly one TurnFinished, the whole reply
// joined from its pieces as a driver's client joins them, and the shim
// goes on with the next message.
func TestReplyLargerThanAFrame(t *testing.T) {
	const n = 20 << 20
	h := startShim(t, nil)
	h.send("big", "scenario:huge:"+strconv.Itoa(n))
	h.expect(kAccepted, kState, kStarted, kThread)
	tf := h.finished("big", protocol.TurnCompleted)
	if tf.ReplySize != n {
		t.Fatalf("reply_size = %d, want %d", tf.ReplySize, n)
	}
	if len(tf.Reply) != n || strings.Trim(tf.Reply, "x") != "" {
		t.Fatalf("whole reply: %d bytes", len(tf.Reply))
	}
	h.expect(kPressure, kState) // the fake counts n/4 output tokens
	h.send("next", "after the big one")
	h.expect(kAccepted, kState, kStarted)
	if tf := h.finished("next", protocol.TurnCompleted); tf.Reply != "ECHO:after the big one" || tf.ReplySize != int64(len(tf.Reply)) {
		t.Fatalf("next reply = %+v", tf)
	}
}

// TestWorkerOutputNeverOutgrowsAFrame: an error message, a warning and a
// thread id of 20 MiB each still give their events and exactly one
// TurnFinished per message.
func TestWorkerOutputNeverOutgrowsAFrame(t *testing.T) {
	const n = 17 << 20 // more than a frame
	h := startShim(t, nil)
	h.send("fail", "scenario:hugefail:"+strconv.Itoa(n))
	h.expect(kAccepted, kState, kStarted, kThread)
	tf := h.finished("fail", protocol.TurnFailed)
	if tf.Failure != protocol.FailStream || len(tf.Error) > protocol.MaxText || !strings.HasPrefix(tf.Error, "stream error: eee") {
		t.Fatalf("failed turn: %s, error of %d bytes", tf.Failure, len(tf.Error))
	}
	h.expect(kState)

	h.send("warn", "scenario:hugewarn:"+strconv.Itoa(n))
	h.expect(kAccepted, kState, kStarted)
	if w := h.expect(kWarning)[0].(protocol.Warning); len(w.Message) > protocol.MaxText || !strings.HasPrefix(w.Message, "www") {
		t.Fatalf("warning of %d bytes", len(w.Message))
	}
	if tf := h.finished("warn", protocol.TurnCompleted); tf.Reply != "AFTER_WARNING" {
		t.Fatalf("reply = %q", tf.Reply)
	}
	h.expect(kState)

	h.command(protocol.ResetThread{Reason: "test"})
	h.expect(kThread)
	h.send("thread", "scenario:hugethread:"+strconv.Itoa(n))
	h.expect(kAccepted, kState, kStarted)
	if w := h.expect(kWarning)[0].(protocol.Warning); !strings.Contains(w.Message, "thread id") || len(w.Message) > 1024 {
		t.Fatalf("warning = %.200q", w.Message)
	}
	tf = h.finished("thread", protocol.TurnCompleted)
	if tf.ThreadID != "" {
		t.Fatalf("the implausible thread id was adopted (%d bytes)", len(tf.ThreadID))
	}
	h.expect(kState)
}

// TestProgressReaderStalled: the stdout drain is cut only when one read
// waited the whole grace without a byte — never while a long line is still
// being decoded or data keeps coming.
func TestProgressReaderStalled(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	p := &progressReader{r: r}
	if p.stalled() {
		t.Fatal("stalled before anything was seen")
	}
	// Not reading at all (busy decoding): not stalled.
	if p.stalled() {
		t.Fatal("stalled while no read waits")
	}
	got := make(chan int)
	go func() {
		n, _ := p.Read(make([]byte, 8))
		got <- n
	}()
	waitFor(t, func() bool { return p.reading.Load() })
	if p.stalled() {
		t.Fatal("stalled at the first look at a waiting read")
	}
	if !p.stalled() {
		t.Fatal("a read that waited the whole time is not stalled")
	}
	w.Write([]byte("data"))
	if n := <-got; n != 4 {
		t.Fatalf("read %d bytes", n)
	}
	go func() {
		n, _ := p.Read(make([]byte, 8))
		got <- n
	}()
	waitFor(t, func() bool { return p.reading.Load() })
	if p.stalled() {
		t.Fatal("stalled although bytes arrived since the last look")
	}
	w.Close()
	<-got
}

// waitFor waits until cond holds, failing after eventWait.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		runtime.Gosched()
	}
}
