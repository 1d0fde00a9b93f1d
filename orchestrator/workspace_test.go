package orchestrator

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/team"
)

// gitEnv runs git with no user or system configuration of the machine.
func gitEnv(home string) []string {
	return append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=tester", "GIT_AUTHOR_EMAIL=tester@example.invalid",
		"GIT_COMMITTER_NAME=tester", "GIT_COMMITTER_EMAIL=tester@example.invalid")
}

// git runs git in dir and returns its trimmed output, failing the test on
// an error.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = gitEnv(t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newGitProject is newProjectWith in a git repository on branch main with
// one commit (shared.txt), whose roles work in worktrees as roles says;
// workspace holds the team's workspace block (YAML lines), if any.
func newGitProject(t *testing.T, workspace, roles string) *testProject {
	t.Helper()
	p := newProjectWith(t, "timeouts:\n  shutdown: 5s\n"+workspace, roles)
	git(t, p.dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(p.dir, ".gitignore"), []byte(".batty/\nfake*\nprompts.log\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "shared.txt"), []byte("base\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	git(t, p.dir, "add", "-A")
	git(t, p.dir, "commit", "-q", "-m", "initial")
	return p
}

// sandboxOrOff runs the team's verify and setup inside Codex's sandbox
// where it works here (the real codex as the team's codex.bin; the agents
// keep the fake one, their role's), else without it, saying so.
func (p *testProject) sandboxOrOff(t testing.TB) {
	t.Helper()
	bin, err := codextest.SandboxBinary()
	if err != nil {
		t.Logf("verify and setup run without a sandbox: %v", err)
		p.cfg.Workspace.Sandbox.Off = true
		return
	}
	p.cfg.Codex.Bin = bin
}

// agentStatus is the daemon's status line of agent name.
func (r *running) agentStatus(t testing.TB, name string) control.AgentStatus {
	t.Helper()
	for _, a := range r.d.status().Agents {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no agent %s in the status", name)
	return control.AgentStatus{}
}

// A worktree agent works in its own worktree on batty/<agent>, and each
// completed turn that changed it is a commit there, with the message's id
// as a trailer: the project's checkout and the other agent's are untouched.
func TestWorktreeAgentCommitsEachTurn(t *testing.T) {
	p := newGitProject(t, "", "  - name: eng\n    instances: 2\n    workspace: worktree\n")
	r := p.start(nil)
	id := p.sendAndWait(r, "eng-1", "scenario:write:notes.txt=from-eng-1", "completed")

	wt := filepath.Join(p.layout.WorktreesDir(), "eng-1")
	if b, err := os.ReadFile(filepath.Join(wt, "notes.txt")); err != nil || string(b) != "from-eng-1\n" {
		t.Fatalf("the edit in the worktree: %q, %v", b, err)
	}
	for _, elsewhere := range []string{filepath.Join(p.dir, "notes.txt"), filepath.Join(p.layout.WorktreesDir(), "eng-2", "notes.txt")} {
		if _, err := os.Stat(elsewhere); err == nil {
			t.Errorf("the edit reached %s", elsewhere)
		}
	}
	msg := git(t, p.dir, "log", "-1", "--format=%an%n%B", "batty/eng-1")
	if !strings.HasPrefix(msg, "eng-1\nscenario:write:notes.txt=from-eng-1") || !strings.Contains(msg, "Batty-Message: "+id) {
		t.Fatalf("the turn's commit:\n%s", msg)
	}
	if s := git(t, wt, "status", "--porcelain"); s != "" {
		t.Fatalf("the worktree is left dirty:\n%s", s)
	}
	r.waitEvent(t, "the commit event", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWorkspaceCommitted && e.Message == id && !payloadOf[eventlog.WorkspaceCommitted](e).WIP
	})
	ws := r.agentStatus(t, "eng-1").Workspace
	if ws == nil || !ws.Exists || ws.Branch != "batty/eng-1" || ws.Base != "main" || ws.Ahead != 1 || ws.Behind != 0 || ws.Dirty != 0 {
		t.Fatalf("status workspace %+v", ws)
	}
	// A turn that changes nothing makes no commit.
	p.sendAndWait(r, "eng-1", "hello", "completed")
	if n := git(t, p.dir, "rev-list", "--count", "main..batty/eng-1"); n != "1" {
		t.Fatalf("%s commits ahead after a turn that changed nothing", n)
	}
}

// Status's worktree figures are not read while a turn runs: an agent
// editing its worktree mid-turn still shows what was read before the turn,
// and dirty_at says when that was (before the turn began).
func TestStatusSaysHowOldTheWorktreeFiguresAre(t *testing.T) {
	p := newGitProject(t, "", "  - name: eng\n    workspace: worktree\n")
	r := p.start(nil)
	first := p.sendAndWait(r, "eng", "scenario:write:done.txt=done", "completed")
	r.waitEvent(t, "the first turn's commit", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWorkspaceCommitted && e.Message == first
	})
	id := p.send("eng", "human", "scenario:writehang:half.txt=half-done")
	delivered := r.waitEvent(t, "the turn", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == id })
	wt := filepath.Join(p.layout.WorktreesDir(), "eng")
	waitFor(t, "the turn's edit", func() bool {
		b, _ := os.ReadFile(filepath.Join(wt, "half.txt"))
		return string(b) == "half-done\n"
	})
	ws := r.agentStatus(t, "eng").Workspace
	if ws == nil || ws.Dirty != 0 || ws.Ahead != 1 || ws.DirtyAt.IsZero() || ws.DirtyAt.After(delivered.Time) {
		t.Fatalf("status workspace %+v mid-turn: want dirty_at before the turn was delivered (%s)", ws, delivered.Time)
	}
	b, err := json.Marshal(ws)
	if err != nil || !strings.Contains(string(b), `"dirty_at":"`) {
		t.Fatalf("status --json workspace %s, %v: no dirty_at", b, err)
	}
}

// The edit of a turn cut off by a killed shim is committed as work in
// progress before the message runs again: nothing the model wrote is lost.
func TestAKilledTurnsEditIsCommittedAsWorkInProgress(t *testing.T) {
	p := newGitProject(t, "", "  - name: eng\n    workspace: worktree\n")
	r := p.start(nil)
	id := p.send("eng", "human", "scenario:writehang:half.txt=half-done")
	r.waitEvent(t, "the turn", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == id })
	wt := filepath.Join(p.layout.WorktreesDir(), "eng")
	waitFor(t, "the turn's edit", func() bool {
		b, _ := os.ReadFile(filepath.Join(wt, "half.txt"))
		return string(b) == "half-done\n"
	})
	pid := r.agentStatus(t, "eng").ShimPID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e := r.waitEvent(t, "the work-in-progress commit", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWorkspaceCommitted && e.Message == id && payloadOf[eventlog.WorkspaceCommitted](e).WIP
	})
	commit := payloadOf[eventlog.WorkspaceCommitted](e).Commit
	if got := git(t, p.dir, "show", commit+":half.txt"); got != "half-done" {
		t.Fatalf("the WIP commit holds %q", got)
	}
	if subject := git(t, p.dir, "log", "-1", "--format=%s", commit); !strings.HasPrefix(subject, "WIP: ") {
		t.Fatalf("WIP subject %q", subject)
	}
}

// Two engineers edit the same file, each on its branch: the first lands
// (base advances, the user's clean checkout with it), the second conflicts
// and leaves base as it was; its agent is told which file, and the new
// base waits merged in its worktree, the conflict markers for it to
// resolve.
func TestLandingTheFirstAndTellingTheSecondOfItsConflict(t *testing.T) {
	p := newGitProject(t, "workspace:\n  verify: test -s shared.txt\n", "  - name: eng\n    instances: 2\n    workspace: worktree\n")
	p.sandboxOrOff(t)
	r := p.start(nil)
	p.sendAndWait(r, "eng-1", "scenario:write:shared.txt=one", "completed")
	p.sendAndWait(r, "eng-2", "scenario:write:shared.txt=two", "completed")

	p.send(team.LandingBox, "human", "eng-1")
	landed := r.waitEvent(t, "eng-1 landed", func(e eventlog.Event) bool { return e.Type == eventlog.EvLanded && e.Agent == "eng-1" })
	main := git(t, p.dir, "rev-parse", "main")
	if payloadOf[eventlog.Landed](landed).Commit != main {
		t.Fatalf("landed %v, main is %s", payloadOf[eventlog.Landed](landed).Commit, main)
	}
	if b, _ := os.ReadFile(filepath.Join(p.dir, "shared.txt")); string(b) != "one\n" {
		t.Fatalf("the user's checkout was not brought along: shared.txt %q", b)
	}

	// The new base does not merge cleanly into eng-2's branch: the merge
	// waits in its worktree, conflict markers in place, and it is told.
	r.waitEvent(t, "the conflict left in eng-2's worktree", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWorkspaceConflict && e.Agent == "eng-2"
	})
	wt2 := filepath.Join(p.layout.WorktreesDir(), "eng-2")
	if b, err := os.ReadFile(filepath.Join(wt2, "shared.txt")); err != nil || !strings.Contains(string(b), "<<<<<<<") {
		t.Fatalf("eng-2's worktree has no conflict markers: %q, %v", b, err)
	}
	note := waitMessage(t, p.box("eng-2"), func(m inbox.Message) bool {
		return strings.HasPrefix(m.Body, "[batty] main has moved on and conflicts with your branch batty/eng-2") && strings.Contains(m.Body, "shared.txt")
	})
	if note.From != team.Human || note.InReplyTo == "" {
		t.Fatalf("the note %+v", note)
	}
	// Its turn on the note left the markers: nothing is committed, the
	// branch does not carry them.
	r.finished(t, note.ID)
	if got := git(t, p.dir, "show", "batty/eng-2:shared.txt"); got != "two" {
		t.Fatalf("batty/eng-2 holds %q: unresolved markers were committed", got)
	}

	// Its landing now fails on the conflict; main stays as it was.
	p.send(team.LandingBox, "human", "eng-2")
	failed := r.waitEvent(t, "eng-2's landing failed", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvLandingFailed && e.Agent == "eng-2"
	})
	if !strings.Contains(failed.Detail, "shared.txt") {
		t.Fatalf("landing_failed %q does not name the file", failed.Detail)
	}
	if now := git(t, p.dir, "rev-parse", "main"); now != main {
		t.Fatalf("a failed landing moved main from %s to %s", main, now)
	}
	waitMessage(t, p.box("eng-2"), func(m inbox.Message) bool {
		return strings.HasPrefix(m.Body, "[batty] batty/eng-2 did not land on main: it conflicts with main in: shared.txt")
	})

	// Resolved by hand (as the agent would, editing the file): the next
	// turn's commit completes the merge, and the branch lands.
	if err := os.WriteFile(filepath.Join(wt2, "shared.txt"), []byte("one and two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.sendAndWait(r, "eng-2", "resolved", "completed")
	if parents := git(t, p.dir, "log", "-1", "--format=%p", "batty/eng-2"); len(strings.Fields(parents)) != 2 {
		t.Fatalf("the resolving commit is no merge: parents %q", parents)
	}
	p.send(team.LandingBox, "human", "eng-2")
	r.waitEvent(t, "eng-2 landed", func(e eventlog.Event) bool { return e.Type == eventlog.EvLanded && e.Agent == "eng-2" })
	if b, _ := os.ReadFile(filepath.Join(p.dir, "shared.txt")); string(b) != "one and two\n" {
		t.Fatalf("main's shared.txt after both landed: %q", b)
	}
}

// A red verify leaves base unchanged, and the agent gets the output's tail.
func TestARedVerifyLeavesBaseUnchanged(t *testing.T) {
	p := newGitProject(t, "workspace:\n  verify: echo VERIFY-SAID-NO; exit 3\n", "  - name: eng\n    workspace: worktree\n")
	p.sandboxOrOff(t)
	r := p.start(nil)
	p.sendAndWait(r, "eng", "scenario:write:new.txt=x", "completed")
	before := git(t, p.dir, "rev-parse", "main")
	p.send(team.LandingBox, "human", "eng")
	failed := r.waitEvent(t, "the landing failed", func(e eventlog.Event) bool { return e.Type == eventlog.EvLandingFailed })
	if out := payloadOf[eventlog.LandingFailed](failed).Output; !strings.Contains(out, "VERIFY-SAID-NO") {
		t.Fatalf("landing_failed without the output: %+v", failed)
	}
	if after := git(t, p.dir, "rev-parse", "main"); after != before {
		t.Fatalf("a red verify moved main")
	}
	waitMessage(t, p.box("eng"), func(m inbox.Message) bool {
		return strings.Contains(m.Body, "did not land on main") && strings.Contains(m.Body, "VERIFY-SAID-NO")
	})
}

// An agent may not land another's branch unless it may message it.
func TestALandingRequestFromAnotherAgentIsRefused(t *testing.T) {
	p := newGitProject(t, "", "  - name: eng\n    instances: 2\n    workspace: worktree\n")
	r := p.start(nil)
	id := p.send(team.LandingBox, "eng-2", "eng-1")
	e := r.waitEvent(t, "the refusal", func(e eventlog.Event) bool { return e.Type == eventlog.EvRejected && e.Message == id })
	if !strings.Contains(e.Detail, "eng-2 may not land eng-1's branch") {
		t.Fatalf("refusal %q", e.Detail)
	}
}

// waitMessage waits until box holds a message (waiting, in flight or
// done) for which ok is true, and returns it.
func waitMessage(t testing.TB, b *inbox.Box, ok func(inbox.Message) bool) inbox.Message {
	t.Helper()
	var found inbox.Message
	waitFor(t, "a message in "+b.Name, func() bool {
		pending, _ := b.Pending()
		inflight, _ := b.InFlight()
		done, _ := b.Done(0)
		for _, m := range append(append(pending, inflight...), done...) {
			if ok(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// A daemon SIGKILLed mid-turn leaves the turn's edit in the worktree; the
// next daemon commits it as work in progress before the agent's next turn,
// and the message runs again.
func TestADaemonKilledMidTurnLosesNoEdit(t *testing.T) {
	p := newGitProject(t, "", "  - name: eng\n    workspace: worktree\n")
	child := p.startChildDaemon()
	id := p.send("eng", "human", "scenario:writehang:half.txt=half-done")
	wt := filepath.Join(p.layout.WorktreesDir(), "eng")
	waitFor(t, "the turn's edit", func() bool {
		b, _ := os.ReadFile(filepath.Join(wt, "half.txt"))
		return string(b) == "half-done\n"
	})
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()

	r := p.start(nil)
	e := r.waitEvent(t, "the leftover's commit", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWorkspaceCommitted && e.Agent == "eng" && payloadOf[eventlog.WorkspaceCommitted](e).WIP
	})
	commit := payloadOf[eventlog.WorkspaceCommitted](e).Commit
	if got := git(t, p.dir, "show", commit+":half.txt"); got != "half-done" {
		t.Fatalf("the leftover commit holds %q", got)
	}
	r.waitEvent(t, "the message run again", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == id })
}

// A daemon SIGKILLed while a landing's verify runs neither lands half of
// it nor forgets it: the next daemon kills the verify it left, lands the
// branch from scratch, once.
func TestADaemonKilledMidLandingLandsOnceAfterRestart(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	pidFile := filepath.Join(t.TempDir(), "verify.pid")
	verify := "echo $$ > " + pidFile + "; while [ ! -e " + gate + " ]; do sleep 0.05; done"
	// The verify writes its pid out of its worktree, and the second
	// daemon reads the team file (the agents' fake codex as codex.bin).
	p := newGitProject(t, "workspace:\n  verify: '"+verify+"'\n  sandbox: off\n", "  - name: eng\n    workspace: worktree\n")
	r := p.start(nil)
	p.sendAndWait(r, "eng", "scenario:write:new.txt=landed", "completed")
	r.stop(t)

	child := p.startChildDaemon()
	p.send(team.LandingBox, "human", "eng")
	waitFor(t, "verify", func() bool { b, _ := os.ReadFile(pidFile); return len(b) > 0 })
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	before := git(t, p.dir, "rev-parse", "main")
	os.Remove(pidFile)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	r = p.start(nil)
	landed := r.waitEvent(t, "the landing", func(e eventlog.Event) bool { return e.Type == eventlog.EvLanded && e.Agent == "eng" })
	if before == payloadOf[eventlog.Landed](landed).Commit {
		t.Fatal("main did not move")
	}
	if n := git(t, p.dir, "log", "--merges", "--format=%s", "main"); strings.Count(n, "Land batty/eng") != 1 {
		t.Fatalf("landings on main:\n%s", n)
	}
	if b, _ := os.ReadFile(filepath.Join(p.dir, "new.txt")); string(b) != "landed\n" {
		t.Fatalf("the user's checkout: new.txt %q", b)
	}
}

// A setup that fails parks the agent with its output; once fixed, batty
// resume prepares the worktree again and the agent works.
func TestAFailedSetupParksTheAgent(t *testing.T) {
	ok := filepath.Join(t.TempDir(), "ok")
	p := newGitProject(t, "workspace:\n  setup: 'test -e "+ok+" || { echo SETUP-SAID-NO; exit 4; }'\n", "  - name: eng\n    workspace: worktree\n")
	p.sandboxOrOff(t)
	r := p.start(nil)
	st := r.waitAgent(t, "eng", "parked by its setup", func(a control.AgentStatus) bool {
		return a.State == agentParked && a.Parked != nil && a.Parked.Kind == string(ProblemWorkspace)
	})
	if !strings.Contains(st.Parked.Detail, "SETUP-SAID-NO") || !strings.Contains(st.Parked.Fix, "batty resume eng") {
		t.Fatalf("parked %+v", st.Parked)
	}
	id := p.send("eng", "human", "hello")
	if err := os.WriteFile(ok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if resp, err := control.Call(p.layout, control.Request{Op: control.OpResume, Agent: "eng"}, waitLimit); err != nil || !resp.OK {
		t.Fatalf("resume: %+v, %v", resp, err)
	}
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("the message after the setup passed: %s", st)
	}
}

// A disk too full for a new worktree parks the agent, naming the free
// space and the threshold, and makes nothing.
func TestALowDiskRefusesANewWorktree(t *testing.T) {
	p := newGitProject(t, "", "  - name: eng\n    workspace: worktree\n")
	r := p.start(func(o *Options) { o.WorktreeMinFree = 1 << 62 })
	st := r.waitAgent(t, "eng", "parked for want of disk", func(a control.AgentStatus) bool {
		return a.State == agentParked && a.Parked != nil && a.Parked.Kind == string(ProblemWorkspace)
	})
	if !strings.Contains(st.Parked.Detail, "free") || !strings.Contains(st.Parked.Detail, "4611686018427387904") {
		t.Fatalf("parked %+v", st.Parked)
	}
	if _, err := os.Stat(filepath.Join(p.layout.WorktreesDir(), "eng")); !os.IsNotExist(err) {
		t.Fatalf("a worktree was made: %v", err)
	}
}

func TestUntoldNested(t *testing.T) {
	told := map[string]bool{"sub": true}
	for _, tc := range []struct {
		nested, want []string
	}{
		{nil, nil},
		{[]string{"sub"}, nil},
		{[]string{"sub", "deep/er/x", "y"}, []string{"deep/er/x", "y"}},
	} {
		if got := untold(told, tc.nested); !slices.Equal(got, tc.want) {
			t.Errorf("untold(%q) = %q, want %q", tc.nested, got, tc.want)
		}
	}
	note := nestedNote([]string{"vendor/lib", "x"})
	for _, want := range []string{"vendor/lib, x", "rm -rf vendor/lib/.git", "outside your sandbox", "not part of your branch"} {
		if !strings.Contains(note, want) {
			t.Errorf("nestedNote lacks %q:\n%s", want, note)
		}
	}
}
