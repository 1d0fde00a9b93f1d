package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A role prompt too large to reach Codex (it travels as one command-line
// argument) is refused by validate, and so by start, naming the file and
// the limit — never a spawn failure while the team runs.
func TestValidateRefusesAPromptTooLargeForCodex(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "prompts"), 0o755); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("You are the architect. Read the design notes first.\n", 300<<10/52+1) // > 300 KiB
	for name, text := range map[string]string{"big.md": big, "ok.md": "You build.\n"} {
		if err := os.WriteFile(filepath.Join(dir, "prompts", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	team := "name: demo\nroles:\n  - name: architect\n    prompt: prompts/big.md\n  - name: engineer\n    prompt: prompts/ok.md\n"
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(team), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runBattyIn(t, dir, nil, "", "stop", "--timeout", "1s") }) // in case start ran it
	for _, cmd := range []string{"validate", "start"} {
		out, errOut, code := runBattyIn(t, dir, nil, "", cmd)
		if code != 1 || strings.Contains(out, "running") {
			t.Fatalf("%s: exit %d, want 1\nstdout: %s\nstderr: %s", cmd, code, out, errOut)
		}
		for _, want := range []string{`team.yaml:4:13: prompt file "prompts/big.md" is too large`, "developer_instructions argument", "at most 126975 allowed", "131071 bytes", "MAX_ARG_STRLEN = 131072", "batty keeps 4096"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", cmd, want, errOut)
			}
		}
		if strings.Contains(errOut, "ok.md") {
			t.Errorf("%s: the small prompt was refused too:\n%s", cmd, errOut)
		}
	}
}
