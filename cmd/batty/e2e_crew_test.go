package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
)

// battyCommandRE finds the batty command in an agent's instructions, as a
// model reads it there (shim.CrewInstructions).
var battyCommandRE = regexp.MustCompile(`(?m)^Your batty command: (.+)$`)

// Agents reach each other with a real model's tool calls: the model calls
// exec_command without "login": false, so Codex runs the command in a
// login shell, whose profile (a scratch HOME's) resets PATH; batty is on no
// PATH. The architect's command runs batty by the path its developer
// instructions give; the message reaches the engineer, who runs a turn on
// it. In that same shell plain `batty` is not found — what agents ran
// before. An agent cannot pose as the human: BATTY_AGENT=human is ignored
// below its shim, and --from human is refused.
func TestE2EAgentsReachEachOtherFromALoginShell(t *testing.T) {
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	login := t.TempDir()
	for _, f := range []string{".bash_profile", ".profile"} {
		if err := os.WriteFile(filepath.Join(login, f), []byte("export PATH=/usr/bin:/bin\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &teamRun{t: t, bin: buildBatty(t), dir: t.TempDir(), mark: fmt.Sprintf("e2e-crew-%d", time.Now().UnixNano()),
		env: []string{"HOME=" + login}}
	if dir := filepath.Dir(r.bin); strings.Contains(":"+os.Getenv("PATH")+":", ":"+dir+":") {
		t.Fatalf("test setup: batty's directory %s is on PATH", dir)
	}
	r.writeArchitectAndEng("crew", "ROLE-ARCHITECT", "ROLE-ENG", codexBin, home)

	// The model: the architect, on the human's message, runs one command
	// through the shell tool as a real model does; the engineer answers.
	srv.Handle(func(req codextest.Request) codextest.Reply {
		var dev string
		for _, m := range req.Messages {
			if m.Role == "developer" {
				dev += m.Text + "\n"
			}
		}
		switch {
		case req.FollowUp:
			return codextest.ShellDoneReply(req)
		case strings.Contains(dev, "ROLE-ARCHITECT") && strings.Contains(req.LastUserText(), "[[go]]"):
			m := battyCommandRE.FindStringSubmatch(dev)
			if m == nil {
				return codextest.TextReply("NO-BATTY-COMMAND-IN-MY-INSTRUCTIONS")
			}
			b := m[1]
			cmd := "command -v batty || echo NO-BATTY-ON-PATH; echo PATH=$PATH; " +
				b + " send eng 'hello from the architect' && " +
				"BATTY_AGENT=human " + b + " send eng 'posing as the human'; " +
				"BATTY_AGENT=human " + b + " send --from human eng 'posing harder'; echo FROM-HUMAN-EXIT=$?"
			return codextest.Reply{Shell: cmd, ShellArgs: map[string]any{"yield_time_ms": 30000}}
		case strings.Contains(dev, "ROLE-ENG"):
			return codextest.TextReply("ENG-GOT-IT")
		}
		return codextest.TextReply("OK")
	})

	t.Cleanup(func() {
		r.batty("stop", "--timeout", "2s")
		codextest.AssertNoMarked(t, r.mark)
	})
	r.must("start", "--no-tmux")
	r.must("send", "architect", "reach the engineer [[go]]")
	r.waitStatus("the engineer's turns on both messages", func(st control.Status) bool {
		return agentStatus(st, "architect").TurnsCompleted >= 1 && agentStatus(st, "eng").TurnsCompleted >= 2
	})

	// The command ran in a login shell with PATH reset, where plain
	// `batty` is not found.
	var out string
	for _, req := range srv.Requests() {
		if req.FollowUp {
			out += strings.Join(req.ToolOutputs, "\n")
		}
	}
	for _, want := range []string{"NO-BATTY-ON-PATH", "PATH=/usr/bin:/bin\n", "queued ", `--from "human": this command runs inside agent "architect"`, "FROM-HUMAN-EXIT=2"} {
		if !strings.Contains(out, want) {
			t.Errorf("the architect's command output lacks %q:\n%s", want, out)
		}
	}

	// Both messages reached the engineer, from the architect: the one that
	// posed as the human too.
	var msgs []listedMessage
	if err := json.Unmarshal([]byte(r.must("inbox", "eng", "--json")), &msgs); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range msgs {
		got[m.Body] = m.From
	}
	if got["hello from the architect"] != "architect" || got["posing as the human"] != "architect" || len(msgs) != 2 {
		t.Fatalf("the engineer's messages: %+v", msgs)
	}

	// The engineer's final answers are its replies: each reaches the
	// architect's inbox in reply to the message it answers (though the
	// engineer sent nothing), the architect runs one turn on each, and its
	// answers to them go to no one: the engineer runs nothing more.
	r.waitStatus("the architect's turns on both replies", func(st control.Status) bool {
		return agentStatus(st, "architect").TurnsCompleted >= 3
	})
	r.must("send", "eng", "sentinel")
	r.waitStatus("the engineer's sentinel", func(st control.Status) bool {
		return agentStatus(st, "eng").TurnsCompleted >= 3
	})
	sent := map[string]bool{}
	for _, m := range msgs {
		sent[m.ID] = true
	}
	var arch []listedMessage
	if err := json.Unmarshal([]byte(r.must("inbox", "architect", "--json")), &arch); err != nil {
		t.Fatal(err)
	}
	replies := 0
	for _, m := range arch {
		if m.InReplyTo == "" {
			continue
		}
		replies++
		if !sent[m.InReplyTo] || m.From != "eng" || m.Body != "ENG-GOT-IT" || m.State != "done" {
			t.Errorf("a reply in the architect's inbox: %+v", m)
		}
	}
	if replies != 2 || len(arch) != 3 {
		t.Fatalf("the architect's inbox: %d replies of %d messages, want 2 of 3: %+v", replies, len(arch), arch)
	}
	var eng []listedMessage
	if err := json.Unmarshal([]byte(r.must("inbox", "eng", "--json")), &eng); err != nil {
		t.Fatal(err)
	}
	if len(eng) != 3 {
		t.Fatalf("the engineer ran %d messages, want 3 (no reply bounced back): %+v", len(eng), eng)
	}
	// The model saw that a reply is one, and to which message.
	seen := false
	for _, req := range srv.Requests() {
		for id := range sent {
			if strings.Contains(req.LastUserText(), "reply to "+id) {
				seen = true
			}
		}
	}
	if !seen {
		t.Error("no request showed the model a reply's header (\"reply to <id>\")")
	}
}
