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

// loginHome returns a scratch HOME whose login profile resets PATH, as
// /etc/profile does on Debian and Ubuntu: in a login shell there, only
// the system's directories are on PATH.
func loginHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for _, f := range []string{".bash_profile", ".profile"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("export PATH=/usr/bin:/bin\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// cliTurn runs one turn of the real Codex CLI against s as an agent with
// the standing instructions prompt followed by batty's section, working on
// msg, the way the shim runs it. The batty of the section is a stand-in
// that records its arguments and the PATH it ran with; it is on no PATH
// (its directory's name holds a space, so the section quotes it), and
// codex runs commands in a login shell whose profile resets PATH. It
// returns the turn's final answer and what the stand-in batty was asked,
// one line per call.
func cliTurn(t *testing.T, s *scriptedmodel.Server, agent, prompt, dir string, msg protocol.SendMessage) (string, []string) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "codex-home")
	if err := scriptedmodel.WriteCodexHome(home, s.URL); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "batty bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(bin, "calls")
	script := "#!/bin/sh\nprintf '%s|%s\\n' \"$BATTY_AGENT\" \"$*\" | tr '\\n' ' ' >> '" + calls + "'\necho >> '" + calls + "'\n" +
		"echo \"$PATH\" > '" + calls + ".path'\necho queued\n"
	batty := filepath.Join(bin, "batty")
	if err := os.WriteFile(batty, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	instructions := prompt + "\n\n" + shim.CrewInstructions(agent, batty, dir)
	p := codextest.Start(t, codextest.Invocation{
		Bin:    codextest.CodexNative(t),
		Home:   home,
		Dir:    dir,
		Prompt: shim.FormatPrompt(msg),
		Args: []string{"-s", "danger-full-access", "-c", `approval_policy="never"`,
			"-c", "developer_instructions=" + codex.TOMLString(instructions)},
		Env: []string{"BATTY_AGENT=" + agent, "HOME=" + loginHome(t)},
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
	if len(lines) > 0 {
		// The command ran in a login shell: its profile reset PATH.
		if path, _ := os.ReadFile(calls + ".path"); strings.TrimSpace(string(path)) != "/usr/bin:/bin" {
			t.Fatalf("batty ran with PATH %q, not in the login shell of the scratch HOME", path)
		}
	}
	return answer, lines
}

// The real Codex CLI plays the script's turns against the server: it runs
// the commands the script asks for (batty sends by the absolute path of
// the instructions, in a login shell whose profile resets PATH; the
// engineer's task in its directory, with BATTY_AGENT set) and ends each
// turn with the scripted answer, the engineer's being its report.
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
	if len(calls) != 0 {
		t.Fatalf("engineer-1 ran batty (its final answer is its report): %q", calls)
	}
	if !strings.HasPrefix(answer, "I wrote greeting.txt; my command printed:") || !strings.Contains(answer, "Hello from engineer-1") {
		t.Fatalf("engineer-1's answer %q", answer)
	}
}
