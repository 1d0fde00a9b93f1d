package shim

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/replyfile"
	"github.com/battyhq/batty/shim/shimconfig"
)

// wholeReply returns the whole reply a TurnFinished stands for: Reply
// itself, or the content of its reply file (checked against reply_size and
// the preview, then removed as a parent does).
func wholeReply(t *testing.T, tf protocol.TurnFinished) string {
	t.Helper()
	if tf.ReplyFile == "" {
		if tf.ReplySize != 0 {
			t.Fatalf("reply_size %d without a reply file", tf.ReplySize)
		}
		return tf.Reply
	}
	if len(tf.Reply) > protocol.MaxReplyPreview || tf.ReplySize <= int64(len(tf.Reply)) {
		t.Fatalf("preview of %d bytes for a reply of %d", len(tf.Reply), tf.ReplySize)
	}
	d, err := replyfile.Open(filepath.Dir(tf.ReplyFile))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	name := filepath.Base(tf.ReplyFile)
	if name != replyfile.Name(tf.MessageID) {
		t.Fatalf("reply file %s, want %s", name, replyfile.Name(tf.MessageID))
	}
	fi, err := os.Lstat(tf.ReplyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("reply file: %v %v", fi, err)
	}
	whole, err := d.Read(name, tf.ReplySize)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(whole, tf.Reply) {
		t.Fatal("the preview is not the start of the reply")
	}
	if err := d.Remove(name); err != nil {
		t.Fatal(err)
	}
	return whole
}

// TestReplyLargerThanAFrame: a reply larger than the 16 MiB frame limit
// still ends its message in exactly one TurnFinished, with the whole reply
// in the reply file, and the shim goes on with the next message.
func TestReplyLargerThanAFrame(t *testing.T) {
	const n = 20 << 20
	h := startShim(t, nil)
	h.send("big", "scenario:huge:"+strconv.Itoa(n))
	h.expect(kAccepted, kState, kStarted, kThread)
	tf := h.finished("big", protocol.TurnCompleted)
	if tf.ReplySize != n {
		t.Fatalf("reply_size = %d, want %d", tf.ReplySize, n)
	}
	if whole := wholeReply(t, tf); len(whole) != n || strings.Trim(whole, "x") != "" {
		t.Fatalf("whole reply: %d bytes", len(whole))
	}
	h.expect(kPressure, kState) // the fake counts n/4 output tokens
	h.send("next", "after the big one")
	h.expect(kAccepted, kState, kStarted)
	if tf := h.finished("next", protocol.TurnCompleted); tf.Reply != "ECHO:after the big one" || tf.ReplyFile != "" {
		t.Fatalf("next reply = %+v", tf)
	}
}

// TestLongReplyWithoutAReplyDir: with nowhere to store it, a long reply
// still finishes its message, as a preview with its whole size and a
// warning saying what was lost.
func TestLongReplyWithoutAReplyDir(t *testing.T) {
	const n = 200 << 10
	h := startShim(t, func(c *shimconfig.Config) { c.ReplyDir = "" })
	h.send("big", "scenario:huge:"+strconv.Itoa(n))
	h.expect(kAccepted, kState, kStarted, kThread)
	w := h.expect(kWarning)[0].(protocol.Warning)
	if w.MessageID != "big" || !strings.Contains(w.Message, "reply-dir") {
		t.Fatalf("warning = %+v", w)
	}
	tf := h.finished("big", protocol.TurnCompleted)
	if tf.ReplyFile != "" || tf.ReplySize != n || len(tf.Reply) != protocol.MaxReplyPreview {
		t.Fatalf("turn finished: reply %d bytes, file %q, size %d", len(tf.Reply), tf.ReplyFile, tf.ReplySize)
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
