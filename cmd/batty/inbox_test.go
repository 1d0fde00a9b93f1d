package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/inbox"
)

// deliver puts a message into a box directly, as the daemon or `batty send`
// would.
func deliver(t *testing.T, b *inbox.Box, m inbox.Message) inbox.Message {
	t.Helper()
	m, err := b.Deliver(m)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// finish delivers a message, claims it and records its outcome.
func finish(t *testing.T, b *inbox.Box, m inbox.Message, o inbox.Outcome) inbox.Message {
	t.Helper()
	m = deliver(t, b, m)
	if _, err := b.Claim(m.ID); err != nil {
		t.Fatal(err)
	}
	m, err := b.Complete(m.ID, o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// inboxFixture fills the human's box and engineer-1's box of a fresh
// project and returns the project directory and the messages by name.
func inboxFixture(t *testing.T) (string, map[string]inbox.Message) {
	t.Helper()
	dir, l := writeTeam(t)
	base := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	human := openBox(t, l, "human")
	eng := openBox(t, l, "engineer-1")
	ms := map[string]inbox.Message{}
	ms["h1"] = finish(t, human, inbox.Message{From: "manager", To: "human", Body: "first report\nsecond line", CreatedAt: base, InReplyTo: "20261121T115900.000000000Z-00000001"},
		inbox.Outcome{Status: inbox.StatusCompleted, Agent: "human", FinishedAt: base.Add(time.Minute)})
	ms["h2"] = deliver(t, human, inbox.Message{From: "engineer-1", To: "human", Body: "which database?", CreatedAt: base.Add(2 * time.Minute)})

	ms["e1"] = finish(t, eng, inbox.Message{From: "manager", To: "engineer", Body: "implement the parser", CreatedAt: base.Add(time.Minute)},
		inbox.Outcome{Status: inbox.StatusCompleted, Agent: "engineer-1", Reply: "Parser done.\nDetails follow.", InputTokens: 9526, OutputTokens: 41, ThreadID: "t-1", FinishedAt: base.Add(3 * time.Minute)})
	ms["e2"] = finish(t, eng, inbox.Message{From: "human", To: "engineer-1", Body: "run the benchmarks", CreatedAt: base.Add(4 * time.Minute)},
		inbox.Outcome{Status: inbox.StatusFailed, Failure: "quota", Error: "usage limit reached", Agent: "engineer-1", InputTokens: 12, FinishedAt: base.Add(5 * time.Minute)})
	ms["e3"] = deliver(t, eng, inbox.Message{From: "manager", To: "engineer-1", Body: "fix the flaky test", CreatedAt: base.Add(6 * time.Minute)})
	if _, err := eng.Claim(ms["e3"].ID); err != nil {
		t.Fatal(err)
	}
	ms["e4"] = deliver(t, eng, inbox.Message{From: "manager", To: "engineer-1", Body: "then update the docs", CreatedAt: base.Add(7 * time.Minute)})
	return dir, ms
}

// inOrder fails unless the strings appear in s in this order.
func inOrder(t *testing.T, s string, want ...string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(s[at:], w)
		if i < 0 {
			t.Fatalf("output lacks %q after offset %d:\n%s", w, at, s)
		}
		at += i + len(w)
	}
}

func TestInboxHuman(t *testing.T) {
	dir, ms := inboxFixture(t)
	out, errOut, code := runBattyIn(t, dir, nil, "", "inbox")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	inOrder(t, out,
		"from engineer-1  ", inbox.ShortID(ms["h2"].ID)+"\n  which database?\n",
		"from manager", "re 00000001", inbox.ShortID(ms["h1"].ID)+"\n  first report\n  second line\n")
	if strings.Contains(out, ms["h1"].ID) {
		t.Errorf("the listing shows a whole id, not the short form:\n%s", out)
	}

	out, _, code = runBattyIn(t, dir, nil, "", "inbox", "-n", "1")
	if code != 0 || !strings.Contains(out, "which database?") || strings.Contains(out, "first report") {
		t.Fatalf("-n 1: exit %d\n%s", code, out)
	}
}

func TestInboxAgent(t *testing.T) {
	dir, ms := inboxFixture(t)
	out, errOut, code := runBattyIn(t, dir, nil, "", "inbox", "engineer-1")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	inOrder(t, out,
		"new  from manager", inbox.ShortID(ms["e4"].ID)+"\n", "message: then update the docs",
		"in flight (attempt 1)  from manager", inbox.ShortID(ms["e3"].ID)+"\n", "message: fix the flaky test",
		"failed (quota)  from human", inbox.ShortID(ms["e2"].ID)+"\n", "message: run the benchmarks", "error:   usage limit reached", "tokens:  in 12 out 0",
		"completed  from manager to engineer", inbox.ShortID(ms["e1"].ID)+"\n", "message: implement the parser", "reply:   Parser done. …", "tokens:  in 9526 out 41",
	)
	if strings.Contains(out, "Details follow") {
		t.Fatalf("more than the reply's first line:\n%s", out)
	}
}

func TestInboxJSON(t *testing.T) {
	dir, ms := inboxFixture(t)
	out, errOut, code := runBattyIn(t, dir, nil, "", "inbox", "engineer-1", "--json", "-n", "3")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, errOut)
	}
	var got []struct {
		inbox.Message
		Box   string `json:"box"`
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, out)
	}
	if len(got) != 3 {
		t.Fatalf("%d messages, want 3 (-n 3):\n%s", len(got), out)
	}
	for i, want := range []struct{ id, state string }{{ms["e4"].ID, "new"}, {ms["e3"].ID, "in_flight"}, {ms["e2"].ID, "done"}} {
		if got[i].ID != want.id || got[i].State != want.state || got[i].Box != "engineer-1" {
			t.Errorf("message %d = %s %s in %s, want %s %s", i, got[i].ID, got[i].State, got[i].Box, want.id, want.state)
		}
	}
	if o := got[2].Outcome; o == nil || o.Status != "failed" || o.Failure != "quota" || o.Error != "usage limit reached" {
		t.Errorf("outcome %+v", o)
	}
	if !strings.Contains(out, `"state": "in_flight"`) || !strings.Contains(out, `"outcome": {`) {
		t.Errorf("JSON lacks the state or outcome keys:\n%s", out)
	}

	out, _, code = runBattyIn(t, dir, nil, "", "inbox", "--json")
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got) != 2 || got[1].InReplyTo == "" {
		t.Fatalf("human --json: exit %d, %v\n%s", code, err, out)
	}
}

func TestInboxEmptyAndUnknown(t *testing.T) {
	dir, l := writeTeam(t)
	out, _, code := runBattyIn(t, dir, nil, "", "inbox")
	if code != 0 || out != "no messages for human\n" {
		t.Fatalf("exit %d, output %q", code, out)
	}
	out, _, code = runBattyIn(t, dir, nil, "", "inbox", "--json", "manager")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("exit %d, output %q", code, out)
	}
	if _, err := os.Stat(l.Dir); !os.IsNotExist(err) {
		t.Fatalf("listing created %s: %v", l.Dir, err)
	}
	_, errOut, code := runBattyIn(t, dir, nil, "", "inbox", "enginer-1")
	if code != 1 || !strings.Contains(errOut, `unknown agent "enginer-1"`) || !strings.Contains(errOut, "agents: architect, manager, engineer-1, engineer-2") {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	// A role with several instances lists its queue.
	mustSend(t, dir, nil, "", "engineer", "anyone?")
	out, _, code = runBattyIn(t, dir, []string{agentenv.Agent + "=manager"}, "", "inbox", "engineer")
	if code != 0 || !strings.Contains(out, "message: anyone?") {
		t.Fatalf("role queue: exit %d\n%s", code, out)
	}
}
