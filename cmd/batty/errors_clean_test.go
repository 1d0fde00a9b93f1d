package main

import (
	"strings"
	"testing"
)

// TestErrorsAreCleaned: the error batty ends with may quote what it read —
// here a path given on the command line, elsewhere codex's output or a
// file: an escape sequence or a bidirectional control in it never reaches
// the terminal raw.
func TestErrorsAreCleaned(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := runBattyIn(t, dir, nil, "", "status", "--team", dir+"/x\x1b]0;pwned\x07\u202e/team.yaml")
	if code != 1 || !strings.HasPrefix(errOut, "batty: ") || !strings.Contains(errOut, `/x\u202e/team.yaml`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	checkTerminalSafe(t, "the error", errOut, false)
}
