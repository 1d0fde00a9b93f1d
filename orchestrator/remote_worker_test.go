package orchestrator

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/protocol"
)

// streamWorker is a Worker whose events are what a test puts in ev, as a
// shim on a host sends them over the stream; only Events, Err and Close
// are used by remoteWorker's forwarding.
type streamWorker struct {
	ev   chan protocol.Message
	done chan struct{}
}

func (w *streamWorker) Send(protocol.Message) error     { return nil }
func (w *streamWorker) Events() <-chan protocol.Message { return w.ev }
func (w *streamWorker) Err() error                      { return io.EOF }
func (w *streamWorker) BeginStop(time.Duration, string) {}
func (w *streamWorker) Kill()                           {}
func (w *streamWorker) Pid() int                        { return 0 }
func (w *streamWorker) Done() <-chan struct{}           { return w.done }
func (w *streamWorker) ExitCode() int                   { return 0 }
func (w *streamWorker) Close()                          {}

// A shim on a host sends its transcript; the actor gets what a local shim
// gives: no transcript_lines, the lines in the transcript here, and every
// other event as the shim's client gave it (the turn_finished with its
// whole reply, which the client joined).
func TestRemoteWorkerGivesWhatALocalShimGives(t *testing.T) {
	dir := t.TempDir()
	transcript := filepath.Join(dir, "logs", "eng.log")
	if err := os.MkdirAll(filepath.Dir(transcript), 0o700); err != nil {
		t.Fatal(err)
	}
	inner := &streamWorker{ev: make(chan protocol.Message, 16), done: make(chan struct{})}
	r := newRemoteWorker(inner, transcript, dir, hclog.NewNullLogger())
	defer r.Close()
	whole := strings.Repeat("a", 70<<10) + strings.Repeat("b", 10)
	inner.ev <- protocol.TranscriptLines{Lines: []string{"line from the host"}}
	inner.ev <- protocol.TurnFinished{MessageID: "m-1", Status: protocol.TurnCompleted, Reply: whole, ReplySize: int64(len(whole))}
	inner.ev <- protocol.TurnFinished{MessageID: "m-2", Status: protocol.TurnCompleted, Reply: "short", ReplySize: 5}
	inner.ev <- protocol.Pong{Nonce: 3}
	close(inner.ev)
	var got []protocol.Message
	for m := range r.Events() {
		got = append(got, m)
	}
	if len(got) != 3 {
		t.Fatalf("events %d, want 3 (two turn_finished, a pong): %v", len(got), got)
	}
	if e := got[0].(protocol.TurnFinished); e.Reply != whole || e.ReplySize != int64(len(whole)) {
		t.Errorf("m-1's reply is %d bytes, want the whole %d", len(e.Reply), len(whole))
	}
	if e := got[1].(protocol.TurnFinished); e.Reply != "short" {
		t.Errorf("m-2: %+v", e)
	}
	if _, ok := got[2].(protocol.Pong); !ok {
		t.Errorf("last event %T, want the pong", got[2])
	}
	r.Close()
	b, err := os.ReadFile(transcript)
	if err != nil || !strings.Contains(string(b), "line from the host") {
		t.Fatalf("transcript %q (%v); want the host's line", b, err)
	}
}
