package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/clones"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/hosts/hoststest"
	"github.com/battyhq/batty/procstat"
)

// A user's walk through a worktree engineer on another host, with the
// real binary and the real Codex CLI: the host is a "pod" reached through
// a command (as `kubectl exec -i POD --` reaches one: a wrapper giving it
// a home of its own), whose project directory holds nothing. batty
// installs itself there; the engineer writes a file through the shell
// tool in its clone there and tells the human with `batty send` (the
// roster batty wrote stands for the team file); its commit comes back
// into batty/eng here, `batty diff` and `batty status` show it, `batty
// merge` lands it on main, the user's checkout comes along, and `batty
// stop` leaves nothing running in the pod.
func TestE2EWorktreeAgentOnAHostAsAUserSeesIt(t *testing.T) {
	srv := codextest.NewServer(t)
	pod := hoststest.NewPod(t, codextest.CodexNative(t))
	home := pod.Home
	hostDir := filepath.Join(home, "proj") // does not exist yet
	codexHome := srv.WriteHomeWith(t, codextest.HomeConfig{Dir: filepath.Join(home, ".codex")})
	codexBin, wrapper := pod.Codex, pod.Command
	r := &teamRun{t: t, bin: buildBatty(t), dir: t.TempDir(), mark: fmt.Sprintf("e2e-host-worktree-%d", time.Now().UnixNano())}
	// verify runs here, in the sandbox of the codex here where it runs.
	local, err := codextest.SandboxBinary()
	wsSandbox := ""
	if err != nil {
		t.Logf("verify runs without a sandbox: %v", err)
		local, wsSandbox = "codex", "  sandbox: off\n"
	}
	teamFile := fmt.Sprintf(`name: podteam
timeouts:
  shutdown: 5s
codex:
  bin: %s
workspace:
  verify: test -s made.txt
%shosts:
  - name: pod0
    command: [%s]
    dir: %s
roles:
  - name: eng
    hosts: [pod0]
    workspace: worktree
    codex:
      bin: %s
      codex_home: %s
      sandbox: danger-full-access
`, local, wsSandbox, wrapper, hostDir, codexBin, codexHome)
	for name, text := range map[string]string{"team.yaml": teamFile, ".gitignore": ".batty/\n", "README": "hello\n"} {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, r.dir, "init", "-q", "-b", "main")
	gitIn(t, r.dir, "add", "-A")
	gitIn(t, r.dir, "commit", "-q", "-m", "initial")
	t.Cleanup(func() {
		r.batty("stop", "--timeout", "2s")
		codextest.AssertNoMarked(t, r.mark)
	})

	r.must("validate")
	r.must("start", "--no-tmux")
	r.must("send", "eng", "make it [[mock:shell printf 'made in the pod\\n' > made.txt && batty send human done-in-the-pod]]")
	st := r.waitStatus("eng's turn committed", func(st control.Status) bool {
		a := agentStatus(st, "eng")
		return a.TurnsCompleted >= 1 && a.Workspace != nil && a.Workspace.Ahead == 1 && a.Workspace.Dirty == 0
	})
	// The clone is in the project's state directory in the pod, out of
	// the project directory there.
	clone := hosts.ExpandHome(path.Join(hosts.WorktreesThere(hostDir), "eng"), home)
	where := clones.Where("pod0", hostDir, "eng")
	if ws := agentStatus(st, "eng").Workspace; ws.Path != where || !ws.Exists || ws.Branch != "batty/eng" {
		t.Fatalf("status workspace %+v", ws)
	}
	if text := r.must("status"); !strings.Contains(text, "pod0:") {
		t.Fatalf("the status table does not say where eng works:\n%s", text)
	}
	if got := gitIn(t, r.dir, "show", "batty/eng:made.txt"); got != "made in the pod" {
		t.Fatalf("batty/eng here holds %q", got)
	}
	if _, err := os.Stat(filepath.Join(clone, "made.txt")); err != nil {
		t.Fatalf("not made in the clone in the pod: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(hostDir, ".batty")); !os.IsNotExist(err) {
		t.Fatalf("batty wrote in the project directory in the pod: %v", err)
	}
	if diff := r.must("diff", "eng", "--stat"); !strings.Contains(diff, "made.txt") {
		t.Fatalf("batty diff eng --stat:\n%s", diff)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(r.must("inbox", "--json"), "done-in-the-pod") {
		if time.Now().After(deadline) {
			t.Fatalf("the engineer's message never reached the human's inbox:\n%s", r.must("inbox", "--json"))
		}
		time.Sleep(100 * time.Millisecond) // the daemon is another process
	}

	r.must("merge", "eng")
	st = r.waitStatus("eng landed", func(st control.Status) bool {
		return len(st.Landings) > 0 && st.Landings[len(st.Landings)-1].State == "landed"
	})
	if main := gitIn(t, r.dir, "rev-parse", "main"); st.Landings[len(st.Landings)-1].Commit != main {
		t.Fatalf("landing %+v, main %s", st.Landings[len(st.Landings)-1], main)
	}
	if b, _ := os.ReadFile(filepath.Join(r.dir, "made.txt")); string(b) != "made in the pod\n" {
		t.Fatalf("the user's checkout after the landing: %q", b)
	}
	r.must("stop")
	// A stopped team's status still says where eng works.
	if ws := agentStatus(r.status(), "eng").Workspace; ws == nil || ws.Path != where || ws.Branch != "batty/eng" {
		t.Fatalf("the stopped team's status workspace %+v", ws)
	}
	// The work landed: the workspace may go, the clone in the pod with it.
	if out := r.must("workspace", "prune", "eng"); !strings.Contains(out, "clone on host pod0") {
		t.Fatalf("batty workspace prune eng: %s", out)
	}
	if _, err := os.Stat(clone); !os.IsNotExist(err) {
		t.Fatalf("the clone in the pod survived the prune: %v", err)
	}
	if out, _, code := r.batty("diff", "eng"); code == 0 {
		t.Fatalf("batty/eng survived the prune:\n%s", out)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		left := procstat.Under(pod.Root)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left running in the pod after the stop: %v", left)
		}
		time.Sleep(100 * time.Millisecond) // processes of another tree
	}
}
