package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/reap"
)

// With the team stopped, a command one of its agents runs — a batty shim
// carrying the project's mark among its parents — cannot pause, resume,
// reset, cancel, stop or prune through the project's files: each is
// refused, and nothing changes. Status still answers. Below the shim of
// another project's agent (an agent running batty's own tests, say) the
// commands act for this project's human.
func TestOfflineCommandsRefuseTheTeamsAgents(t *testing.T) {
	dir, l := writeTeam(t)
	m, err := openBox(t, l, "engineer-1").Deliver(inbox.Message{From: "human", To: "engineer-1", Body: "keep me"})
	if err != nil {
		t.Fatal(err)
	}
	ours := []string{reap.MarkEnv + "=" + l.Dir}
	for _, args := range [][]string{{"pause"}, {"resume"}, {"reset", "engineer-1"}, {"cancel", m.ID}, {"stop"}} {
		out, errOut, code := runUnderShims(t, dir, ours, []string{"engineer-1"}, args...)
		if code != 1 || !strings.Contains(errOut, `refused: this command runs inside agent "engineer-1"'s sandbox (its batty shim, pid `) ||
			!strings.Contains(errOut, "only the human may") {
			t.Fatalf("%s below the agent's shim: exit %d\n%s%s", args[0], code, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(l.Dir, "state", "dispatch.json")); !os.IsNotExist(err) {
		t.Fatalf("a refused pause wrote the dispatch gate: %v", err)
	}
	if _, where, err := openBox(t, l, "engineer-1").Get(m.ID); err != nil || where != "new" {
		t.Fatalf("the message after a refused cancel: %s, %v", where, err)
	}
	if out, errOut, code := runUnderShims(t, dir, ours, []string{"engineer-1"}, "status"); code != 0 {
		t.Fatalf("status below the agent's shim: exit %d\n%s%s", code, out, errOut)
	}
	// Another project's agent: this project's commands are its human's.
	theirs := []string{reap.MarkEnv + "=/elsewhere/.batty"}
	if out, errOut, code := runUnderShims(t, dir, theirs, []string{"engineer-1"}, "pause"); code != 0 || !strings.Contains(out, "dispatch paused") {
		t.Fatalf("pause below another project's agent: exit %d\n%s%s", code, out, errOut)
	}
}
