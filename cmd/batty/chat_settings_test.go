package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
)

// --instructions-file reaches the model on every turn; --env reaches codex.
func TestChatInstructionsAndEnv(t *testing.T) {
	bin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	file := filepath.Join(t.TempDir(), "role.md")
	if err := os.WriteFile(file, []byte("\nCHAT-ROLE-PROMPT: answer tersely.\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBatty(t, nil, "one [[mock:reply A]]\ntwo [[mock:reply B]]\n",
		"chat", "--codex-bin", bin, "--cwd", t.TempDir(), "--env", "CODEX_HOME="+home, "--instructions-file", file)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2 (codex did not get CODEX_HOME from --env?)", len(reqs))
	}
	for _, r := range reqs {
		if !strings.Contains(strings.Join(r.InputTexts, "\n"), "developer: CHAT-ROLE-PROMPT: answer tersely.") {
			t.Errorf("request %d lacks the instructions as a developer message", r.Seq)
		}
	}
}

// Instructions too large for codex's command line are refused before
// anything starts, naming the file and the limit.
func TestChatRefusesInstructionsTooLargeForCodex(t *testing.T) {
	file := filepath.Join(t.TempDir(), "huge.md")
	if err := os.WriteFile(file, []byte(strings.Repeat("x", 300<<10)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBatty(t, nil, "hi\n", "chat", "--codex-bin", "/nonexistent/codex", "--instructions-file", file)
	if code != 1 || out != "" || !strings.Contains(errOut, file) || !strings.Contains(errOut, "131072") || !strings.Contains(errOut, "MAX_ARG_STRLEN") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
