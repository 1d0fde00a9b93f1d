package threads

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/usage"
)

var t0 = time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)

func at(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }

func jrec(agent, thread, msg string, m int, body, reply string) journal.Record {
	return journal.Build(journal.Turn{Agent: agent, Role: "dev", Account: "work", At: at(m),
		Message:  inbox.Message{ID: msg, From: "human", Body: body, CreatedAt: at(m - 1), Attempt: 1},
		Finished: protocol.TurnFinished{ThreadID: thread, Status: protocol.TurnCompleted, Reply: reply, Duration: 30 * time.Second, Usage: protocol.Usage{Input: 100, Output: 10}}})
}

func lturn(agent, thread, msg string, m int) usage.Turn {
	return usage.Turn{V: usage.Version, Key: usage.TurnKey(agent, msg, 1), At: at(m), Agent: agent, Role: "dev", Account: "work", Message: msg, Attempt: 1,
		Thread: thread, Tokens: usage.Tokens{Input: 100, Output: 10}, DurationMS: 30000, Status: "completed"}
}

func TestEndKind(t *testing.T) {
	for reason, want := range map[string]string{
		"reset by user":                            EndReset,
		"context full":                             EndReset,
		"resume_failed: thread not found":          EndStale,
		"resume_changed: codex answered with 0199": EndStale,
		"the agent moved to account b, where its thread could not be carried (x)":               EndRotation,
		"its last request used 91% of the 272000-token context window (handoff from 85%)":       EndHandoff,
		"message m1 did not fit the context window even on a fresh thread":                      EndHandoff,
		"the context window ran out twice on message m1, even after codex compacted the thread": EndHandoff,
	} {
		if got := EndKind(reason); got != want {
			t.Errorf("EndKind(%q) = %s, want %s", reason, got, want)
		}
	}
}

func TestBuild(t *testing.T) {
	r := Records{
		Roles: map[string]string{"dev": "dev", "rev": "review"},
		States: map[string]project.AgentState{
			"dev": {Name: "dev", ThreadID: "th-4", ArchivedThreads: []project.ArchivedThread{
				{ID: "th-1", Reason: "reset by user", At: at(10)},
				{ID: "th-2", Reason: "resume_failed: gone", At: at(20)},
				{ID: "th-3", Reason: "its last request used 91% of the context window", At: at(30)},
			}},
			"rev": {Name: "rev", ThreadID: "th-r", UpdatedAt: at(50)},
		},
		// th-1's turns in the ledger only (before the journal), one of
		// th-2's in both.
		Ledger: []usage.Turn{lturn("dev", "th-1", "m1", 1), lturn("dev", "th-1", "m2", 2), lturn("dev", "th-2", "m3", 11)},
		Journal: []journal.Record{
			jrec("dev", "th-2", "m3", 11, "first of two", "one"),
			jrec("dev", "th-2", "m4", 12, "second", "two"),
			jrec("dev", "th-3", "m5", 21, "handed off", "three"),
			jrec("dev", "th-4", "m6", 31, "now", "four"),
			jrec("dev", "th-old", "m0", 0, "a thread the state forgot", "zero"),
		},
	}
	ts := Build(r)
	var ids []string
	for _, th := range ts {
		ids = append(ids, th.ID)
	}
	if want := []string{"th-r", "th-4", "th-3", "th-2", "th-1", "th-old"}; !slices.Equal(ids, want) {
		t.Fatalf("order %v, want %v", ids, want)
	}
	by := map[string]Thread{}
	for _, th := range ts {
		by[th.ID] = th
	}
	for id, want := range map[string]struct {
		state, ended string
		turns        int
		first, last  string
	}{
		"th-1":   {StateArchived, EndReset, 2, "", ""},
		"th-2":   {StateArchived, EndStale, 2, "first of two", "two"},
		"th-3":   {StateArchived, EndHandoff, 1, "handed off", "three"},
		"th-4":   {StateCurrent, "", 1, "now", "four"},
		"th-r":   {StateCurrent, "", 0, "", ""},
		"th-old": {StatePast, "", 1, "a thread the state forgot", "zero"},
	} {
		th := by[id]
		if th.State != want.state || th.Ended != want.ended || th.Turns != want.turns || th.FirstMessage != want.first || th.LastReply != want.last {
			t.Errorf("%s: %+v", id, th)
		}
	}
	if th := by["th-2"]; th.Tokens.Input != 200 || !th.Started.Equal(at(11).Add(-30*time.Second)) || !th.LastActive.Equal(at(12)) || th.Account != "work" || th.Role != "dev" {
		t.Errorf("th-2: %+v", th)
	}
	if th := by["th-r"]; th.Role != "review" || !th.LastActive.Equal(at(50)) {
		t.Errorf("th-r: %+v", th)
	}
	if got := Filter(ts, []string{"dev"}, false, at(15)); len(got) != 3 {
		t.Errorf("filter: %d threads", len(got))
	}
	if got := Filter(ts, nil, true, time.Time{}); len(got) != len(ts) {
		t.Errorf("filter --all: %d threads", len(got))
	}
	if th, err := Find(ts, "th-o"); err != nil || th.ID != "th-old" {
		t.Errorf("find by prefix: %v %v", th.ID, err)
	}
	if _, err := Find(ts, "th-"); err == nil {
		t.Error("an ambiguous prefix found one")
	}
	if _, err := Find(ts, "nope"); !errors.Is(err, ErrNoThread) {
		t.Errorf("find nothing: %v", err)
	}
	conv := Conversation(r.Journal, "dev", "th-2")
	if len(conv) != 2 || conv[0].Message.ID != "m3" {
		t.Errorf("conversation %+v", conv)
	}
}

// Load reads the real files: a state file, the ledger and the journal.
func TestLoad(t *testing.T) {
	l := project.Layout{Dir: filepath.Join(t.TempDir(), "state")}
	st := project.AgentState{Name: "dev", ThreadID: "th-2", ArchivedThreads: []project.ArchivedThread{{ID: "th-1", Reason: "reset by user", At: at(5)}}}
	if err := project.SaveJSON(l, project.AgentStateName("dev"), st); err != nil {
		t.Fatal(err)
	}
	lg, err := usage.Open(l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lg.AppendTurn(lturn("dev", "th-1", "m1", 1)); err != nil {
		t.Fatal(err)
	}
	lg.Close()
	for _, r := range []journal.Record{jrec("dev", "th-1", "m1", 1, "hello", "hi"), jrec("gone", "th-g", "m9", 3, "an agent no longer in the team", "ok")} {
		if _, _, err := journal.Append(l, r); err != nil {
			t.Fatal(err)
		}
	}
	ld, err := Load(l, map[string]string{"dev": "dev", "idle": "dev"})
	if err != nil {
		t.Fatal(err)
	}
	ts := Build(ld.Records)
	if len(ts) != 3 {
		t.Fatalf("threads %+v", ts)
	}
	by := map[string]Thread{}
	for _, th := range ts {
		by[th.ID] = th
	}
	if th := by["th-1"]; th.State != StateArchived || th.Turns != 1 || th.FirstMessage != "hello" {
		t.Errorf("th-1 %+v", th)
	}
	if by["th-2"].State != StateCurrent || by["th-g"].Agent != "gone" {
		t.Errorf("threads %+v", ts)
	}
}
