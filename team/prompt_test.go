package team

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex"
)

// writePromptTeam writes a team whose role "a" (two instances) has the
// prompt text and returns the team file's path.
func writePromptTeam(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "team.yaml")
	if err := os.WriteFile(path, []byte("name: t\nroles:\n  - name: a\n    instances: 2\n    prompt: a.md\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The prompt's text is read at load time, trimmed, and handed to every
// agent of the role.
func TestLoadReadsThePrompt(t *testing.T) {
	cfg, err := Load(writePromptTeam(t, "\n  You build.\nCarefully.\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Roles[0].Instructions; got != "You build.\nCarefully." {
		t.Fatalf("Instructions = %q", got)
	}
	for _, a := range cfg.Agents() {
		if a.Instructions != "You build.\nCarefully." {
			t.Errorf("agent %s: Instructions = %q", a.Name, a.Instructions)
		}
	}
	if a, _ := cfg.Agent("a-2"); a.Instructions != "You build.\nCarefully." {
		t.Errorf("Agent(a-2).Instructions = %q", a.Instructions)
	}
}

// The largest prompt codex can be given loads; one byte more is refused
// with the limit named.
func TestLoadRefusesAPromptTooLargeForCodex(t *testing.T) {
	overhead := len("developer_instructions=\"\"")
	fits := strings.Repeat("x", codex.MaxArgLen-1-codex.InstructionsReserve-overhead)
	if err := codex.CheckInstructions(fits); err != nil {
		t.Fatalf("test setup: %v", err)
	}
	if _, err := Load(writePromptTeam(t, fits+"\n")); err != nil {
		t.Fatalf("a prompt at the limit: %v", err)
	}
	_, err := Load(writePromptTeam(t, fits+"x"))
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("Load = %v, want a ValidationError", err)
	}
	for _, want := range []string{`team.yaml:5:13: prompt file "a.md" is too large`, "a 126976-byte developer_instructions argument", "at most 126975 allowed", "131071 bytes", "MAX_ARG_STRLEN = 131072", "batty keeps 4096"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
