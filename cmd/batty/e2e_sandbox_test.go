package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
)

// An agent whose working directory lies outside the project runs under
// codex's workspace-write sandbox, and can still message its team: the
// daemon lets the sandbox write the inboxes (--add-dir). /tmp, where the
// test's directories live, is taken out of the sandbox's writable roots so
// only that grant makes the inboxes writable.
func TestE2ESandboxedAgentOutsideTheProjectCanSend(t *testing.T) {
	codexBin := codextest.Codex(t)
	if out, err := exec.Command(codexBin, "sandbox", "--", "/bin/true").CombinedOutput(); err != nil {
		t.Skipf("codex's sandbox cannot run on this machine (%v): %s", err, out)
	}
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := &teamRun{t: t, bin: buildBatty(t), dir: t.TempDir(), mark: fmt.Sprintf("e2e-sandbox-%d", time.Now().UnixNano())}
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(r.dir, "team.yaml"), []byte(fmt.Sprintf(`name: sandboxed
codex:
  bin: %s
  codex_home: %s
  sandbox: workspace-write
  config:
    sandbox_workspace_write.exclude_slash_tmp: true
    sandbox_workspace_write.exclude_tmpdir_env_var: true
roles:
  - name: architect
    cwd: %s
    talks_to: [eng]
  - name: eng
`, codexBin, home, elsewhere)), 0o644)
	t.Cleanup(func() {
		r.batty("stop", "--timeout", "2s")
		codextest.AssertNoMarked(t, r.mark)
	})
	r.must("start")

	r.must("send", "architect", "[[mock:shell batty send eng from-the-sandbox && touch ../outside-the-workspace]]")
	st := r.waitStatus("the architect's turn", func(st control.Status) bool {
		a := agentStatus(st, "architect")
		return a.TurnsCompleted == 1 || a.LastError != ""
	})
	if a := agentStatus(st, "architect"); a.TurnsCompleted != 1 {
		t.Fatalf("architect: %+v", a)
	}
	// The architect's shell ran `batty send` to completion before its turn
	// ended, so the message is in eng's inbox now.
	if eng := agentStatus(st, "eng"); eng.TurnsCompleted == 0 && eng.Backlog == 0 {
		out, _, _ := r.batty("inbox", "--json")
		t.Fatalf("the sandboxed `batty send` did not deliver; human inbox:\n%s", out)
	}
	r.waitStatus("eng's turn", func(st control.Status) bool {
		return agentStatus(st, "eng").TurnsCompleted == 1
	})
	// The sandbox still holds: only the workspace and the inboxes opened.
	if _, err := os.Stat(filepath.Join(filepath.Dir(elsewhere), "outside-the-workspace")); err == nil {
		t.Fatal("a sandboxed command wrote outside its workspace")
	}
}

// An agent whose sandbox has network access runs `"$BATTY_BIN" pause` and
// `"$BATTY_BIN" stop`: its permission profile denies the state directory,
// the control socket with it, so neither reaches the daemon (which would
// refuse them besides, see control's peer checks); the team keeps running
// unpaused and takes the next message.
func TestE2ESandboxedAgentCannotPauseOrStopTheTeam(t *testing.T) {
	codexBin := codextest.Codex(t)
	if out, err := exec.Command(codexBin, "sandbox", "--", "/bin/true").CombinedOutput(); err != nil {
		t.Skipf("codex's sandbox cannot run on this machine (%v): %s", err, out)
	}
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := &teamRun{t: t, bin: buildBatty(t), dir: t.TempDir(), mark: fmt.Sprintf("e2e-boundary-%d", time.Now().UnixNano()),
		env: []string{"HOME=" + t.TempDir()}}
	os.WriteFile(filepath.Join(r.dir, "team.yaml"), []byte(fmt.Sprintf(`name: boundary
codex:
  bin: %s
  codex_home: %s
  sandbox: workspace-write
  config:
    sandbox_workspace_write.network_access: true
roles:
  - name: eng
`, codexBin, home)), 0o644)
	t.Cleanup(func() {
		r.batty("stop", "--timeout", "2s")
		codextest.AssertNoMarked(t, r.mark)
	})
	r.must("start", "--no-tmux")
	before := r.status().Daemon.PID

	r.must("send", "eng", `[[mock:shell "$BATTY_BIN" pause >/dev/null 2>&1 || echo pause-failed; `+
		`"$BATTY_BIN" stop >/dev/null 2>&1 || echo stop-failed]]`)
	r.waitStatus("eng's turn", func(st control.Status) bool {
		a := agentStatus(st, "eng")
		return a.TurnsCompleted == 1 || a.LastError != ""
	})
	inbox := r.must("inbox", "--json")
	for _, want := range []string{"pause-failed", "stop-failed"} {
		if !strings.Contains(inbox, want) {
			t.Fatalf("the agent's reply lacks %q:\n%s", want, inbox)
		}
	}
	st := r.status()
	if st.Dispatch.Paused || st.Daemon.PID != before {
		t.Fatalf("the agent paused or stopped the team: dispatch %+v, daemon %d (was %d)", st.Dispatch, st.Daemon.PID, before)
	}
	r.must("send", "eng", "still running?")
	r.waitStatus("eng's second turn", func(st control.Status) bool { return agentStatus(st, "eng").TurnsCompleted == 2 })
}
