package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDiffCleansOnATerminal: an agent's file holds an OSC 52 (the
// clipboard), an OSC 0 (the window title), a screen erase, a CR and
// bidirectional controls; `batty diff` on a terminal shows none of them
// raw (each removed or shown as an escape) and keeps one shown line per
// line of the diff, while into a pipe it writes git's diff byte for byte,
// which git apply takes.
func TestDiffCleansOnATerminal(t *testing.T) {
	dir, l := newGitProject(t)
	env := gitTestEnv(dir)
	makeWorktree(t, dir, l, "engineer-1", hostile)

	cmd := battyCommand(t, dir, append([]string{"NO_COLOR="}, env...), "diff", "engineer-1")
	// The terminal turns each "\n" into "\r\n" (ONLCR); a lone CR is the
	// diff's own.
	out := strings.ReplaceAll(string(outputOnTerminal(t, cmd)), "\r\n", "\n")
	checkTerminalSafe(t, "diff on a terminal", out, true)
	for _, want := range []string{
		"diff --git a/notes.txt b/notes.txt",
		"\n+boom" + `\x0dfake\x08\x08` + "\n",
		"\n+next " + `\u202eevil\u2066\u200f\u061c` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff on a terminal lacks %q:\n%s", want, out)
		}
	}

	piped, errOut, code := runBattyIn(t, dir, env, "", "diff", "engineer-1")
	if code != 0 || !strings.Contains(piped, "\n+"+strings.ReplaceAll(hostile, "\n", "\n+")+"\n") {
		t.Fatalf("diff into a pipe: exit %d, not git's bytes:\n%q\nstderr %s", code, piped, errOut)
	}
	patch := dir + "/agent.patch"
	if err := os.WriteFile(patch, []byte(piped), 0o600); err != nil {
		t.Fatal(err)
	}
	check := exec.Command("git", "-C", dir, "apply", "--check", patch)
	check.Env = append(os.Environ(), env...)
	if msg, err := check.CombinedOutput(); err != nil || len(bytes.TrimSpace(msg)) > 0 {
		t.Fatalf("git apply --check of the piped diff: %v\n%s", err, msg)
	}
}
