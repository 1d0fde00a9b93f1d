package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/threads"
)

// The real Codex CLI, under its workspace-write sandbox: an agent's turn
// holds a word and a secret; the agent is reset; on its fresh thread its
// shell runs `"$BATTY_BIN" search <word>` and `"$BATTY_BIN" threads show
// <archived thread>`. Both are answered by the daemon through the agent's
// outbox: the search names the archived turn's message, its secret
// redacted, and the thread shows the archived reply. Reading the state
// directory from the sandbox still fails.
func TestE2EAnAgentRecallsItsArchivedThread(t *testing.T) {
	codexBin := codextest.Codex(t)
	if out, err := exec.Command(codexBin, "sandbox", "--", "/bin/true").CombinedOutput(); err != nil {
		t.Skipf("codex's sandbox cannot run on this machine (%v): %s", err, out)
	}
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := &teamRun{t: t, bin: buildBatty(t), dir: t.TempDir(), mark: fmt.Sprintf("e2e-recall-%d", time.Now().UnixNano()),
		env: []string{"HOME=" + t.TempDir()}}
	if err := os.WriteFile(filepath.Join(r.dir, "team.yaml"), []byte(fmt.Sprintf(`name: recall
codex:
  bin: %s
  codex_home: %s
  sandbox: workspace-write
roles:
  - name: eng
`, codexBin, home)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.batty("stop", "--timeout", "2s")
		codextest.AssertNoMarked(t, r.mark)
	})
	r.must("start", "--no-tmux")

	queued := r.must("send", "eng", "remember zanzibarword password=hunter2hunter2 [[mock:reply noted-1]]")
	first := strings.Fields(queued)[1]
	r.waitStatus("eng's first turn", func(st control.Status) bool { return agentStatus(st, "eng").TurnsCompleted == 1 })
	r.must("reset", "eng", "--reason", "a fresh start")
	var got struct{ Threads []threads.Thread }
	if err := json.Unmarshal([]byte(r.must("threads", "eng", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	archived := ""
	for _, th := range got.Threads {
		if th.State == threads.StateArchived {
			archived = th.ID
		}
	}
	if archived == "" {
		t.Fatalf("no archived thread: %+v", got.Threads)
	}

	script := `ls "$BATTY_DIR" >/dev/null 2>&1 && echo STATE-READABLE || echo STATE-DENIED; ` +
		`o=$("$BATTY_BIN" search zanzibarword 2>&1); echo "$o" | grep -o 'message [^ ]*' | head -1; ` +
		`case "$o" in *hunter2*) echo SECRET-LEAKED;; esac; case "$o" in *REDACTED*) echo REDACTED-OK;; esac; ` +
		`"$BATTY_BIN" threads show ` + archived + ` | grep -q noted-1 && echo SHOW-OK`
	r.must("send", "eng", "[[mock:shell "+script+"]]")
	r.waitStatus("eng's turn on its fresh thread", func(st control.Status) bool {
		a := agentStatus(st, "eng")
		return a.TurnsCompleted == 2 || a.LastError != ""
	})
	reply := r.must("inbox", "--json")
	for _, want := range []string{"STATE-DENIED", "message " + first, "REDACTED-OK", "SHOW-OK"} {
		if !strings.Contains(reply, want) {
			t.Errorf("the agent's reply lacks %q:\n%s", want, reply)
		}
	}
	for _, not := range []string{"STATE-READABLE", "SECRET-LEAKED"} {
		if strings.Contains(reply, not) {
			t.Errorf("the agent's reply has %q:\n%s", not, reply)
		}
	}
}
