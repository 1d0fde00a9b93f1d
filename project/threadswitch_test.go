package project

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
)

func TestAgentStateRestore(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	base := func() AgentState {
		return AgentState{Name: "eng", ThreadID: "cur", ThreadUsage: protocol.Usage{Input: 9}, CodexHome: "/h2", ForkFrom: "x",
			Handoff:         &PendingHandoff{Reason: "full"},
			ArchivedThreads: []ArchivedThread{{ID: "a", Reason: "reset", Usage: protocol.Usage{Input: 5}, Home: "/h1"}, {ID: "b", Reason: "reset"}}}
	}
	s := base()
	got, err := s.Restore("a", "set aside", at)
	if err != nil || got.ID != "a" || got.Home != "/h1" {
		t.Fatalf("Restore = %+v, %v", got, err)
	}
	if s.ThreadID != "a" || s.ThreadUsage.Input != 5 || s.ForkFrom != "" || s.Handoff != nil || len(s.ArchivedThreads) != 2 ||
		s.ArchivedThreads[0].ID != "b" || s.ArchivedThreads[1].ID != "cur" || s.ArchivedThreads[1].Usage.Input != 9 || s.ArchivedThreads[1].Home != "/h2" {
		t.Fatalf("after Restore: %+v", s)
	}
	for _, id := range []string{"", "cur", "zzz"} {
		s := base()
		if _, err := s.Restore(id, "x", at); err == nil || s.ThreadID != "cur" || len(s.ArchivedThreads) != 2 {
			t.Errorf("Restore(%q) = %v, state %+v", id, err, s)
		}
	}
	cur := base()
	if _, err := cur.Restore("cur", "x", at); err == nil || !strings.Contains(err.Error(), "current") {
		t.Errorf("restore of the current thread: %v", err)
	}

	s = base()
	s.Fork("b", "set aside for a fork", at)
	if s.ThreadID != "" || s.ForkFrom != "b" || s.Handoff != nil || len(s.ArchivedThreads) != 3 || s.ArchivedThreads[2].ID != "cur" {
		t.Fatalf("after Fork: %+v", s)
	}
}
