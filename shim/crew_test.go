package shim

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

// The section names the agent, spells the batty command by its absolute
// path (quoted for the shell when needed) and states the reply rule.
func TestCrewInstructions(t *testing.T) {
	for _, c := range []struct {
		name, batty, project string
		want, not            []string
	}{
		{"plain path", "/opt/batty/bin/batty", "/src/app",
			[]string{"You are engineer-1, an agent of a team run by batty (project /src/app).", "\n" + battyLine + "/opt/batty/bin/batty\n",
				"  /opt/batty/bin/batty send <name> \"<message>\"", "$BATTY_BIN", "IS your reply", "Never use batty send to answer whoever wrote to you",
				`"reply to <id>"`, "goes to no one", "only to start a conversation",
				"/opt/batty/bin/batty search <words>", "/opt/batty/bin/batty threads show <thread>"}, nil},
		{"path with a space and a quote", "/home/a b/it's/batty", "",
			[]string{"\n" + battyLine + `'/home/a b/it'\''s/batty'` + "\n", "team run by batty. "}, []string{"(project"}},
		{"unknown path", "", "/src/app", []string{"\n" + battyLine + `"$BATTY_BIN"` + "\n", `"$BATTY_BIN" send <name>`}, nil},
		{"path with a line break", "/tmp/x\ny/batty", "/src/a\nb", []string{"\n" + battyLine + `"$BATTY_BIN"` + "\n"}, []string{"x\ny", "(project"}},
		{"path too long to spell out", "/" + strings.Repeat("d", maxQuotedPath) + "/batty", "", []string{battyLine + `"$BATTY_BIN"`}, nil},
	} {
		got := CrewInstructions("engineer-1", c.batty, c.project)
		if !strings.HasPrefix(got, crewOpen+"\n") {
			t.Errorf("%s: the section does not open with its marker:\n%s", c.name, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: section lacks %q:\n%s", c.name, w, got)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: section has %q:\n%s", c.name, n, got)
			}
		}
	}
}

// The section always fits the room codex.CheckInstructions keeps for it,
// whatever the path: the longest role instructions plus the section still
// make a valid codex argument.
func TestCrewInstructionsFitTheReserve(t *testing.T) {
	agent := strings.Repeat("a", 40) // team.MaxNameLen
	for _, path := range []string{
		"/" + strings.Repeat(`"\`, maxQuotedPath/2-1), // every byte escaped twice over
		"/" + strings.Repeat("'", maxQuotedPath-1),    // quoting quadruples a quote
		"/" + strings.Repeat("\x01", 4000),
		"",
	} {
		branch := "batty/" + agent
		got := CrewInstructionsIn(agent, path, path, Worktree{Branch: branch, Base: strings.Repeat("b", maxBranchText-len(branch))})
		if n := len(codex.TOMLString(got)); n > codex.InstructionsReserve {
			t.Errorf("section for a %d-byte path takes %d bytes escaped, more than the %d kept for it", len(path), n, codex.InstructionsReserve)
		}
	}
	overhead := len(`developer_instructions=""`)
	role := strings.Repeat("x", codex.MaxArgLen-1-codex.InstructionsReserve-overhead)
	if err := codex.CheckInstructions(role); err != nil {
		t.Fatalf("test setup: %v", err)
	}
	o, err := execOptions(shimconfig.Config{Agent: agent, Instructions: role, Env: []string{agentenv.Dir + "=/p/.batty"}}, "/"+strings.Repeat(`"`, maxQuotedPath-1))
	if err != nil || !strings.HasPrefix(o.DeveloperInstructions, role+"\n\n"+crewOpen) {
		t.Fatalf("the longest role instructions with the section: %v", err)
	}
}

// Only an agent of a team (the daemon gives it BATTY_DIR) gets the
// section; chat and fanout agents get their instructions as they are.
func TestWithCrew(t *testing.T) {
	if got := withCrew("ROLE", "eng", "/b/batty", "", "", Worktree{}); got != "ROLE" {
		t.Errorf("without a team: %q", got)
	}
	if got := withCrew("ROLE", "eng", "/b/batty", "/state/app-1", "/src/app", Worktree{}); got != "ROLE\n\n"+CrewInstructions("eng", "/b/batty", "/src/app") {
		t.Errorf("with a team: %q", got)
	}
	if got := withCrew("", "eng", "/b/batty", "/state/app-1", "/src/app", Worktree{}); got != CrewInstructions("eng", "/b/batty", "/src/app") {
		t.Errorf("no role instructions: %q", got)
	}
	wt := withCrew("", "eng", "/b/batty", "/state/app-1", "/src/app", Worktree{Branch: "batty/eng", Base: "main"})
	for _, want := range []string{"own git worktree, on branch batty/eng, made from main", "run /b/batty merge eng", "batty commits everything you changed"} {
		if !strings.Contains(wt, want) {
			t.Errorf("a worktree agent's section lacks %q:\n%s", want, wt)
		}
	}
	if strings.Contains(CrewInstructions("eng", "/b/batty", "/src/app"), "worktree") {
		t.Error("a shared agent's section speaks of a worktree")
	}
	if got := stateDirOf([]string{"A=1", "BATTY_DIR=/x", "BATTY_DIRX=/z", "BATTY_DIR=/y"}); got != "/y" {
		t.Errorf("stateDirOf = %q", got)
	}
}

func TestChooseBatty(t *testing.T) {
	have := map[string]bool{"/usr/bin/batty": true, "/opt/batty": true}
	usable := func(p string) bool { return have[p] }
	for _, c := range []struct{ exe, arg0, want string }{
		{"/usr/bin/batty", "/opt/batty", "/usr/bin/batty"},
		// Replaced while running: the path names the replacement.
		{"/usr/bin/batty (deleted)", "batty", "/usr/bin/batty"},
		// Removed: the path the parent started it by.
		{"/gone/batty (deleted)", "/opt/batty", "/opt/batty"},
		{"", "/opt/batty", "/opt/batty"},
		{"/usr/bin/../bin/batty", "", "/usr/bin/batty"},
		// Nothing usable: the running binary's path, else nothing.
		{"/gone/batty", "/also/gone", "/gone/batty"},
		{"", "batty", ""},
		{"relative/batty", "", ""},
	} {
		if got := chooseBatty(c.exe, c.arg0, usable); got != c.want {
			t.Errorf("chooseBatty(%q, %q) = %q, want %q", c.exe, c.arg0, got, c.want)
		}
	}
}

// A reply says whose reply it is, to which message, and that the turn's
// final answer goes to no one; any other message says the final answer is
// the reply and must not be sent with batty send.
func TestFormatPromptReply(t *testing.T) {
	got := FormatPrompt(protocol.SendMessage{ID: "r1", From: "engineer-1", Body: "done", Attempt: 1, InReplyTo: "t1"})
	for _, w := range []string{"--- batty message r1 from engineer-1, reply to t1 ---\n", "This is engineer-1's reply to your message.", "goes to no one", "send a new message with batty send"} {
		if !strings.Contains(got, w) {
			t.Errorf("reply prompt lacks %q:\n%s", w, got)
		}
	}
	got = FormatPrompt(protocol.SendMessage{ID: "t1", From: "architect", Body: "task", Attempt: 2, InReplyTo: "t0"})
	if !strings.HasPrefix(got, "--- batty message t1 from architect, reply to t0 (redelivered, attempt 2") {
		t.Errorf("redelivered reply:\n%s", got)
	}
	for _, from := range []string{"architect", "human", ""} {
		got := FormatPrompt(protocol.SendMessage{ID: "t1", From: from, Body: "task"})
		who := from
		if who == "" {
			who = team.Human
		}
		if !strings.Contains(got, "Your final answer of this turn is your reply: batty delivers it to "+who+". Do not batty send it.\n") ||
			strings.Contains(got, "reply to") || strings.Contains(got, "run: batty send") {
			t.Errorf("message from %q:\n%s", from, got)
		}
	}
}
