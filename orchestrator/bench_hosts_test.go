package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/clones"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/procstat"
	"github.com/battyhq/batty/workspaces"
)

// BenchmarkHostMessage is the per-message wall time (the message written
// into the inbox → its outcome recorded) of an agent on another host over
// ssh against a local one, in one run: both run the real Codex CLI against
// the same mock, so the difference is the transport (one ssh connection,
// shared) and the streams it carries (transcript, reply, relay).
func BenchmarkHostMessage(b *testing.B) {
	h := newRemoteHarness(b)
	local := h.srv.WriteHome(b)
	p := h.project(b, "", fmt.Sprintf("  - name: here\n    codex:\n      bin: %s\n      codex_home: %s\n      sandbox: danger-full-access\n", codextest.CodexNative(b), local))
	r := h.start(p, nil)
	defer r.stop(b)
	for _, agent := range []string{"eng", "here"} {
		// Untimed: the thread exists before timing starts.
		p.sendAndWait(r, agent, "warm up [[mock:reply WARM]]", "completed")
	}
	// Interleaved, the order swapped every round, so that both see the
	// same machine; each sub-benchmark reports its half.
	// A benchmark with sub-benchmarks runs once (b.N is 1): the rounds
	// are fixed.
	const rounds = 20
	took := map[string][]time.Duration{}
	for i := range rounds {
		order := []string{"here", "eng"}
		if i%2 == 1 {
			order = []string{"eng", "here"}
		}
		for _, agent := range order {
			t0 := time.Now()
			p.sendAndWait(r, agent, fmt.Sprintf("message %d [[mock:reply OK]]", i), "completed")
			took[agent] = append(took[agent], time.Since(t0))
		}
	}
	for _, c := range []struct{ name, agent string }{{"local", "here"}, {"ssh", "eng"}} {
		b.Run(c.name, func(b *testing.B) {
			reportQuantiles(b, took[c.agent])
			b.ReportMetric(float64(len(took[c.agent])), "messages")
		})
	}
}

// BenchmarkHostFiftyAgents starts 50 agents on one host and measures what
// they cost once idle: how long from the daemon's start until every shim
// there has done its handshake (over one shared ssh connection), the
// resident memory of their shims on the host and of the ssh processes
// here, and their CPU over a 10 s idle window.
func BenchmarkHostFiftyAgents(b *testing.B) {
	const agents = 50
	const window = 10 * time.Second
	// One measurement, whatever -benchtime says: a run starts 50 shims and
	// waits 10 s (the group runs with the message benchmark's 20x).
	for range min(b.N, 1) {
		h := newRemoteHarness(b)
		p := h.project(b, "", "")
		team, err := os.ReadFile(filepath.Join(p.dir, "team.yaml"))
		if err != nil {
			b.Fatal(err)
		}
		p.writeTeam(strings.Replace(string(team), "  - name: eng\n", fmt.Sprintf("  - name: eng\n    instances: %d\n", agents), 1))
		t0 := time.Now()
		r := h.start(p, nil)
		waitFor(b, "every agent idle", func() bool {
			st := r.d.status()
			return len(st.Agents) == agents && !slices.ContainsFunc(st.Agents, func(a control.AgentStatus) bool { return a.State != "idle" })
		})
		up := time.Since(t0)
		remote := h.s.UserPIDs(b)
		sshs := sshProcesses(b, h.tr.ControlDir)
		c0 := ticksOf(remote) + ticksOf(sshs)
		w0 := time.Now()
		time.Sleep(window) // the measurement window itself
		cpu := float64(ticksOf(remote)+ticksOf(sshs)-c0) / procstat.ClockTicks / time.Since(w0).Seconds() * 100
		b.ReportMetric(up.Seconds(), "start-s")
		b.ReportMetric(float64(rssOf(remote))/1024, "host-rss-MB")
		b.ReportMetric(float64(rssOf(sshs))/1024, "ssh-rss-MB")
		b.ReportMetric(float64(len(sshs)), "ssh-procs")
		b.ReportMetric(cpu, "idle-cpu-%")
		r.stop(b)
	}
}

// reportQuantiles reports the median and 90th percentile of took in ms.
func reportQuantiles(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	q := func(f float64) float64 { return float64(took[int(f*float64(len(took)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.9), "p90-ms")
}

// sshProcesses returns the ssh processes here that use the control
// directory dir, where every ssh of the transport runs (its ControlPath
// is relative): the clients of the shims and the shared connection.
func sshProcesses(t testing.TB, dir string) []int {
	t.Helper()
	ps, err := procstat.List()
	if err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // as the kernel names a working directory
	}
	var pids []int
	for _, p := range ps {
		// A master may have renamed itself "ssh: <socket> [mux]".
		if len(p.Args) > 0 && (filepath.Base(p.Args[0]) == "ssh" || strings.HasPrefix(p.Args[0], "ssh: ")) {
			if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", p.PID)); err == nil && cwd == dir {
				pids = append(pids, p.PID)
			}
		}
	}
	return pids
}

// ticksOf sums the CPU ticks of pids (a process gone meanwhile counts 0).
func ticksOf(pids []int) int64 {
	var n int64
	for _, pid := range pids {
		if t, err := procstat.CPUTicks(pid); err == nil {
			n += t
		}
	}
	return n
}

// rssOf sums the resident memory of pids in kB.
func rssOf(pids []int) int64 {
	var n int64
	for _, pid := range pids {
		if kb, err := procstat.RSSKB(pid); err == nil {
			n += kb
		}
	}
	return n
}

// BenchmarkHostCommitPerTurn is the commit at the end of a worktree
// agent's turn in a repository of 2,000 small files, in one run: in a
// worktree here, and in a clone on a host over ssh (the commit there, the
// branch brought back here as a bundle). 3-files: 3 files edited before
// each commit; nothing: a turn that changed nothing. clone is the first
// preparation of the clone on the host (the whole repository sent as a
// bundle, checked out there), once, reported as its own metric.
func BenchmarkHostCommitPerTurn(b *testing.B) {
	h := newRemoteHarness(b)
	p := newProjectWith(b, "", "  - name: eng\n")
	git(b, p.dir, "init", "-q", "-b", "main")
	const files = 2000
	name := func(i int) string {
		return filepath.Join(fmt.Sprintf("dir%02d", i/100), fmt.Sprintf("file%03d.txt", i%100))
	}
	for i := range files {
		path := filepath.Join(p.dir, name(i))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(p.dir, ".gitignore"), []byte(".batty/\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	git(b, p.dir, "add", "-A")
	git(b, p.dir, "commit", "-q", "-m", "2,000 files")
	ctx := context.Background()
	repo, err := workspaces.Open(ctx, workspaces.Options{ProjectDir: p.dir, WorktreesDir: p.layout.WorktreesDir(), LockFile: p.layout.GitLock(), Env: gitEnv(b.TempDir()), MinFreeBytes: 1})
	if err != nil {
		b.Fatal(err)
	}
	batty, err := hosts.EnsureBatty(ctx, h.tr, h.s.Host, h.batty)
	if err != nil {
		b.Fatal(err)
	}
	impls := map[string]workspaces.Workspace{
		"local": workspaces.Local{Repo: repo, Agent: "here", Base: "main"},
		"ssh": &clones.Client{Transport: h.tr, Host: h.s.Host, Dir: h.dir, Repo: repo, Agent: "there", Base: "main", MinFree: 1,
			Batty: func(context.Context) (string, error) { return batty, nil }},
	}
	dirs := map[string]string{"local": repo.Path("here"), "ssh": cloneThere(h.dir, h.s.Home, "there")}
	t0 := time.Now()
	if _, err := impls["ssh"].Prepare(ctx, workspaces.PrepareOptions{}); err != nil {
		b.Fatal(err)
	}
	cloned := time.Since(t0)
	if _, err := impls["local"].Prepare(ctx, workspaces.PrepareOptions{}); err != nil {
		b.Fatal(err)
	}
	const rounds = 20
	took := map[string][]time.Duration{}
	for i := range rounds {
		order := []string{"local", "ssh"}
		if i%2 == 1 {
			order = []string{"ssh", "local"}
		}
		for _, impl := range order {
			for k := range 3 {
				path := filepath.Join(dirs[impl], name((i*3+k)%files))
				if err := os.WriteFile(path, []byte(fmt.Sprintf("turn %d\n", i)), 0o644); err != nil {
					b.Fatal(err)
				}
				if impl == "ssh" {
					os.Lchown(path, h.s.UID, h.s.GID)
				}
			}
			t0 := time.Now()
			if c, err := impls[impl].Commit(ctx, workspaces.CommitInfo{Subject: fmt.Sprint("turn ", i)}); err != nil || !c.Made {
				b.Fatalf("%s commit: %v %v", impl, c.Made, err)
			}
			took[impl+"/3-files"] = append(took[impl+"/3-files"], time.Since(t0))
			t0 = time.Now()
			if c, err := impls[impl].Commit(ctx, workspaces.CommitInfo{Subject: "nothing"}); err != nil || c.Made {
				b.Fatalf("%s empty commit: %v %v", impl, c.Made, err)
			}
			took[impl+"/nothing"] = append(took[impl+"/nothing"], time.Since(t0))
		}
	}
	for _, c := range []string{"local/3-files", "ssh/3-files", "local/nothing", "ssh/nothing"} {
		b.Run(c, func(b *testing.B) {
			reportQuantiles(b, took[c])
			if c == "ssh/3-files" {
				b.ReportMetric(float64(cloned)/float64(time.Millisecond), "clone-ms")
			}
		})
	}
}
