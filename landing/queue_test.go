package landing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/workspaces"
)

func TestLandTwoBranchesInOrder(t *testing.T) {
	r := newRepo(t)
	a, b := r.agent("a"), r.agent("b")
	r.commit(a, "a.txt", "from a\n", "a one")
	aTip := r.commit(a, "a2.txt", "more from a\n", "a two")
	bTip := r.commit(b, "b.txt", "from b\n", "b one")
	base := r.tip("main")

	lock := &heldLock{}
	o := r.options()
	o.Lock = lock
	q := r.open(o)
	advances := 0
	q.beforeAdvance = func(d Decision) {
		advances++
		if !lock.held {
			t.Error("base advanced without the caller's lock")
		}
		if d.Action != ActAdvanceCheckout {
			t.Errorf("main is checked out at the top level, advanced by %v", d.Action)
		}
	}
	ra := r.enqueue(q, "a")
	rb := r.enqueue(q, "b")
	if next, ok := q.Next(); !ok || next.ID != ra.ID {
		t.Fatalf("Next = %+v %v, want a's request first", next, ok)
	}
	r.drain(q)

	la, _ := q.Get(ra.ID)
	lb, _ := q.Get(rb.ID)
	if la.State != Landed || lb.State != Landed || advances != 2 {
		t.Fatalf("a %s (%s), b %s (%s), %d advances", la.State, la.Error, lb.State, lb.Error, advances)
	}
	if got := r.tip("main"); got != lb.LandedCommit || lb.Merged != got {
		t.Fatalf("main at %s, b landed %s", got, lb.LandedCommit)
	}
	if la.BaseBefore != base || lb.BaseBefore != la.LandedCommit || la.FinishedAt.IsZero() {
		t.Fatalf("a landed onto %s (want %s), b onto %s (want %s)", la.BaseBefore, base, lb.BaseBefore, la.LandedCommit)
	}
	// Each landing is a merge commit whose parents are base and the branch.
	if got := r.merges(); !slices.Equal(got, []string{"Land batty/b (1 commit)", "Land batty/a (2 commits)"}) {
		t.Fatalf("merges on main: %q", got)
	}
	if got := r.git(r.top, "rev-parse", la.LandedCommit+"^1", la.LandedCommit+"^2"); got != base+"\n"+aTip {
		t.Fatalf("a's merge parents: %s", got)
	}
	if got := r.git(r.top, "rev-parse", lb.LandedCommit+"^2"); got != bTip {
		t.Fatalf("b's merge second parent %s, want b's tip %s", got, bTip)
	}
	if got := r.git(r.top, "log", "-1", "--format=%an <%ae>|%cn <%ce>", lb.LandedCommit); got != "batty <batty@localhost>|batty <batty@localhost>" {
		t.Fatalf("merge author|committer = %s", got)
	}
	// The agents' turn commits are there as they were, trailers and all.
	if got := r.git(r.top, "log", "--no-merges", "--format=%(trailers:key=Batty-Message,valueonly)", "main"); !strings.Contains(got, "a-two") || !strings.Contains(got, "b-one") {
		t.Fatalf("turn trailers on main: %q", got)
	}
	// The user's checkout came along: files there, nothing changed.
	if got := r.read(r.top, "a2.txt") + r.read(r.top, "b.txt"); got != "more from a\nfrom b\n" {
		t.Fatalf("top level files: %q", got)
	}
	if st := r.status(); st != "" {
		t.Fatalf("top level not clean after landing:\n%s", st)
	}
	if got := r.git(r.top, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Fatalf("top level HEAD %s", got)
	}
	// The agents' branches and worktrees are untouched.
	if r.git(a, "rev-parse", "HEAD") != aTip || r.git(a, "symbolic-ref", "HEAD") != "refs/heads/batty/a" || r.tip("batty/b") != bTip {
		t.Fatal("an agent's branch or worktree moved")
	}
	// The integration worktree is a detached worktree of the repository.
	integ := filepath.Join(r.worktrees(), IntegrationName)
	if got := r.git(integ, "rev-parse", "--abbrev-ref", "HEAD"); got != "HEAD" {
		t.Fatalf("integration worktree on %s, want detached", got)
	}
	// The queue is durable: a new Queue reads the same requests.
	if got := r.open(r.options()).List(); len(got) != 2 || got[0].State != Landed || got[1].LandedCommit != lb.LandedCommit {
		t.Fatalf("reloaded %+v", got)
	}
	if _, ok := q.Next(); ok {
		t.Fatal("Next after everything landed")
	}
	if lock.held || lock.times == 0 {
		t.Fatalf("lock held %v after %d uses", lock.held, lock.times)
	}
}

func TestConflictFailsAndLeavesBase(t *testing.T) {
	r := newRepo(t)
	a, b, c := r.agent("a"), r.agent("b"), r.agent("c")
	r.commit(a, "shared.txt", "one\nTWO by a\nthree\n", "a edits")
	r.commit(b, "shared.txt", "one\nTWO by b\nthree\n", "b edits")
	r.commit(c, "c.txt", "c\n", "c adds")
	q := r.open(r.options())
	ra, rb := r.enqueue(q, "a"), r.enqueue(q, "b")
	if got := r.land(q, ra.ID); got.State != Landed {
		t.Fatalf("a: %s %s", got.State, got.Error)
	}
	afterA := r.tip("main")
	got := r.land(q, rb.ID)
	if got.State != Failed || !slices.Equal(got.Conflicts, []string{"shared.txt"}) || !strings.Contains(got.Error, "conflicts in 1 file") {
		t.Fatalf("b: %s %q %q", got.State, got.Error, got.Conflicts)
	}
	if r.tip("main") != afterA || r.read(r.top, "shared.txt") != "one\nTWO by a\nthree\n" || r.status() != "" {
		t.Fatal("a failed landing changed main or the user's checkout")
	}
	// The half-done merge in the integration worktree does not get in the
	// next landing's way.
	if got := r.land(q, r.enqueue(q, "c").ID); got.State != Landed {
		t.Fatalf("c after a conflict: %s %s", got.State, got.Error)
	}
	if r.read(r.top, "c.txt") != "c\n" || len(r.merges()) != 2 {
		t.Fatalf("c did not land cleanly: merges %q", r.merges())
	}
}

func TestRedVerifyLeavesBase(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	o := r.options()
	o.Verify = `yes 'some output' | head -c 100000; echo "MARKER-$BATTY_LANDING_AGENT"; exit 3`
	q := r.open(o)
	base := r.tip("main")
	got := r.land(q, r.enqueue(q, "a").ID)
	if got.State != Failed || !strings.Contains(got.Error, "exit status 3") {
		t.Fatalf("red verify: %s %q", got.State, got.Error)
	}
	if !strings.HasSuffix(got.OutputTail, "MARKER-a\n") || len(got.OutputTail) > MaxOutputTail || !strings.HasPrefix(got.OutputTail, "… [truncated]") {
		t.Fatalf("output tail: %d bytes, ends %q", len(got.OutputTail), got.OutputTail[max(0, len(got.OutputTail)-40):])
	}
	if r.tip("main") != base || len(r.merges()) != 0 {
		t.Fatal("a red verify advanced main")
	}
}

func TestGreenVerifyLands(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "somefile", "x\n", "a adds somefile")
	o := r.options()
	integ := filepath.Join(r.worktrees(), IntegrationName)
	// Only the merged tree has somefile; the variables name the landing.
	o.Verify = `test -f somefile && test "$BATTY_LANDING_AGENT" = a && test "$BATTY_LANDING_BRANCH" = batty/a && ` +
		`test "$BATTY_LANDING_BASE" = main && test "$(pwd -P)" = "$(cd '` + integ + `' && pwd -P)"`
	q := r.open(o)
	if got := r.land(q, r.enqueue(q, "a").ID); got.State != Landed {
		t.Fatalf("green verify: %s %q %q", got.State, got.Error, got.OutputTail)
	}
	if r.read(r.top, "somefile") != "x\n" {
		t.Fatal("somefile did not land")
	}
}

func TestVerifyTimeout(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	o := r.options()
	o.Verify = `echo started; sleep 30`
	o.VerifyTimeout = 2 * time.Second // room for a loaded machine to print "started"
	q := r.open(o)
	base := r.tip("main")
	start := time.Now()
	got := r.land(q, r.enqueue(q, "a").ID)
	if got.State != Failed || !strings.Contains(got.Error, "did not finish within 2s") || got.OutputTail != "started\n" {
		t.Fatalf("slow verify: %s %q %q", got.State, got.Error, got.OutputTail)
	}
	if time.Since(start) > 20*time.Second || r.tip("main") != base {
		t.Fatal("the time limit did not hold, or main moved")
	}
}

func TestNothingToLand(t *testing.T) {
	r := newRepo(t)
	r.agent("a")
	q := r.open(r.options())
	base := r.tip("main")
	got := r.land(q, r.enqueue(q, "a").ID)
	if got.State != Nothing || got.Error != "nothing to land" || got.FinishedAt.IsZero() {
		t.Fatalf("empty branch: %s %q", got.State, got.Error)
	}
	if r.tip("main") != base || len(r.merges()) != 0 {
		t.Fatal("nothing to land, yet main moved")
	}
	// A branch that does not exist fails, naming it.
	got = r.land(q, r.enqueue(q, "ghost").ID)
	if got.State != Failed || got.Error != "branch batty/ghost does not exist" {
		t.Fatalf("missing branch: %s %q", got.State, got.Error)
	}
}

func TestDirtyCheckoutWaits(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	r.write(r.top, "README", "my edit\n")
	o := r.options()
	o.RetryWait = time.Minute
	q := r.open(o)
	base := r.tip("main")
	req := r.enqueue(q, "a")
	got := r.land(q, req.ID)
	want := "base main is checked out at " + r.top + " with uncommitted changes; commit or stash them"
	if got.State != Waiting || got.Error != want || !got.RetryAt.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("dirty checkout: %s %q retry %v", got.State, got.Error, got.RetryAt)
	}
	if r.tip("main") != base || r.read(r.top, "README") != "my edit\n" || r.status() != "M README" {
		t.Fatalf("the dirty checkout was touched: %q", r.status())
	}
	if _, ok := q.Next(); ok {
		t.Fatal("a waiting request was due before its retry time")
	}
	r.advance(time.Minute)
	if next, ok := q.Next(); !ok || next.ID != req.ID {
		t.Fatal("the waiting request was not due at its retry time")
	}
	// Still dirty: waits again, untouched.
	if got := r.land(q, req.ID); got.State != Waiting || r.read(r.top, "README") != "my edit\n" {
		t.Fatalf("still dirty: %s", got.State)
	}
	r.git(r.top, "checkout", "--", "README")
	got = r.land(q, req.ID)
	if got.State != Landed || r.read(r.top, "a.txt") != "a\n" || r.status() != "" {
		t.Fatalf("after cleaning: %s %q, status %q", got.State, got.Error, r.status())
	}
}

func TestStagedChangesWait(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	r.write(r.top, "new.txt", "staged\n")
	r.git(r.top, "add", "new.txt")
	q := r.open(r.options())
	if got := r.land(q, r.enqueue(q, "a").ID); got.State != Waiting {
		t.Fatalf("staged change: %s", got.State)
	}
	if r.status() != "A  new.txt" {
		t.Fatalf("the index was touched: %q", r.status())
	}
}

// TestBaseMovedBeforeAdvance commits to main between the merge and the
// advance: the landing is redone on the new tip and the commit stays.
func TestBaseMovedBeforeAdvance(t *testing.T) {
	for _, checkedOut := range []bool{true, false} {
		name := "main checked out"
		if !checkedOut {
			name = "main not checked out"
		}
		t.Run(name, func(t *testing.T) {
			r := newRepo(t)
			r.commit(r.agent("a"), "a.txt", "a\n", "a")
			if !checkedOut {
				r.git(r.top, "checkout", "-q", "-b", "dev")
			}
			q := r.open(r.options())
			var concurrent string
			var actions []Action
			q.beforeAdvance = func(d Decision) {
				actions = append(actions, d.Action)
				if concurrent != "" {
					return
				}
				if checkedOut {
					concurrent = r.commit(r.top, "user.txt", "user\n", "the user's commit")
					return
				}
				tree := r.git(r.top, "rev-parse", "main^{tree}")
				concurrent = r.git(r.top, "commit-tree", tree, "-p", "main", "-m", "someone else's commit")
				r.git(r.top, "update-ref", "refs/heads/main", concurrent)
			}
			got := r.land(q, r.enqueue(q, "a").ID)
			if got.State != Landed || got.Attempts != 2 || got.BaseBefore != concurrent {
				t.Fatalf("%s %q after %d attempts onto %s (concurrent %s)", got.State, got.Error, got.Attempts, got.BaseBefore, concurrent)
			}
			want := ActAdvanceRef
			if checkedOut {
				want = ActAdvanceCheckout
			}
			if !slices.Equal(actions, []Action{want, want}) {
				t.Fatalf("advances %v", actions)
			}
			if r.tip("main") != got.LandedCommit || r.git(r.top, "rev-parse", "main^1") != concurrent {
				t.Fatal("the concurrent commit is not main's first parent")
			}
			if len(r.merges()) != 1 {
				t.Fatalf("merges %q", r.merges())
			}
			if checkedOut && (r.read(r.top, "a.txt") != "a\n" || r.read(r.top, "user.txt") != "user\n" || r.status() != "") {
				t.Fatalf("top level after landing: %q", r.status())
			}
			if !checkedOut && r.git(r.top, "symbolic-ref", "HEAD") != "refs/heads/dev" {
				t.Fatal("the user's checkout left dev")
			}
		})
	}
}

func TestBaseKeepsMovingWaits(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	r.git(r.top, "checkout", "-q", "-b", "dev")
	o := r.options()
	o.MaxAttempts = 2
	q := r.open(o)
	n := 0
	q.beforeAdvance = func(Decision) {
		n++
		r.git(r.top, "update-ref", "refs/heads/main", r.git(r.top, "commit-tree", r.tip("main^{tree}"), "-p", "main", "-m", "churn"))
	}
	got := r.land(q, r.enqueue(q, "a").ID)
	if got.State != Waiting || !strings.Contains(got.Error, "moved during each of 2 attempts") || n != 2 || len(r.merges()) != 0 {
		t.Fatalf("%s %q after %d advances", got.State, got.Error, n)
	}
}

func TestRestartRetriesLanding(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	old := r.tip("main")
	r.commit(r.top, "later.txt", "later\n", "a commit since")
	// Killed mid-landing: recorded landing, with a merge commit that never
	// reached base (and is not even in the repository).
	r.writeState(Request{ID: "r1", Agent: "a", Branch: "batty/a", RequestedAt: epoch, State: Landing, BaseBefore: old, Merged: tipM, Attempts: 1})
	q := r.open(r.options())
	next, ok := q.Next()
	if !ok || next.ID != "r1" {
		t.Fatalf("Next = %+v %v, want the interrupted landing", next, ok)
	}
	got := r.land(q, "r1")
	if got.State != Landed || got.Attempts != 2 || len(r.merges()) != 1 || r.tip("main") != got.LandedCommit {
		t.Fatalf("%s %q, %d attempts, merges %q", got.State, got.Error, got.Attempts, r.merges())
	}
	if r.read(r.top, "a.txt") != "a\n" || r.read(r.top, "later.txt") != "later\n" {
		t.Fatal("files missing after the retried landing")
	}
	// Landing it again is a no-op.
	if again := r.land(q, "r1"); again.State != Landed || len(r.merges()) != 1 {
		t.Fatal("a landed request landed again")
	}
}

func TestCrashAfterAdvance(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	old := r.tip("main")
	// Base was advanced to the landing's merge commit; the daemon died
	// before recording it.
	r.git(r.top, "merge", "-q", "--no-ff", "-m", "Land batty/a (1 commit)", "batty/a")
	merged := r.tip("main")
	r.writeState(Request{ID: "r1", Agent: "a", Branch: "batty/a", RequestedAt: epoch, State: Landing, BaseBefore: old, Merged: merged, Attempts: 1})
	q := r.open(r.options())
	q.beforeAdvance = func(Decision) { t.Error("advanced base again") }
	got := r.land(q, "r1")
	if got.State != Landed || got.LandedCommit != merged || got.Attempts != 1 {
		t.Fatalf("%s %q landed %s attempts %d, want landed %s", got.State, got.Error, got.LandedCommit, got.Attempts, merged)
	}
	if r.tip("main") != merged || len(r.merges()) != 1 {
		t.Fatalf("a second merge: %q", r.merges())
	}
}

func TestEnqueueTwice(t *testing.T) {
	r := newRepo(t)
	q := r.open(r.options())
	first, isNew, err := q.Enqueue("a", "human", false)
	if err != nil || !isNew || first.State != Queued || first.Branch != "batty/a" || !first.RequestedAt.Equal(epoch) || first.RequestedBy != "human" {
		t.Fatalf("first: %+v %v %v", first, isNew, err)
	}
	second, isNew, err := q.Enqueue("a", "manager", false)
	if err != nil || isNew || second.ID != first.ID {
		t.Fatalf("second: %+v %v %v", second, isNew, err)
	}
	if got := r.open(r.options()).List(); len(got) != 1 || got[0].ID != first.ID {
		t.Fatalf("on disk: %+v", got)
	}
	for _, bad := range []string{"", "-a", "A", "a/b", "../x"} {
		if _, _, err := q.Enqueue(bad, "human", false); err == nil {
			t.Errorf("Enqueue(%q) accepted", bad)
		}
	}
	// A waiting request asked for again is due at once.
	r.writeState(Request{ID: "w1", Agent: "b", Branch: "batty/b", RequestedAt: epoch, State: Waiting, Error: "dirty", RetryAt: epoch.Add(time.Hour)})
	q = r.open(r.options())
	if _, ok := q.Next(); ok {
		t.Fatal("waiting request due early")
	}
	again, isNew, err := q.Enqueue("b", "human", false)
	if err != nil || isNew || again.ID != "w1" || !again.RetryAt.IsZero() {
		t.Fatalf("re-enqueue of a waiting request: %+v %v %v", again, isNew, err)
	}
	if next, ok := q.Next(); !ok || next.ID != "w1" {
		t.Fatal("a waiting request asked for again is not due")
	}
	if got := r.open(r.options()).List(); len(got) != 1 || !got[0].RetryAt.IsZero() {
		t.Fatalf("on disk: %+v", got)
	}
}

func TestFinishedRequestsBounded(t *testing.T) {
	r := newRepo(t)
	r.agent("a")
	var reqs []Request
	for i := range MaxFinished {
		reqs = append(reqs, Request{ID: fmt.Sprintf("old%03d", i), Agent: "a", Branch: "batty/a", State: Nothing,
			FinishedAt: epoch.Add(-time.Duration(MaxFinished-i) * time.Second)})
	}
	r.writeState(reqs...)
	q := r.open(r.options())
	got := r.land(q, r.enqueue(q, "a").ID)
	if got.State != Nothing {
		t.Fatalf("%s %q", got.State, got.Error)
	}
	list := q.List()
	if len(list) != MaxFinished || list[0].ID != reqs[1].ID || list[len(list)-1].ID != got.ID {
		t.Fatalf("kept %d, first %s, last %s", len(list), list[0].ID, list[len(list)-1].ID)
	}
}

func TestKillMidVerify(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	dir := t.TempDir()
	mark := "landing-" + filepath.Base(dir)
	o := r.options()
	o.Env = append(append([]string(nil), r.env...), codextest.MarkEnv+"="+mark, "PIDS="+dir)
	// The shell (the group's leader) and a child of it.
	o.Verify = `echo $$ > "$PIDS/sh.tmp" && mv "$PIDS/sh.tmp" "$PIDS/sh"; sleep 300 & echo $! > "$PIDS/child.tmp"; mv "$PIDS/child.tmp" "$PIDS/child"; wait`
	q := r.open(o)
	req := r.enqueue(q, "a")
	base := r.tip("main")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		req Request
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := q.Land(ctx, req.ID)
		done <- result{got, err}
	}()
	sh := codextest.WaitPidFile(t, filepath.Join(dir, "sh"), 30*time.Second)
	child := codextest.WaitPidFile(t, filepath.Join(dir, "child"), 30*time.Second)
	cancel()
	var res result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Land did not return after its context ended")
	}
	if !errors.Is(res.err, context.Canceled) || res.req.State != Queued {
		t.Fatalf("cancelled landing: %s, %v", res.req.State, res.err)
	}
	for _, pid := range []int{sh, child} {
		if !codextest.WaitExit(pid, 10*time.Second) {
			t.Fatalf("verify process %d left running: %s", pid, codextest.Cmdline(pid))
		}
	}
	codextest.AssertNoMarked(t, mark)
	if r.tip("main") != base {
		t.Fatal("a cancelled landing advanced main")
	}
	// Durable and retriable: a restarted queue (without the slow verify)
	// finds it queued and lands it.
	o.Verify = ""
	q2 := r.open(o)
	if next, ok := q2.Next(); !ok || next.ID != req.ID || next.State != Queued {
		t.Fatalf("after restart Next = %+v %v", next, ok)
	}
	if got := r.land(q2, req.ID); got.State != Landed || len(r.merges()) != 1 {
		t.Fatalf("retried: %s %q", got.State, got.Error)
	}
}

func TestIntegrationWorktreeReplaced(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	r.commit(r.agent("b"), "b.txt", "b\n", "b")
	victim := t.TempDir()
	r.write(victim, "keep.txt", "precious\n")
	integ := filepath.Join(r.worktrees(), IntegrationName)
	// A link planted where the integration worktree goes: replaced, what
	// it points to untouched.
	if err := os.Symlink(victim, integ); err != nil {
		t.Fatal(err)
	}
	q := r.open(r.options())
	if got := r.land(q, r.enqueue(q, "a").ID); got.State != Landed {
		t.Fatalf("a: %s %q", got.State, got.Error)
	}
	if fi, err := os.Lstat(integ); err != nil || !fi.IsDir() {
		t.Fatalf("integration worktree not a directory: %v", err)
	}
	if r.read(victim, "keep.txt") != "precious\n" {
		t.Fatal("the link's target was touched")
	}
	// Removed behind git's back: its registration is pruned, it is made again.
	if err := os.RemoveAll(integ); err != nil {
		t.Fatal(err)
	}
	if got := r.land(q, r.enqueue(q, "b").ID); got.State != Landed {
		t.Fatalf("b: %s %q", got.State, got.Error)
	}
	if n := strings.Count(r.git(r.top, "worktree", "list", "--porcelain"), "worktree "); n != 4 {
		t.Fatalf("%d worktrees registered, want top, a, b and the integration worktree", n)
	}
}

func TestOpenRefusesBadState(t *testing.T) {
	r := newRepo(t)
	path := StatePath(r.layout)
	r.writeState()
	if err := os.WriteFile(path, []byte(`{"requests":[{"id":"r1"`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(r.options())
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "is corrupt") || !strings.Contains(err.Error(), "move it away") {
		t.Fatalf("corrupt file: %v", err)
	}
	big := make([]byte, maxStateFile+1)
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(r.options()); err == nil || !strings.Contains(err.Error(), "larger than") || !strings.Contains(err.Error(), path) {
		t.Fatalf("oversized file: %v", err)
	}
	other := filepath.Join(t.TempDir(), "elsewhere.json")
	if err := os.WriteFile(other, []byte(`{"requests":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, path); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(r.options()); !errors.Is(err, atomicfile.ErrSymlink) || !strings.Contains(err.Error(), path) {
		t.Fatalf("linked file: %v", err)
	}
	// Saving does not write through the link either.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	q := r.open(r.options())
	if err := os.Symlink(other, path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := q.Enqueue("a", "human", false); err == nil {
		t.Fatal("Enqueue saved through a link")
	}
	if b, _ := os.ReadFile(other); string(b) != `{"requests":[]}` {
		t.Fatalf("the link's target was written: %s", b)
	}
	if len(q.List()) != 0 {
		t.Fatal("a request not saved is in the queue")
	}
}

func TestStateFileMode(t *testing.T) {
	r := newRepo(t)
	q := r.open(r.options())
	r.enqueue(q, "a")
	fi, err := os.Lstat(StatePath(r.layout))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode %v, %v", fi.Mode(), err)
	}
}

func TestOpenRefusesBadOptions(t *testing.T) {
	r := newRepo(t)
	for name, mod := range map[string]func(*Options){
		"relative top":      func(o *Options) { o.TopLevel = "proj" },
		"relative worktree": func(o *Options) { o.WorktreesDir = "wt" },
		"base an option":    func(o *Options) { o.Base = "--all" },
		"bad committer":     func(o *Options) { o.Committer = "nobody" },
		"no layout":         func(o *Options) { o.Layout.Dir = "" },
	} {
		o := r.options()
		mod(&o)
		if _, err := Open(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestVerifyLeftoversKilled(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	dir := t.TempDir()
	o := r.options()
	o.Env = append(append([]string(nil), r.env...), "PIDS="+dir)
	// Green, but leaves a process behind in its group.
	o.Verify = `sleep 300 & echo $! > "$PIDS/child.tmp"; mv "$PIDS/child.tmp" "$PIDS/child"; exit 0`
	q := r.open(o)
	if got := r.land(q, r.enqueue(q, "a").ID); got.State != Landed {
		t.Fatalf("%s %q", got.State, got.Error)
	}
	child := codextest.WaitPidFile(t, filepath.Join(dir, "child"), time.Second)
	if !codextest.WaitExit(child, 10*time.Second) {
		t.Fatalf("verify's leftover %d still running: %s", child, codextest.Cmdline(child))
	}
}

// TestNotUTF8Recorded: a file name and an output that are not UTF-8 are
// recorded so that the state file loads again (JSON would otherwise grow
// them past their bounds).
func TestNotUTF8Recorded(t *testing.T) {
	r := newRepo(t)
	name := "caf\xe9.txt"
	r.commit(r.agent("a"), name, "a\n", "a adds")
	r.commit(r.agent("b"), name, "b\n", "b adds")
	r.commit(r.agent("c"), "c.txt", "c\n", "c adds")
	q := r.open(r.options())
	if got := r.land(q, r.enqueue(q, "a").ID); got.State != Landed {
		t.Fatalf("a: %s %q", got.State, got.Error)
	}
	if got := r.land(q, r.enqueue(q, "b").ID); got.State != Failed || !slices.Equal(got.Conflicts, []string{"caf\uFFFD.txt"}) {
		t.Fatalf("b: %s %q", got.State, got.Conflicts)
	}
	o := r.options()
	o.Verify = `i=0; while [ $i -lt 2000 ]; do printf '\351\303'; i=$((i+1)); done; printf 'END\377'; exit 1`
	q = r.open(o)
	got := r.land(q, r.enqueue(q, "c").ID)
	if got.State != Failed || len(got.OutputTail) > MaxOutputTail || !strings.HasSuffix(got.OutputTail, "END\uFFFD") {
		t.Fatalf("c: %s, %d bytes of tail ending %q", got.State, len(got.OutputTail), got.OutputTail[max(0, len(got.OutputTail)-10):])
	}
	if list := r.open(r.options()).List(); len(list) != 3 {
		t.Fatalf("reloaded %d requests", len(list))
	}
}

func TestRebaseOfBaseWaits(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	r.git(r.top, "checkout", "-q", "-b", "other")
	r.commit(r.top, "shared.txt", "other\n", "other's version")
	r.git(r.top, "checkout", "-q", "main")
	r.commit(r.top, "shared.txt", "main\n", "main's version")
	base := r.tip("main")
	// The user's rebase of main stops on a conflict: HEAD is detached until
	// it ends, and then it sets main.
	if _, err := (workspaces.Git{Dir: r.top, Env: r.env}).Run(context.Background(),
		"-c", "user.name=Tester", "-c", "user.email=tester@example.com", "rebase", "other"); err == nil {
		t.Fatal("the rebase did not stop")
	}
	q := r.open(r.options())
	got := r.land(q, r.enqueue(q, "a").ID)
	if got.State != Waiting || got.Error != "base main is being rebased at "+r.top+"; finish or abort the rebase" {
		t.Fatalf("%s %q", got.State, got.Error)
	}
	if r.tip("main") != base {
		t.Fatal("main moved under a rebase")
	}
	r.git(r.top, "rebase", "--abort")
	if got := r.land(q, got.ID); got.State != Landed {
		t.Fatalf("after the rebase: %s %q", got.State, got.Error)
	}
}

// A request held for its agent's turn is not due, holds no one up, is
// the one a second request for the agent returns, survives a restart
// (the state file), and once released lands what the turn committed.
func TestHeldForTheTurnLandsWhatTheTurnCommitted(t *testing.T) {
	r := newRepo(t)
	wa := r.agent("a")
	r.commit(r.agent("b"), "b.txt", "b\n", "b")
	q := r.open(r.options())
	held, err := q.HoldForTurn(r.enqueue(q, "a").ID)
	if err != nil || held.State != WaitingTurn || held.Error != "waits for a's turn to end: it lands what that turn commits" {
		t.Fatalf("HoldForTurn = %+v, %v", held, err)
	}
	other := r.enqueue(q, "b")
	if next, ok := q.Next(); !ok || next.ID != other.ID {
		t.Fatalf("Next = %+v %v, want b's request (a's waits for its turn)", next, ok)
	}
	r.drain(q)
	if again, isNew, err := q.Enqueue("a", "a", false); err != nil || isNew || again.ID != held.ID || again.State != WaitingTurn {
		t.Fatalf("a second request for a: %+v %v %v, want the held one", again, isNew, err)
	}
	// The daemon dies; the turn's commit comes; the next one releases it.
	r.commit(wa, "a.txt", "from the turn\n", "the turn")
	q = r.open(r.options())
	if got, ok := q.Get(held.ID); !ok || got.State != WaitingTurn {
		t.Fatalf("after a restart: %+v %v", got, ok)
	}
	if _, ok := q.Next(); ok {
		t.Fatal("a request held for the turn is due")
	}
	if same, err := q.HoldForTurn(held.ID); err != nil || same.State != WaitingTurn {
		t.Fatalf("HoldForTurn of a held request = %+v, %v", same, err)
	}
	rel, err := q.ReleaseTurn(held.ID)
	if err != nil || rel.State != Queued || rel.Error != "" {
		t.Fatalf("ReleaseTurn = %+v, %v", rel, err)
	}
	r.drain(q)
	if got, _ := q.Get(held.ID); got.State != Landed || r.read(r.top, "a.txt") != "from the turn\n" {
		t.Fatalf("released request %s %q; a.txt on main missing", got.State, got.Error)
	}
	if _, err := q.HoldForTurn("nope"); err == nil {
		t.Fatal("HoldForTurn of no request succeeded")
	}
}
