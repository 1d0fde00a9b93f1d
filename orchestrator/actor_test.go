package orchestrator

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
)

// gitGate is a git, first on PATH, whose first `commit-tree` in agent's
// worktree blocks until the test releases it: a commit as slow as the
// test wants, with no sleep. The test holds both FIFOs open read-write, so
// the wrapper never blocks opening them: it writes a line into started
// and then reads release until the test closes its end.
type gitGate struct {
	started, release *os.File
	once             sync.Once
}

// blockCommitTree puts the gate's git first on PATH (for the rest of the
// test) and releases it when the test ends, before the daemon stops.
func blockCommitTree(t *testing.T, agent string) *gitGate {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	for _, f := range []string{started, release} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g := &gitGate{}
	if g.started, err = os.OpenFile(started, os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	if g.release, err = os.OpenFile(release, os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`#!/bin/sh
case " $* " in
*" commit-tree "*)
	case " $* " in
	*/worktrees/%s" "*)
		if mkdir %q 2>/dev/null; then
			echo blocked >%q
			cat %q >/dev/null
		fi ;;
	esac ;;
esac
exec %q "$@"
`, agent, filepath.Join(dir, "once"), started, release, real)
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Cleanup(func() { g.open(); g.started.Close() })
	return g
}

// waitBlocked waits until the gated commit-tree has started (at most
// waitLimit).
func (g *gitGate) waitBlocked(t *testing.T) {
	t.Helper()
	g.started.SetReadDeadline(time.Now().Add(waitLimit))
	if _, err := g.started.Read(make([]byte, 64)); err != nil {
		t.Fatalf("the gated commit-tree did not start: %v", err)
	}
}

// open lets the gated commit-tree go on (idempotent).
func (g *gitGate) open() { g.once.Do(func() { g.release.Close() }) }

// While an agent's git step holds it (its turn's commit, blocked in
// commit-tree), the daemon's loop goes on: status answers, another
// agent's message is dispatched and completed, and a reset and a cancel
// of the slow agent are acknowledged at once as pending, shown by status,
// and applied in order once the commit has ended, after its turn's
// outcome.
func TestTheDaemonNeverWaitsForAnAgentsGit(t *testing.T) {
	p := newGitProject(t, "", "  - name: slow\n    workspace: worktree\n  - name: fast\n")
	r := p.start(nil)
	// Released (at the latest) before the daemon stops: registered after.
	gate := blockCommitTree(t, "slow")
	call := func(req control.Request) control.Response {
		t.Helper()
		resp, err := control.Call(p.layout, req, waitLimit)
		if err != nil {
			t.Fatalf("%s while slow's commit is blocked: %v", req.Op, err)
		}
		return resp
	}

	first := p.send("slow", "human", "scenario:write:notes.txt=slow work")
	gate.waitBlocked(t)
	second := p.send("slow", "human", "scenario:write:more.txt=never")

	if resp := call(control.Request{Op: control.OpReset, Agent: "slow", Reason: "fresh start"}); !slices.Equal(resp.Pending, []string{"slow"}) {
		t.Fatalf("reset answered %+v; want it pending for slow", resp)
	}
	cancels := call(control.Request{Op: control.OpCancel, IDs: []string{second}}).Cancels
	if len(cancels) != 1 || cancels[0].Result != control.CancelPending || cancels[0].Box != "slow" {
		t.Fatalf("cancel answered %+v; want it pending in slow's box", cancels)
	}
	st := call(control.Request{Op: control.OpStatus}).Status
	slow := agentStatusOf(*st, "slow")
	if want := []string{control.PendingReset, control.PendingCancel + " " + second}; !slices.Equal(slow.Pending, want) {
		t.Fatalf("slow's pending %q; want %q", slow.Pending, want)
	}
	if slow.InFlight == nil || *slow.InFlight != first {
		t.Fatalf("slow's message in flight %v; want %s, its turn being committed", slow.InFlight, first)
	}
	if p := agentStatusOf(*st, "fast").Pending; p != nil {
		t.Fatalf("fast's pending %q", p)
	}

	// Another agent's message goes all the way meanwhile.
	p.sendAndWait(r, "fast", "hello", "completed")
	for _, typ := range []string{eventlog.EvTurnFinished, eventlog.EvThreadReset, eventlog.EvCancelled} {
		if n := r.countAgent(typ, "slow"); n != 0 {
			t.Fatalf("%d %s events of slow before its commit ended", n, typ)
		}
	}

	gate.open()
	if got := r.finished(t, first); got != "completed" {
		t.Fatalf("slow's turn %s", got)
	}
	r.waitEvent(t, "the pending reset", func(e eventlog.Event) bool { return e.Type == eventlog.EvThreadReset && e.Agent == "slow" })
	r.waitEvent(t, "the pending cancel", func(e eventlog.Event) bool { return e.Type == eventlog.EvCancelled && e.Message == second })
	// In the order asked, after the turn's outcome (the reset archives
	// the thread the turn ran on).
	turn, reset, cancel := r.index(eventlog.EvTurnFinished, first), r.index(eventlog.EvThreadReset, ""), r.index(eventlog.EvCancelled, second)
	if !(turn < reset && reset < cancel) {
		t.Fatalf("turn_finished at %d, thread_reset at %d, cancelled at %d; want them in this order", turn, reset, cancel)
	}
	r.waitAgent(t, "slow", "no pending request", func(a control.AgentStatus) bool { return a.Pending == nil })
	if n := p.deliveries(second); n != 0 {
		t.Fatalf("the cancelled message ran %d times", n)
	}
	if m, where, err := p.box("slow").Get(second); err != nil || where != inbox.StateDone || m.Outcome == nil || m.Outcome.Status != inbox.StatusCancelled {
		t.Fatalf("the cancelled message: %+v in %s, %v", m.Outcome, where, err)
	}
	if msg := git(t, p.dir, "log", "-1", "--format=%B", "batty/slow"); !strings.Contains(msg, "Batty-Message: "+first) {
		t.Fatalf("the turn's commit is not on batty/slow:\n%s", msg)
	}
}

// countAgent counts the events of type typ of agent.
func (r *running) countAgent(typ, agent string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.seen {
		if e.Type == typ && e.Agent == agent {
			n++
		}
	}
	return n
}

// index is the position of the first event of type typ (of message id,
// unless ""), -1 when none.
func (r *running) index(typ, id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.IndexFunc(r.seen, func(e eventlog.Event) bool { return e.Type == typ && (id == "" || e.Message == id) })
}
