package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/cmd/batty/internal/iostreams"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/fanout"
)

// inProcess readies this process to run batty commands itself: the shims
// they start re-execute this binary, which then runs as batty.
func inProcess(t *testing.T, env []string) {
	t.Helper()
	t.Setenv("BATTY_TEST_ROLE", "batty")
	if os.Getenv("GORACE") == "" {
		t.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// batty chat in this process, on a test's streams: the shim's events go to
// Out; chat's own notes (a line too long for codex is not sent) go to
// ErrOut, not to the process's stderr.
func TestChatInProcessWritesToItsStreams(t *testing.T) {
	bin, env := chatEnv(t)
	inProcess(t, env)
	ios, in, out, errOut := iostreams.Test()
	in.WriteString("hello [[mock:reply ALPHA]]\n" + strings.Repeat("x", codex.MaxBodyChars+1) + "\n")
	code := execute(ios, []string{"chat", "--codex-bin", bin, "--cwd", t.TempDir()})
	if code != 1 {
		t.Fatalf("exit %d, want 1 (one message not sent)\nout:\n%s\nerr:\n%s", code, out, errOut)
	}
	if o := out.String(); !strings.Contains(o, "✔ chat-1 completed") || !strings.Contains(o, "ALPHA") || strings.Contains(o, "not sent") {
		t.Errorf("out:\n%s", o)
	}
	if e := errOut.String(); !strings.Contains(e, "batty chat: chat-2 not sent: ") || strings.Contains(e, "ALPHA") {
		t.Errorf("err:\n%s", e)
	}
}

// batty fanout in this process with stderr taken as a terminal 60 columns
// wide: the progress is a live line redrawn in place, cut to the width,
// then cleared for the summary.
func TestFanoutInProcessDrawsItsProgressOnATerminal(t *testing.T) {
	j := newFanoutJob(t, "id\n1\n")
	inProcess(t, j.env)
	gate := filepath.Join(j.dir, "gate")
	ios, _, out, errOut := iostreams.Test()
	ios.SetStderrTTY(true, 60)
	done := make(chan int, 1)
	go func() { done <- execute(ios, j.args("{id} scenario:gate:"+gate+" replyjson")) }()
	// The row waits at its gate until the live line shows it running (cut
	// to the width: "1 runni…").
	deadline := time.Now().Add(time.Minute)
	drawn := false
	for !drawn && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling the output for a condition
		drawn = strings.Contains(errOut.String(), "\r\x1b[K[--------------------] fanout: 0/1 done, 0 failed, 1 runni")
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(time.Minute):
		t.Fatal("fanout did not end once the row could finish")
	}
	e := errOut.String()
	if !drawn {
		t.Fatalf("no live line with the row running; stderr ends %q", e[max(0, len(e)-400):])
	}
	if code != 0 || out.String() != "" {
		t.Fatalf("exit %d, out %q, err:\n%q", code, out, e)
	}
	lines := strings.Split(e, "\r\x1b[K")
	if len(lines) < 3 {
		t.Fatalf("no line redrawn in place:\n%q", e)
	}
	for _, l := range lines[1 : len(lines)-1] {
		if n := len([]rune(l)); n > 59 || strings.Contains(l, "\n") {
			t.Errorf("live line %q: %d columns, or not one line", l, n)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "fanout: 1 of 1 rows done, 0 failed, 0 pending") {
		t.Errorf("summary %q", last)
	}
	if recs := j.records("id"); len(recs) != 1 || recs[0].Status != fanout.StatusDone {
		t.Errorf("records %+v", recs)
	}
}
