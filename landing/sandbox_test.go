package landing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/sandbox"
)

// verify in Codex's sandbox: it writes the integration worktree and the
// declared cache and lands; a write into the project's checkout or the
// home directory makes it red, naming the setting to change, and nothing
// is written; without the sandbox (workspace.sandbox: off) the same write
// works.
func TestVerifyInTheSandbox(t *testing.T) {
	bin := codextest.Sandbox(t)
	r := newRepo(t)
	home := strings.TrimPrefix(r.env[0], "HOME=")
	cache := filepath.Join(t.TempDir(), "go-build")
	sb := &sandbox.Policy{Bin: bin, Homes: filepath.Join(t.TempDir(), "homes"), Writable: []string{cache}}
	land := func(agent, verify string, sb *sandbox.Policy) Request {
		t.Helper()
		r.commit(r.agent(agent), agent+".txt", agent+"\n", agent)
		o := r.options()
		o.Verify, o.Sandbox = verify, sb
		q := r.open(o)
		return r.land(q, r.enqueue(q, agent).ID)
	}

	got := land("inside", `set -e; echo built > out.bin; echo obj > "`+cache+`/obj"; echo t > "$TMPDIR/t"`, sb)
	if got.State != Landed {
		t.Fatalf("a verify that writes its worktree and the cache: %s %q %q", got.State, got.Error, got.OutputTail)
	}
	if _, err := os.Stat(filepath.Join(cache, "obj")); err != nil {
		t.Fatalf("the cache: %v", err)
	}

	for _, target := range []string{filepath.Join(r.top, "escaped"), filepath.Join(home, "escaped")} {
		before := r.tip("main")
		got := land("out-"+filepath.Base(filepath.Dir(target)), `echo pwned > "`+target+`"`, sb)
		if got.State != Failed || !strings.Contains(got.Error, sandbox.KeyWritable) || !strings.Contains(got.Error, sandbox.KeyOff) {
			t.Fatalf("a verify that writes %s: %s %q %q", target, got.State, got.Error, got.OutputTail)
		}
		if _, err := os.Stat(target); err == nil {
			t.Fatalf("%s was written", target)
		}
		if r.tip("main") != before {
			t.Fatal("a red verify moved main")
		}
	}

	target := filepath.Join(home, "allowed")
	if got := land("off", `echo fine > "`+target+`"`, nil); got.State != Landed {
		t.Fatalf("without the sandbox: %s %q %q", got.State, got.Error, got.OutputTail)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "fine\n" {
		t.Fatalf("without the sandbox the write did not happen: %q %v", b, err)
	}
}

// A sandbox that cannot be set up (no such codex) makes verify red, saying
// so and naming the opt-out; main does not move.
func TestVerifyWithoutACodexForTheSandbox(t *testing.T) {
	r := newRepo(t)
	r.commit(r.agent("a"), "a.txt", "a\n", "a")
	o := r.options()
	o.Verify = "true"
	o.Sandbox = &sandbox.Policy{Bin: filepath.Join(t.TempDir(), "no-codex"), Homes: t.TempDir()}
	q := r.open(o)
	before := r.tip("main")
	got := r.land(q, r.enqueue(q, "a").ID)
	if got.State != Failed || !strings.Contains(got.Error, "could not run in Codex's sandbox") || !strings.Contains(got.Error, sandbox.KeyOff) {
		t.Fatalf("verify without a codex: %s %q", got.State, got.Error)
	}
	if r.tip("main") != before {
		t.Fatal("main moved")
	}
}

// verify under a profile that denies the state directory, with the
// network on, as the daemon runs it: it writes the integration worktree,
// which lies in the state directory, and lands; it cannot list the state
// directory nor read another agent's worktree there.
func TestVerifyInTheSandboxCannotReadTheState(t *testing.T) {
	bin := codextest.Sandbox(t)
	r := newRepo(t)
	other := r.agent("other")
	r.write(other, "private.txt", "classified\n")
	r.commit(r.agent("eng"), "eng.txt", "eng\n", "eng")
	o := r.options()
	o.Verify = `set -e; echo built > out.bin; test -s out.bin; ! ls "` + r.layout.Dir + `"; ! cat "` + filepath.Join(other, "private.txt") + `"`
	o.Sandbox = &sandbox.Policy{Bin: bin, Homes: filepath.Join(t.TempDir(), "homes"), Network: true,
		Deny: []string{r.layout.Dir, r.worktrees()}}
	q := r.open(o)
	if got := r.land(q, r.enqueue(q, "eng").ID); got.State != Landed {
		t.Fatalf("verify: %s %q %q", got.State, got.Error, got.OutputTail)
	}
}
