package codex_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/codextest"
)

// The real CLI continues a thread under another CODEX_HOME once its
// rollout was carried there: the first request on the second home carries
// the turn the first home ran.
func TestCarriedThreadResumesUnderAnotherHome(t *testing.T) {
	first, second := codextest.NewServer(t), codextest.NewServer(t)
	homeA, homeB := first.WriteHome(t), second.WriteHome(t)
	dir := t.TempDir()
	run := func(home, resume, prompt string) string {
		t.Helper()
		p := codextest.Start(t, codextest.Invocation{Home: home, Dir: dir, Resume: resume, Prompt: prompt})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if code, err := p.Wait(ctx); err != nil || code != 0 {
			t.Fatalf("codex exit %d, %v\n%s", code, err, p.Stderr())
		}
		for _, ev := range p.Events() {
			if ev.Type == "thread.started" {
				return ev.ThreadID
			}
		}
		return resume
	}
	thread := run(homeA, "", "remember PELICAN [[mock:reply NOTED]]")
	if !codex.IsThreadID(thread) {
		t.Fatalf("no thread: %q", thread)
	}
	if _, err := codex.CarryThread(homeA, homeB, thread); err != nil {
		t.Fatal(err)
	}
	if got := run(homeB, thread, "what was it? [[mock:reply PELICAN]]"); got != thread {
		t.Fatalf("resumed as thread %q, want %q", got, thread)
	}
	reqs := second.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests on the second account, want 1", len(reqs))
	}
	all := strings.Join(reqs[0].InputTexts, "\n")
	if !strings.Contains(all, "remember PELICAN") || !strings.Contains(all, "NOTED") {
		t.Fatalf("the second account's first request lacks the earlier turn:\n%s", all)
	}
}
