package ptylog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/battyhq/batty/ptylog"
)

func Example() {
	dir, err := os.MkdirTemp("", "ptylog-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "architect.log")

	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	w, err := ptylog.Open(path, ptylog.Options{Now: func() time.Time { return now }}) // Color off
	if err != nil {
		panic(err)
	}
	exit := 0
	w.TurnHeader(ptylog.TurnHeader{From: "lead", MessageID: "m-42", ThreadID: "t-9", Time: now})
	w.Reasoning("Check the tests first.")
	w.CommandStarted("go test ./...")
	w.CommandFinished("go test ./...", &exit, "completed", "ok  \tgithub.com/battyhq/batty/ptylog\t1.5s\n")
	w.FileChanges([]ptylog.FileChange{{Path: "ptylog/render.go", Kind: "update"}})
	w.AgentMessage("Done.\nAll tests pass.")
	w.Usage(ptylog.UsageLine{TurnInput: 9526, TurnOutput: 3, TotalInput: 19124, TotalOutput: 10, ContextPct: 7, Duration: 1200 * time.Millisecond})
	w.TurnEnd("completed", "")
	if err := w.Close(); err != nil {
		panic(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	fmt.Print(string(data))
	// Output:
	// 2026-01-02T15:04:05.000Z ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━
	// 2026-01-02T15:04:05.000Z ── message m-42 from lead · 2026-01-02 15:04:05 · thread t-9 ──
	// 2026-01-02T15:04:05.000Z ~ Check the tests first.
	// 2026-01-02T15:04:05.000Z $ go test ./...
	// 2026-01-02T15:04:05.000Z   ok  	github.com/battyhq/batty/ptylog	1.5s
	// 2026-01-02T15:04:05.000Z   exit 0
	// 2026-01-02T15:04:05.000Z M ptylog/render.go
	// 2026-01-02T15:04:05.000Z » Done.
	// 2026-01-02T15:04:05.000Z   All tests pass.
	// 2026-01-02T15:04:05.000Z tokens: in 9,526 (cached 0) out 3 · thread total in 19,124 out 10 · ctx 7% · 1.2s
	// 2026-01-02T15:04:05.000Z ✔ completed
}
