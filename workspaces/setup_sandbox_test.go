package workspaces

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/sandbox"
)

// setup in Codex's sandbox, through Prepare: it writes its worktree and
// the declared cache, and is recorded; a write into the project's checkout
// or the home directory fails it, naming the setting to change, writes
// nothing and records nothing; without the sandbox (workspace.sandbox:
// off) the same write works. Under denied directories it still writes its
// worktree, but reads nothing of them.
func TestSetupInTheSandbox(t *testing.T) {
	bin := codextest.Sandbox(t)
	f := newFixture(t, Options{})
	cache := filepath.Join(t.TempDir(), "mod")
	sb := &sandbox.Policy{Bin: bin, Homes: filepath.Join(t.TempDir(), "homes"), Writable: []string{cache}, Network: true}
	prepare := func(agent, setup string, sb *sandbox.Policy) error {
		t.Helper()
		_, err := Local{Repo: f.repo, Agent: agent, Base: "main"}.Prepare(context.Background(),
			PrepareOptions{Setup: setup, SetupTimeout: time.Minute, SetupSandbox: sb, GitTimeout: time.Minute})
		return err
	}
	marked := func(agent string) bool {
		_, err := os.Stat(filepath.Join(f.top, ".git", "worktrees", agent, SetupMarker))
		return err == nil
	}

	if err := prepare("in", `set -e; echo deps > node_modules; echo m > "`+cache+`/m"`, sb); err != nil {
		t.Fatalf("a setup that writes its worktree and the cache: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.repo.Path("in"), "node_modules")); err != nil || !marked("in") {
		t.Fatalf("the setup's file: %v; recorded %v", err, marked("in"))
	}

	// Under a profile that denies the state directory the worktrees lie
	// in, as the daemon runs it: the setup writes its own worktree, but
	// cannot list the state directory nor read another worktree.
	state := filepath.Join(f.root, "state")
	denied := *sb
	denied.Deny = []string{state, filepath.Dir(f.repo.Path("in"))}
	if err := prepare("denied", `set -e; echo deps > node_modules; ! ls "`+state+`"; ! cat "`+filepath.Join(f.repo.Path("in"), "node_modules")+`"`, &denied); err != nil {
		t.Fatalf("a setup in a denied state directory: %v", err)
	}
	if !marked("denied") {
		t.Fatal("the setup in a denied state directory was not recorded")
	}

	for _, target := range []string{filepath.Join(f.top, "escaped"), filepath.Join(f.root, "escaped")} {
		agent := "out-" + filepath.Base(filepath.Dir(target))
		err := prepare(agent, `echo pwned > "`+target+`"`, sb)
		var se *SetupError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), sandbox.KeyWritable) || !strings.Contains(err.Error(), sandbox.KeyOff) {
			t.Fatalf("a setup that writes %s: %v", target, err)
		}
		if _, err := os.Stat(target); err == nil {
			t.Fatalf("%s was written", target)
		}
		if marked(agent) {
			t.Fatal("a failed setup was recorded")
		}
	}

	target := filepath.Join(f.root, "allowed")
	if err := prepare("off", `echo fine > "`+target+`"`, nil); err != nil {
		t.Fatalf("without the sandbox: %v", err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "fine\n" {
		t.Fatalf("without the sandbox the write did not happen: %q %v", b, err)
	}
}
