package orchestrator

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/inbox"
)

func TestAnswerFor(t *testing.T) {
	isAgent := func(name string) bool { return name == "arch" || name == "eng" }
	done := inbox.Outcome{Status: inbox.StatusCompleted, Reply: "the answer", Agent: "eng"}
	failed := inbox.Outcome{Status: inbox.StatusFailed, Failure: "server_error", Error: "boom", Agent: "eng"}
	rejected := inbox.Outcome{Status: inbox.StatusRejected, Error: "arch may not message eng (talks_to)", Agent: "eng"}
	empty := inbox.Outcome{Status: inbox.StatusCompleted, Reply: " \n", Agent: "eng"}
	huge := inbox.Outcome{Status: inbox.StatusCompleted, Reply: strings.Repeat("é", maxAgentReply), Agent: "eng"}
	for _, tc := range []struct {
		name  string
		m     inbox.Message
		o     inbox.Outcome
		owed  bool
		to    string
		body  string // exact, or a prefix with a trailing "…"
		clips bool
	}{
		{"human asks", inbox.Message{ID: "m1", From: "human"}, done, true, "human", "the answer", false},
		{"agent asks", inbox.Message{ID: "m1", From: "arch"}, done, true, "arch", "the answer", false},
		{"a reply is answered by no one", inbox.Message{ID: "m1.reply", From: "arch", InReplyTo: "m0"}, done, false, "", "", false},
		{"a reply from the human side is not answered either", inbox.Message{ID: "m1", From: "human", InReplyTo: "m0"}, done, false, "", "", false},
		{"an unknown sender gets nothing", inbox.Message{ID: "m1", From: "ghost"}, done, false, "", "", false},
		{"the human hears of a failed message and why", inbox.Message{ID: "m1", From: "human"}, failed, true, "human", "[batty] your message m1 to eng ended failed (server_error) without an answer: boom…", false},
		{"the human hears nothing of a message it cancelled", inbox.Message{ID: "m1", From: "human"}, inbox.Outcome{Status: inbox.StatusCancelled, Agent: "eng"}, false, "", "", false},
		{"an agent hears of its failed message", inbox.Message{ID: "m1", From: "arch"}, failed, true, "arch", "[batty] your message m1 to eng ended failed (server_error) without an answer: boom…", false},
		{"an agent hears of its refused message", inbox.Message{ID: "m1", From: "arch"}, rejected, true, "arch", "[batty] your message m1 to eng ended rejected without an answer: arch may not message eng (talks_to)…", false},
		{"an empty answer to the human", inbox.Message{ID: "m1", From: "human"}, empty, true, "human", NoAnswer, false},
		{"an empty answer to an agent", inbox.Message{ID: "m1", From: "arch"}, empty, true, "arch", NoAnswer, false},
		{"a huge answer is whole for the human", inbox.Message{ID: "m1", From: "human"}, huge, true, "human", huge.Reply, false},
		{"a huge answer is cut for an agent", inbox.Message{ID: "m1", From: "arch"}, huge, true, "arch", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, owed := answerFor(tc.m, tc.o, isAgent)
			if owed != tc.owed {
				t.Fatalf("owed %v, want %v", owed, tc.owed)
			}
			if !owed {
				return
			}
			if r.To != tc.to || r.From != tc.o.Agent || r.InReplyTo != tc.m.ID || r.ID != "" {
				t.Fatalf("reply %+v", r)
			}
			switch {
			case tc.clips:
				if len(r.Body) > maxAgentReply || !strings.Contains(r.Body, "batty inbox eng --full m1") || !strings.HasPrefix(tc.o.Reply, r.Body[:100]) {
					t.Fatalf("cut reply: %d bytes, ends %q", len(r.Body), r.Body[len(r.Body)-120:])
				}
			case strings.HasSuffix(tc.body, "…"):
				if !strings.HasPrefix(r.Body, strings.TrimSuffix(tc.body, "…")) {
					t.Fatalf("body %q, want it to start %q", r.Body, tc.body)
				}
			case r.Body != tc.body:
				t.Fatalf("body %.80q, want %.80q", r.Body, tc.body)
			}
		})
	}
}
