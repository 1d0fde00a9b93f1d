package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/hosts/hoststest"
	"github.com/battyhq/batty/procstat"
)

// TestE2EPodHost runs an agent on a host reached through a command, as
// `kubectl exec -i POD --` reaches a pod (docs/scaling.md): here a local
// wrapper that gives the "pod" a home of its own and runs its arguments.
// batty installs itself in the pod's home, the real Codex CLI there
// answers, the transcript is here, and after the stop nothing runs in the
// pod's directories.
func TestE2EPodHost(t *testing.T) {
	srv := codextest.NewServer(t)
	pod := hoststest.NewPod(t, codextest.CodexNative(t))
	home, dir := pod.Home, filepath.Join(pod.Home, "proj")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	codexHome := srv.WriteHomeWith(t, codextest.HomeConfig{Dir: filepath.Join(home, ".codex")})
	// The image's Codex CLI (a path under the home here would name the
	// same path under the pod's home).
	codexBin, wrapper, calls := pod.Codex, pod.Command, pod.Calls
	p := &testProject{t: t, dir: t.TempDir(), mark: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())}
	p.fakeLog = filepath.Join(p.dir, "fake.log")
	p.writeTeam(fmt.Sprintf(`name: pods
timeouts:
  shutdown: 5s
hosts:
  - name: pod0
    command: [%s]
    dir: %s
roles:
  - name: eng
    hosts: [pod0]
    codex:
      bin: %s
      codex_home: %s
      sandbox: danger-full-access
`, wrapper, dir, codexBin, codexHome))
	batty := testBinary(t)
	r := p.start(func(o *Options) {
		o.Transport, o.HostBatty = &hosts.Transport{}, batty
		o.CheckTimeout = 30 * time.Second
	})
	if _, err := os.Stat(filepath.Join(home, hosts.CacheDir, batty.Key, "batty")); err != nil {
		t.Fatalf("batty not installed in the pod: %v", err)
	}
	id := p.send("eng", "human", "hello pod [[mock:reply FROM-THE-POD]]")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	if o := p.recorded("eng", id); o.Reply != "FROM-THE-POD" {
		t.Fatalf("outcome %+v", o)
	}
	waitFor(t, "the pod agent's transcript here", func() bool {
		b, _ := os.ReadFile(p.layout.Transcript("eng"))
		return strings.Contains(string(b), "FROM-THE-POD")
	})
	b, _ := os.ReadFile(calls)
	if !strings.Contains(string(b), "shim") || !strings.Contains(string(b), "--stdio") {
		t.Fatalf("the pod's command never started a shim:\n%s", b)
	}
	if strings.Contains(string(b), "FROM-THE-POD") || strings.Contains(string(b), "developer_instructions") {
		t.Fatalf("a message or the instructions travelled on the pod's command line:\n%s", b)
	}
	r.stop(t)
	waitFor(t, "nothing left running in the pod", func() bool { return len(procstat.Under(pod.Root)) == 0 })
}
