package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/hosts/hoststest"
	"github.com/battyhq/batty/procstat"
)

// A worktree agent whose role moves from a host (a command host standing
// in for a pod) back here loses nothing: at its next preparation the
// clone's uncommitted work is committed there, its commits come into
// batty/eng here, the clone goes, and the agent works on here in a
// worktree of the same branch.
func TestE2EWorktreeAgentMovesFromAHostToHere(t *testing.T) {
	srv := codextest.NewServer(t)
	pod := hoststest.NewPod(t, codextest.CodexNative(t))
	podDir := filepath.Join(pod.Home, "proj")
	podHome := srv.WriteHomeWith(t, codextest.HomeConfig{Dir: filepath.Join(pod.Home, ".codex")})
	here := srv.WriteHome(t)
	teamOn := func(hostsLine, bin, home string) string {
		return fmt.Sprintf(`name: moves
timeouts:
  shutdown: 5s
hosts:
  - name: pod0
    command: [%s]
    dir: %s
roles:
  - name: eng
    workspace: worktree
%s    codex:
      bin: %s
      codex_home: %s
      sandbox: danger-full-access
`, pod.Command, podDir, hostsLine, bin, home)
	}
	p := &testProject{t: t, dir: t.TempDir(), mark: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())}
	p.fakeLog = filepath.Join(p.dir, "fake.log")
	p.writeTeam(teamOn("    hosts: [pod0]\n", pod.Codex, podHome))
	gitProject(t, p)
	batty := testBinary(t)
	withPod := func(o *Options) {
		o.Transport, o.HostBatty = &hosts.Transport{}, batty
		o.CheckTimeout = 30 * time.Second
	}
	r := p.start(withPod)
	if st := r.finished(t, p.send("eng", "human", "one [[mock:shell printf '1\\n' > one.txt]]")); st != "completed" {
		t.Fatalf("status %s", st)
	}
	r.stop(t)
	// What a killed turn left in the clone, never committed.
	clone := cloneThere(podDir, pod.Home, "eng")
	if err := os.WriteFile(filepath.Join(clone, "pending.txt"), []byte("pending\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	p.writeTeam(teamOn("", codextest.CodexNative(t), here))
	r = p.start(withPod)
	r.waitEvent(t, "the clone's work brought here", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWorkspaceCommitted && e.Agent == "eng" && e.Detail == "the work of its clone on the host it left, brought here"
	})
	wt := filepath.Join(p.layout.WorktreesDir(), "eng")
	for _, name := range []string{"one.txt", "pending.txt"} {
		waitFor(t, name+" in the worktree here", func() bool { _, err := os.Stat(filepath.Join(wt, name)); return err == nil })
	}
	if _, err := os.Stat(clone); !os.IsNotExist(err) {
		t.Fatalf("the clone on the pod is still there: %v", err)
	}
	id := p.send("eng", "human", "two [[mock:shell printf '2\\n' > two.txt]]")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	r.waitEvent(t, "the commit here", func(e eventlog.Event) bool { return e.Type == eventlog.EvWorkspaceCommitted && e.Message == id })
	for _, name := range []string{"one.txt", "pending.txt", "two.txt"} {
		git(t, p.dir, "cat-file", "-e", "batty/eng:"+name)
	}
	r.stop(t)
	waitFor(t, "nothing left running in the pod", func() bool { return len(procstat.Under(pod.Root)) == 0 })
}
