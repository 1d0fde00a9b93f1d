package main

import (
	"os"
	"strings"
	"testing"
)

// A mistyped command gets "did you mean", with the usage exit status.
func TestMistypedCommandSuggests(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stauts"}, `batty: unknown command "stauts"; did you mean start or status?`},
		{[]string{"sned", "architect", "hi"}, `batty: unknown command "sned"; did you mean send?`},
		{[]string{"vaildate"}, `batty: unknown command "vaildate"; did you mean validate?`},
		{[]string{"completion", "bsh"}, `batty completion: unknown command "bsh"; did you mean bash`},
		{[]string{"help", "lgos"}, `batty help: unknown help topic "lgos"; did you mean logs?`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runBattyIn(t, t.TempDir(), nil, "", tc.args...)
			if code != 2 || out != "" || !strings.HasPrefix(errOut, tc.want) {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s\nwant prefix: %s", code, out, errOut, tc.want)
			}
		})
	}
	// Nothing close: no suggestion.
	_, errOut, code := runBattyIn(t, t.TempDir(), nil, "", "frobnicate")
	if code != 2 || strings.Contains(errOut, "did you mean") {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
}

// reset and resume with a name that is not an agent list the agents, as
// send does, and change nothing.
func TestResetAndResumeListTheAgents(t *testing.T) {
	dir, l := writeTeam(t)
	for _, args := range [][]string{{"reset", "enginer-1"}, {"resume", "enginer-1"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, code := runBattyIn(t, dir, nil, "", args...)
			if code != 1 || out != "" || !strings.Contains(errOut, `agent "enginer-1" in team "demo"`) ||
				!strings.Contains(errOut, "agents: architect, manager, engineer-1, engineer-2") {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
		})
	}
	if _, err := os.Lstat(l.Dir); err == nil {
		t.Fatalf("a refused reset or resume created %s", l.Dir)
	}
}
