package shim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/appserver"
	"github.com/battyhq/batty/codex/appshare"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

// sharedServer is a broker of one shared app-server for the shims of a
// test, as the daemon runs it for codex.app_server: per-account.
type sharedServer struct {
	b    *appshare.Broker
	srv  *codextest.Server
	home string
	bin  string
	mark string
}

// startSharedServer starts a broker on the real CLI against a new mock,
// its process carrying a new test mark and args (shimconfig.SharedServerArgs of the
// shims' settings). It admits every peer. Close is the caller's.
func startSharedServer(t *testing.T, args []string) *sharedServer {
	t.Helper()
	bin := codextest.CodexNative(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	mark := newTestMark()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CODEX_HOME=") && !strings.HasPrefix(kv, codextest.MarkEnv+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, "CODEX_HOME="+home, codextest.MarkEnv+"="+mark)
	dir, err := os.MkdirTemp("", "shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	b, err := appshare.Listen(context.Background(), appshare.Options{
		Server: appserver.Options{Bin: bin, Args: args, Env: env, Cwd: dir},
		Socket: filepath.Join(dir, "s"),
		Allow:  func(pid int) (string, error) { return fmt.Sprintf("pid-%d", pid), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return &sharedServer{b: b, srv: srv, home: home, bin: bin, mark: mark}
}

// startSharedShim starts a real shim whose turns run on a shared
// app-server of its own test (runtimePerAccount), with mod applied; the
// server is closed before the shim's cleanup checks for leftovers.
func startSharedShim(t *testing.T, mod func(*shimconfig.Config)) (*harness, *codextest.Server) {
	t.Helper()
	var probe shimconfig.Config
	if mod != nil {
		mod(&probe)
	}
	ss := startSharedServer(t, shimconfig.SharedServerArgs(probe.Exec))
	h := ss.shim(t, "tester", t.TempDir(), ss.mark, mod)
	t.Cleanup(func() { _ = ss.b.Close() })
	return h, ss.srv
}

// shim starts a real shim of agent on ss in cwd, marked with mark (the
// server's, for a test of one shim; another for each of several, whose
// cleanups each check their own), with mod applied.
func (ss *sharedServer) shim(t *testing.T, agent, cwd, mark string, mod func(*shimconfig.Config)) *harness {
	t.Helper()
	h := startShimMarked(t, mark, func(c *shimconfig.Config) {
		c.Agent = agent
		c.CodexBin = ss.bin
		c.Env = []string{"CODEX_HOME=" + ss.home}
		c.Cwd = cwd
		c.Exec.SkipGitRepoCheck = true
		c.StopGrace = 2 * time.Second
		if mod != nil {
			mod(c)
		}
		c.Runtime = shimconfig.RuntimeAppServer
		c.AppServerSocket = ss.b.Socket()
	})
	h.spare = func() []int { return []int{ss.b.Pid()} }
	return h
}

// close returns a cleanup that closes the broker and checks that nothing
// carrying the server's mark is left.
func (ss *sharedServer) close(t *testing.T) func() {
	return func() {
		_ = ss.b.Close()
		codextest.AssertNoMarked(t, ss.mark)
	}
}

// TestSharedAgentsKeepApart runs two agents' shims on one shared
// app-server in Codex's sandbox (workspace-write, each with its worktree
// and an added outbox): each agent's command sees its own BATTY_AGENT and
// working directory, writes its own worktree and outbox, and cannot write
// the other's; once both shims and the server have stopped, no process
// of theirs is left.
func TestSharedAgentsKeepApart(t *testing.T) {
	codextest.Sandbox(t)
	root, err := os.MkdirTemp("", "keepapart-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	type agent struct{ name, work, out string }
	var agents []agent
	for _, n := range []string{"alpha", "beta"} {
		a := agent{name: n, work: filepath.Join(root, "worktrees", n), out: filepath.Join(root, "outboxes", n)}
		for _, d := range []string{a.work, a.out} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		agents = append(agents, a)
	}
	ss := startSharedServer(t, []string{"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true"})
	var hs []*harness
	for _, a := range agents {
		a := a
		hs = append(hs, ss.shim(t, a.name, a.work, newTestMark(), func(c *shimconfig.Config) {
			c.Exec.Sandbox = codex.SandboxWorkspaceWrite
			c.Exec.ApprovalPolicy = codex.ApprovalNever
			c.Exec.AddDirs = []string{a.out}
		}))
	}
	t.Cleanup(ss.close(t))
	for i, a := range agents {
		o := agents[1-i]
		cmd := fmt.Sprintf("echo AGENT=$BATTY_AGENT PWD=$(pwd); touch %s/own && echo OWN-WORK; touch %s/own && echo OWN-OUT; touch %s/stolen && echo OTHER-WORK; touch %s/stolen && echo OTHER-OUT",
			a.work, a.out, o.work, o.out)
		hs[i].send("m", "[[mock:shell "+cmd+"]]")
	}
	for i, a := range agents {
		_, tf := turnEvents(hs[i], "m")
		if tf.Status != protocol.TurnCompleted {
			t.Fatalf("%s's turn = %+v", a.name, tf)
		}
		for _, want := range []string{"AGENT=" + a.name + " PWD=" + a.work, "OWN-WORK", "OWN-OUT"} {
			if !strings.Contains(tf.Reply, want) {
				t.Errorf("%s's command printed %q, want %q", a.name, tf.Reply, want)
			}
		}
		if strings.Contains(tf.Reply, "OTHER-") {
			t.Errorf("%s's command wrote into the other agent's directories: %q", a.name, tf.Reply)
		}
	}
	for _, a := range agents {
		for _, f := range []string{filepath.Join(a.work, "stolen"), filepath.Join(a.out, "stolen")} {
			if _, err := os.Lstat(f); err == nil {
				t.Errorf("%s was written by the other agent", f)
			}
		}
	}
	if ss.b.Starts() != 1 {
		t.Errorf("%d shared processes started, want 1", ss.b.Starts())
	}
}

// TestSharedLeftoversKilledPerAgent: a command one agent leaves running
// on the shared app-server (detached into its own session) is killed at
// the end of that agent's turn, while the other agent's command, running
// at that moment on the same process, is left alone and completes.
func TestSharedLeftoversKilledPerAgent(t *testing.T) {
	ss := startSharedServer(t, nil)
	a := ss.shim(t, "alpha", t.TempDir(), newTestMark(), nil)
	b := ss.shim(t, "beta", t.TempDir(), newTestMark(), nil)
	t.Cleanup(ss.close(t))
	b.send("slow", "[[mock:shell sleep 2.5; echo BETA_DONE]]")
	waitForProcess(t, ss.mark, "sleep 2.5")
	a.send("d", "[[mock:shell setsid sleep 3145 >/dev/null 2>&1 </dev/null & sleep 0.3; kill -0 $! && echo DETACHED_ALIVE]]")
	if _, tf := turnEvents(a, "d"); tf.Status != protocol.TurnCompleted || !strings.Contains(tf.Reply, "DETACHED_ALIVE") {
		t.Fatalf("alpha's turn = %+v", tf)
	}
	for _, pid := range codextest.Marked(ss.mark) {
		if cmd := codextest.Cmdline(pid); strings.Contains(cmd, "sleep 3145") {
			t.Fatalf("alpha's detached command outlived its turn: pid %d %q", pid, cmd)
		}
	}
	if _, tf := turnEvents(b, "slow"); tf.Status != protocol.TurnCompleted || !strings.Contains(tf.Reply, "BETA_DONE") {
		t.Fatalf("beta's turn, running while alpha's ended = %+v", tf)
	}
}

// TestSharedStuckTurnStallsNoOther: one agent's turn stuck on the shared
// process (its command never ends) holds back no other agent: another's
// messages are answered meanwhile, and the stuck turn is interrupted
// alone, the other's thread going on after it.
func TestSharedStuckTurnStallsNoOther(t *testing.T) {
	ss := startSharedServer(t, nil)
	stuck := ss.shim(t, "alpha", t.TempDir(), newTestMark(), nil)
	other := ss.shim(t, "beta", t.TempDir(), newTestMark(), nil)
	t.Cleanup(ss.close(t))
	stuck.send("stuck", "[[mock:shell sleep 600]]")
	waitForProcess(t, ss.mark, "sleep 600")
	for _, id := range []string{"b1", "b2"} {
		other.send(id, "meanwhile [[mock:reply BETA-"+id+"]]")
		if _, tf := turnEvents(other, id); tf.Status != protocol.TurnCompleted || !strings.Contains(tf.Reply, "BETA-"+id) {
			t.Fatalf("beta's turn %s beside alpha's stuck one = %+v", id, tf)
		}
	}
	stuck.command(protocol.Interrupt{Reason: "test"})
	if _, tf := turnEvents(stuck, "stuck"); tf.Status != protocol.TurnInterrupted {
		t.Fatalf("alpha's stuck turn after the interrupt = %+v", tf)
	}
	other.send("b3", "after [[mock:reply BETA-b3]]")
	if _, tf := turnEvents(other, "b3"); tf.Status != protocol.TurnCompleted || !strings.Contains(tf.Reply, "BETA-b3") {
		t.Fatalf("beta's turn after alpha's interrupt = %+v", tf)
	}
	if ss.b.Starts() != 1 {
		t.Errorf("%d shared processes started, want 1", ss.b.Starts())
	}
}

// TestSharedServerKilledMidTurn: the shared process killed with SIGKILL
// under a running turn ends that turn once, as killed (the daemon retries
// it); the broker starts another process and the agent's next message
// runs on it, on the same thread, whose request carries the earlier turn.
func TestSharedServerKilledMidTurn(t *testing.T) {
	h, srv := startSharedShim(t, nil)
	h.send("m1", "first FIRST-4417 [[mock:reply ONE]]")
	ev, tf := turnEvents(h, "m1")
	thread := eventOf(t, ev, kThread).(protocol.ThreadChanged).ThreadID
	if tf.Status != protocol.TurnCompleted {
		t.Fatalf("first turn = %+v", tf)
	}
	h.send("m2", "[[mock:slow 60]]")
	if err := srv.WaitRequests(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	pid := 0
	for _, p := range h.spare() {
		pid = p
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, tf = turnEvents(h, "m2")
	if tf.Status != protocol.TurnFailed || tf.Failure != protocol.FailKilled {
		t.Fatalf("turn under a killed shared process = %+v, want failed, killed", tf)
	}
	h.send("m3", "[[mock:reply THREE]]")
	_, tf = turnEvents(h, "m3")
	if tf.Status != protocol.TurnCompleted || tf.Reply != "THREE" || tf.ThreadID != thread {
		t.Fatalf("turn after the restart = %+v, want completed on %s", tf, thread)
	}
	reqs := srv.Requests()
	if !strings.Contains(strings.Join(reqs[len(reqs)-1].UserTexts, "\n"), "FIRST-4417") {
		t.Error("the request after the restart lacks the first turn")
	}
}

func TestSharedThreadConfig(t *testing.T) {
	env := []string{"PATH=/usr/bin", "PATH=/opt/batty:/usr/bin", "BATTY_AGENT=dev", "BATTY_DIR=/s", "BATTY_PROJECT=/p",
		EnvBatty + "=/opt/batty/batty", "OPENAI_API_KEY=sk-secret", "CODEX_HOME=/h"}
	got := sharedThreadConfig(codex.ExecOptions{ReasoningEffort: "high", AddDirs: []string{"/s/outboxes/dev"}}, env, "/s/dev")
	set, _ := got["shell_environment_policy.set"].(map[string]string)
	want := map[string]string{"PATH": "/opt/batty:/usr/bin", "BATTY_AGENT": "dev", "BATTY_DIR": "/s", "BATTY_PROJECT": "/p",
		EnvBatty: "/opt/batty/batty", "BATTY_AGENT_MARK": "/s/dev"}
	if len(set) != len(want) {
		t.Fatalf("environment %v, want %v", set, want)
	}
	for k, v := range want {
		if set[k] != v {
			t.Errorf("%s = %q, want %q", k, set[k], v)
		}
	}
	if got["model_reasoning_effort"] != "high" {
		t.Errorf("effort %v", got["model_reasoning_effort"])
	}
	if r, _ := got["sandbox_workspace_write.writable_roots"].([]string); len(r) != 1 || r[0] != "/s/outboxes/dev" {
		t.Errorf("writable roots %v", got["sandbox_workspace_write.writable_roots"])
	}
	bare := sharedThreadConfig(codex.ExecOptions{}, nil, "m")
	if _, ok := bare["model_reasoning_effort"]; ok || len(bare) != 1 {
		t.Errorf("no effort, no dirs: %v", bare)
	}
}
