package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/searchindex"
	"github.com/battyhq/batty/threads"
)

// memoryTeam is a stopped team whose records hold two threads of dev (one
// archived by a reset) and one of rev, with hostile text and a secret.
func memoryTeam(t *testing.T) (dir string, l project.Layout) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte("name: t\nroles:\n  - name: dev\n  - name: rev\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = layoutOf(t, dir)
	now := time.Now().UTC().Add(-time.Hour)
	rec := func(agent, thread, msg string, m int, body, reply string) journal.Record {
		return journal.Build(journal.Turn{Agent: agent, Role: agent, At: now.Add(time.Duration(m) * time.Minute),
			Message:  inbox.Message{ID: msg, From: "human", Body: body, CreatedAt: now, Attempt: 1},
			Finished: protocol.TurnFinished{ThreadID: thread, Status: protocol.TurnCompleted, Reply: reply, Usage: protocol.Usage{Input: 1000, Output: 100}}})
	}
	for _, r := range []journal.Record{
		rec("dev", "0199aaaa-1111-7000-8000-000000000001", "m1", 1, "write the parser", "wrote parser.go\x1b]0;pwned\x07 with key sk-abcdefghijklmnopqrstuvwx1234"),
		rec("dev", "0199aaaa-1111-7000-8000-000000000002", "m2", 2, "after the reset: tests for the parser", "tests pass"),
		rec("rev", "0199bbbb-2222-7000-8000-000000000003", "m3", 3, "review the parser", "fine"),
	} {
		if _, _, err := journal.Append(l, r); err != nil {
			t.Fatal(err)
		}
	}
	st := project.AgentState{Name: "dev", ThreadID: "0199aaaa-1111-7000-8000-000000000002",
		ArchivedThreads: []project.ArchivedThread{{ID: "0199aaaa-1111-7000-8000-000000000001", Reason: "reset by user", At: now.Add(90 * time.Second)}}}
	if err := project.SaveJSON(l, project.AgentStateName("dev"), st); err != nil {
		t.Fatal(err)
	}
	return dir, l
}

func TestThreadsCommand(t *testing.T) {
	dir, _ := memoryTeam(t)
	out, errOut, code := runBattyIn(t, dir, nil, "", "threads")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"…000000000001", "archived (reset)", "current", "rev", "write the parser", "tests pass"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("an escape reached the terminal:\n%q", out)
	}
	out, errOut, code = runBattyIn(t, dir, nil, "", "threads", "dev", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct{ Threads []threads.Thread }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Threads) != 2 || got.Threads[0].State != threads.StateCurrent || got.Threads[1].Ended != threads.EndReset {
		t.Errorf("threads %+v", got.Threads)
	}

	out, errOut, code = runBattyIn(t, dir, nil, "", "threads", "show", "…000000000001")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"write the parser", "[REDACTED:openai]", "1 secrets redacted"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-abcdefghijklmnopqrstuvwx1234") || strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("show leaks a secret or an escape:\n%q", out)
	}
	out, _, code = runBattyIn(t, dir, nil, "", "threads", "show", "0199aaaa-1111-7000-8000-000000000001", "--markdown", "--no-redact")
	if code != 0 || !strings.Contains(out, "# Thread 0199aaaa\\-1111") || !strings.Contains(out, "sk-abcdefghijklmnopqrstuvwx1234") || !strings.Contains(out, "```markdown") {
		t.Errorf("markdown, exit %d:\n%s", code, out)
	}
	if _, errOut, code = runBattyIn(t, dir, nil, "", "threads", "show", "0199"); code != 1 || !strings.Contains(errOut, "names 3 threads") {
		t.Errorf("an ambiguous prefix: exit %d: %s", code, errOut)
	}
}

func TestSearchCommand(t *testing.T) {
	dir, l := memoryTeam(t)
	// Without an index: the journal is read directly, and said so.
	out, errOut, code := runBattyIn(t, dir, nil, "", "search", "parser")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Count(out, "message m") != 3 || !strings.Contains(errOut, "the index is missing") {
		t.Errorf("out:\n%s\nerr:\n%s", out, errOut)
	}
	if strings.Index(out, "m3") > strings.Index(out, "m1") {
		t.Errorf("not newest first:\n%s", out)
	}
	w, err := searchindex.Open(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.Close()
	out, errOut, code = runBattyIn(t, dir, nil, "", "search", "parser", "--agent", "dev", "--json")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct{ Hits []searchindex.Hit }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Hits) != 2 || got.Hits[0].Message != "m2" || got.Hits[1].Field != searchindex.FieldMessage {
		t.Errorf("hits %+v", got.Hits)
	}
	out, _, _ = runBattyIn(t, dir, nil, "", "search", "key")
	if !strings.Contains(out, "[REDACTED:openai]") || strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("snippet:\n%q", out)
	}
	for _, args := range [][]string{{"search", ",,"}, {"search", "x", "--since", "nope"}, {"search"}} {
		if _, _, code := runBattyIn(t, dir, nil, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if _, errOut, code := runBattyIn(t, dir, nil, "", "search", "x", "--agent", "nobody"); code != 1 {
		t.Errorf("an unknown agent: exit %d: %s", code, errOut)
	}
}
