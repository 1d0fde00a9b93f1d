package shim

import (
	"os"
	"strings"
	"testing"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/shellword"
	"github.com/battyhq/batty/shim/shimconfig"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
)

// largestInstructions returns multi-line role instructions whose
// developer_instructions argument is exactly as long as a role's may be
// (as long as Linux allows one argument to be, less the room batty keeps
// for its own section), starting with begin and ending with end.
func largestInstructions(t *testing.T, begin, end string) string {
	t.Helper()
	room := codex.MaxArgLen - codex.InstructionsReserve - 1 - len("developer_instructions=") - len(codex.TOMLString(begin+end))
	line := "Keep the design notes current; answer in short paragraphs.\n"
	esc := len(codex.TOMLString(line)) - 2 // the newline costs two bytes
	body := strings.Repeat(line, room/esc)
	body += strings.Repeat("x", room-len(codex.TOMLString(body))+2)
	text := begin + body + end
	if n := len("developer_instructions=") + len(codex.TOMLString(text)) + 1; n != codex.MaxArgLen-codex.InstructionsReserve {
		t.Fatalf("test setup: the argument takes %d bytes, want %d", n, codex.MaxArgLen)
	}
	if err := codex.CheckInstructions(text); err != nil {
		t.Fatalf("test setup: %v", err)
	}
	return text
}

// The largest role prompt batty accepts reaches the real Codex whole, on
// every turn: the first of a new thread and a resumed one, followed, for
// an agent of a team, by batty's section with the batty binary to run.
func TestE2ELargestInstructionsReachEveryTurn(t *testing.T) {
	text := largestInstructions(t, "BEGIN-ROLE-PROMPT\n", "\nEND-ROLE-PROMPT")
	h, srv := startRealShim(t, func(c *shimconfig.Config) {
		c.Instructions = text
		c.Env = append(c.Env, agentenv.Dir+"=/state/app-1", agentenv.Project+"=/src/app")
	})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	whole := text + "\n\n" + CrewInstructions("tester", self, "/src/app")
	h.send("m1", "first [[mock:reply ONE]]")
	h.expect(kAccepted, kState, kStarted, kThread)
	if tf := h.finished("m1", protocol.TurnCompleted); tf.Reply != "ONE" {
		t.Fatalf("first turn = %+v", tf)
	}
	h.expect(kState)
	h.send("m2", "second [[mock:reply TWO]]")
	if ts := h.expect(kAccepted, kState, kStarted)[2].(protocol.TurnStarted); !ts.Resume {
		t.Fatalf("second turn did not resume: %+v", ts)
	}
	if tf := h.finished("m2", protocol.TurnCompleted); tf.Reply != "TWO" {
		t.Fatalf("second turn = %+v", tf)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		found := false
		for _, m := range r.Messages {
			if m.Role == "developer" && strings.Contains(m.Text, whole) && strings.Contains(m.Text, "\n"+battyLine+shellword.Quote(self)+"\n") {
				found = true
			}
		}
		if !found {
			t.Errorf("request %d (%s) lacks the whole instructions (%d bytes) and batty's section in a developer message", r.Seq, r.Metadata["history_initialization"], len(text))
		}
	}
}
