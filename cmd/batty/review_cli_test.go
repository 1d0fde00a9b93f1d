package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/control"
)

// With workspace.review: human, an agent's `batty merge` waits after
// verify: batty status and batty review show it (commits, files, verify),
// batty approve lands it, and with the team stopped approve refuses,
// naming batty start.
func TestReviewThroughTheCLI(t *testing.T) {
	dir, _ := newGitProject(t)
	writeWorktreeTeam(t, dir, "workspace:\n  base: main\n  review: human\n")
	gitIn(t, dir, "commit", "-q", "-am", "review: human")
	env := gitTestEnv(dir)
	t.Cleanup(func() { runBattyIn(t, dir, nil, "", "stop", "--timeout", "1s") })
	if out, errOut, code := runBattyIn(t, dir, env, "", "start", "--no-tmux"); code != 0 {
		t.Fatalf("start: exit %d\n%s%s", code, out, errOut)
	}
	mustSend(t, dir, nil, "", "engineer-1", "scenario:write:notes.txt=from-engineer-1")
	waitJSONStatus(t, dir, "engineer-1's turn committed", func(st control.Status) bool {
		a := agentStatus(st, "engineer-1")
		return a.Workspace != nil && a.Workspace.Ahead == 1
	})
	tip := gitIn(t, dir, "rev-parse", "batty/engineer-1")
	before := gitIn(t, dir, "rev-parse", "main")

	inAgent := append([]string{agentenv.Agent + "=engineer-1"}, env...)
	if out, errOut, code := runBattyIn(t, dir, inAgent, "", "merge", "--review", "engineer-1"); code != 1 || !strings.Contains(errOut, "--review is the human's") {
		t.Fatalf("merge --review inside an agent: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code := runBattyIn(t, dir, inAgent, "", "merge", "engineer-1")
	if code != 0 || !strings.Contains(out, "once verified it waits for the human's review") {
		t.Fatalf("the agent's merge: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	st := waitJSONStatus(t, dir, "the landing waiting for review", func(st control.Status) bool {
		return len(st.Landings) == 1 && st.Landings[0].State == "review"
	})
	if l := st.Landings[0]; l.Tip != tip || l.Onto != before || !l.Review || l.By != "engineer-1" {
		t.Fatalf("landing %+v", l)
	}
	if got := gitIn(t, dir, "rev-parse", "main"); got != before {
		t.Fatal("a landing waiting for review moved main")
	}
	table := mustBatty(t, dir, "status")
	if !regexp.MustCompile(`(?m)^[0-9a-f]{8} +engineer-1 +review +engineer-1 +\d\d:\d\d:\d\d +-\n +verified; waits for your review: batty review, then batty approve engineer-1`).MatchString(table) {
		t.Fatalf("status has no landing row waiting for review:\n%s", table)
	}
	review := mustBatty(t, dir, "review")
	for _, want := range []string{
		"engineer-1  batty/engineer-1 at " + tip[:12] + "  (request ",
		"  verify: none set (workspace.verify): merged onto main at " + before[:12],
		"  commits (1):\n    " + tip[:7] + " scenario:write:notes.txt=from-engineer-1",
		"  files (1):\n    A  notes.txt\n",
		"batty approve engineer-1 lands it",
	} {
		if !strings.Contains(review, want) {
			t.Fatalf("batty review has no %q:\n%s", want, review)
		}
	}
	if out, errOut, code := runBattyIn(t, dir, env, "", "reject", "engineer-1"); code != 2 || !strings.Contains(errOut, "--reason is required") {
		t.Fatalf("reject without a reason: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = runBattyIn(t, dir, env, "", "approve", "engineer-1")
	if code != 0 || !strings.HasPrefix(out, "approved the landing of batty/engineer-1 at "+tip[:12]) {
		t.Fatalf("approve: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	st = waitJSONStatus(t, dir, "the landing", func(st control.Status) bool {
		return len(st.Landings) == 1 && st.Landings[0].State == "landed"
	})
	if got := gitIn(t, dir, "rev-parse", "main^2"); got != tip || st.Landings[0].Approved != tip {
		t.Fatalf("main's merge holds %s, want %s (landing %+v)", got, tip, st.Landings[0])
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "from-engineer-1\n" {
		t.Fatalf("the project's checkout: %q, %v", b, err)
	}
	if out := mustBatty(t, dir, "review"); out != "no landing waits for review\n" {
		t.Fatalf("review with nothing waiting: %q", out)
	}

	mustBatty(t, dir, "stop")
	out, errOut, code = runBattyIn(t, dir, env, "", "approve", "engineer-1")
	if code != 1 || out != "" || !strings.Contains(errOut, "the team is not running") || !strings.Contains(errOut, "`batty start`") {
		t.Fatalf("approve of a stopped team: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
