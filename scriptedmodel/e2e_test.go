package scriptedmodel_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/scriptedmodel"
	"github.com/battyhq/batty/shim"
)

// cliTurn runs one turn of the real Codex CLI against s as an agent with
// the standing instructions prompt, working on msg, with a stand-in `batty`
// on PATH that records its arguments. It returns the turn's final answer
// and what the stand-in batty was asked, one line per call.
func cliTurn(t *testing.T, s *scriptedmodel.Server, agent, prompt, dir string, msg protocol.SendMessage) (string, []string) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "codex-home")
	if err := scriptedmodel.WriteCodexHome(home, s.URL); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	script := "#!/bin/sh\nprintf '%s|%s\\n' \"$BATTY_AGENT\" \"$*\" | tr '\\n' ' ' >> " + calls + "\necho >> " + calls + "\necho queued\n"
	if err := os.WriteFile(filepath.Join(bin, "batty"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := codextest.Start(t, codextest.Invocation{
		Bin:    codextest.CodexNative(t),
		Home:   home,
		Dir:    dir,
		Prompt: shim.FormatPrompt(msg),
		Args: []string{"-s", "danger-full-access", "-c", `approval_policy="never"`,
			"-c", "developer_instructions=" + codex.TOMLString(prompt)},
		Env: []string{"BATTY_AGENT=" + agent, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code, err := p.Wait(ctx); err != nil || code != 0 {
		t.Fatalf("codex exit %d, %v\nstderr:\n%s", code, err, p.Stderr())
	}
	var answer string
	for _, ev := range p.Events() {
		if ev.Type == "turn.failed" || ev.Type == "error" {
			t.Fatalf("codex reported %s", ev.Raw)
		}
		if ev.Type == "item.completed" && ev.Item != nil && ev.Item.Type == "agent_message" {
			answer = ev.Item.Text
		}
	}
	b, _ := os.ReadFile(calls)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return answer, lines
}

// The real Codex CLI plays the script's turns against the server: it runs
// the commands the script asks for (batty sends, the engineer's task in its
// directory, with BATTY_AGENT set) and ends each turn with the scripted
// answer.
func TestRealCodexPlaysTheScript(t *testing.T) {
	codextest.Codex(t) // skip, or fail with CI=true, without the CLI
	sc := scriptedmodel.DemoScript()
	s, err := scriptedmodel.Start(sc, scriptedmodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	answer, calls := cliTurn(t, s, "architect", sc.ArchitectPrompt, t.TempDir(), protocol.SendMessage{ID: "g1", From: "human", Body: scriptedmodel.Goal})
	wantCalls := []string{
		"architect|send engineer-1 " + sc.Tasks[0].Ask,
		"architect|send engineer-2 " + sc.Tasks[1].Ask,
	}
	if strings.Join(calls, "\n") != strings.Join(wantCalls, "\n") {
		t.Fatalf("the architect ran\n%s\nwant\n%s", strings.Join(calls, "\n"), strings.Join(wantCalls, "\n"))
	}
	if !strings.Contains(answer, "handed them to engineer-1 and engineer-2") {
		t.Fatalf("architect's answer %q", answer)
	}

	work := t.TempDir()
	task := sc.Tasks[0]
	answer, calls = cliTurn(t, s, task.Engineer, sc.EngineerPrompt, work, protocol.SendMessage{ID: "t1", From: "architect", Body: task.Ask})
	greeting, err := os.ReadFile(filepath.Join(work, task.File))
	if err != nil || !strings.Contains(string(greeting), "Hello from engineer-1") {
		t.Fatalf("%s: %q, %v", task.File, greeting, err)
	}
	if len(calls) != 1 || !strings.HasPrefix(calls[0], "engineer-1|send architect I wrote greeting.txt; my command printed:") || !strings.Contains(calls[0], "Hello from engineer-1") {
		t.Fatalf("engineer-1 reported %q", calls)
	}
	if !strings.Contains(answer, "greeting.txt is written") {
		t.Fatalf("engineer-1's answer %q", answer)
	}
}
