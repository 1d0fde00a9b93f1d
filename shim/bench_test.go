package shim

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
)

// BenchmarkTurnViaShim measures one whole turn driven through a shim: send
// over the socketpair, spawn the (fake) worker, parse its JSONL, TurnFinished
// back. Compare with BenchmarkWorkerDirect for the shim's own overhead.
func BenchmarkTurnViaShim(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cfg := shimconfig.Config{Agent: "bench", CodexBin: self, Env: []string{"BATTY_TEST_ROLE=fakecodex", "FAKE_CODEX_STATE=" + b.TempDir()}}
	env := append(os.Environ(), "BATTY_TEST_ROLE=shim", "BATTY_LOG_LEVEL=error")
	p, err := shimclient.Spawn(shimclient.SpawnOptions{Path: self, Env: env, Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Kill()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := strconv.Itoa(i)
		if err := p.Conn.Send(protocol.SendMessage{ID: id, From: "human", Body: "benchmark turn"}); err != nil {
			b.Fatal(err)
		}
		for {
			m, err := p.Conn.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if tf, ok := m.(protocol.TurnFinished); ok {
				if tf.Status != protocol.TurnCompleted || tf.MessageID != id {
					b.Fatalf("turn %+v", tf)
				}
				break
			}
		}
	}
}

// BenchmarkWorkerDirect runs the same fake worker the way the shim does
// (same argv, prompt on stdin), but directly from the benchmark, reading its
// stdout to the end.
func BenchmarkWorkerDirect(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "BATTY_TEST_ROLE=fakecodex", "FAKE_CODEX_STATE="+b.TempDir())
	thread := ""
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(self, codex.ExecArgs(codex.ExecOptions{SkipGitRepoCheck: true}, thread)...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(FormatPrompt(protocol.SendMessage{ID: strconv.Itoa(i), From: "human", Body: "benchmark turn"}))
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		rd := codex.NewReader(&out, 0)
		for {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			if ev.Type == codex.TypeThreadStarted {
				thread = ev.ThreadID
			}
		}
	}
}
