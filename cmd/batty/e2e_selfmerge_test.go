package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
)

// With the real Codex CLI in batty's default workspace-write sandbox, an
// engineer writes a file and runs `"$BATTY_BIN" merge eng` in the same
// turn, through its shell tool in a login shell, as a model told "when
// your work is ready, run batty merge" does. The landing waits for the
// turn's commit (before, the queue found nothing on the branch and
// recorded "nothing to land"), then lands the file on main, the user's
// checkout coming along.
func TestE2EAnAgentsOwnMergeInItsTurnLandsItsWork(t *testing.T) {
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := newTeamRun(t, "e2e-selfmerge")
	// The login shell reads a scratch HOME, not this machine's.
	r.env = []string{"HOME=" + t.TempDir()}
	r.writeTeam(fmt.Sprintf(`name: selfmerge
codex:
  bin: %s
  codex_home: %s
workspace:
  verify: test -s feature.txt
%sroles:
  - name: eng
    workspace: worktree
`, codexBin, home, sandboxOrOff(t)))
	for name, text := range map[string]string{"README": "hello\n", ".gitignore": ".batty/\n"} {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, r.dir, "init", "-q", "-b", "main")
	gitIn(t, r.dir, "add", "-A")
	gitIn(t, r.dir, "commit", "-q", "-m", "initial")
	before := gitIn(t, r.dir, "rev-parse", "main")

	r.must("start", "--no-tmux")
	r.must("send", "eng", `[[mock:shell printf 'from the turn\n' > feature.txt && "$BATTY_BIN" merge eng]]`)
	st := r.waitStatus("eng's landing to end", func(st control.Status) bool {
		return len(st.Landings) > 0 && (st.Landings[0].State == "landed" || st.Landings[0].State == "nothing" || st.Landings[0].State == "failed")
	})
	if l := st.Landings[0]; l.State != "landed" || l.By != "eng" || l.Agent != "eng" {
		t.Fatalf("the agent's own landing: %+v", l)
	}
	if got := gitIn(t, r.dir, "show", "main:feature.txt"); got != "from the turn" {
		t.Fatalf("main's feature.txt %q", got)
	}
	if gitIn(t, r.dir, "rev-parse", "main") == before {
		t.Fatal("main did not move")
	}
	if b, _ := os.ReadFile(filepath.Join(r.dir, "feature.txt")); strings.TrimSpace(string(b)) != "from the turn" {
		t.Fatalf("the user's checkout was not brought along: %q", b)
	}
	if inbox := r.must("inbox", "--json"); !strings.Contains(inbox, "queued the landing of batty/eng") {
		t.Fatalf("the agent did not run batty merge:\n%s", inbox)
	}
}
