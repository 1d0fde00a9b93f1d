package orchestrator

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/hosts/hoststest"
	"github.com/battyhq/batty/preflight"
)

// remoteHarness is a host for a team's agents: a real sshd for a user of
// the test, a transport that reaches it, the batty to install there, and
// the mock API the real Codex CLI there talks to.
type remoteHarness struct {
	s     *hoststest.SSHD
	tr    *hosts.Transport
	batty hosts.Binary
	srv   *codextest.Server
	// codex is the real Codex CLI copied into the user's home; home its
	// CODEX_HOME there, written by the mock's WriteHome; dir the project
	// directory there. All owned by the user.
	codex, home, dir string
}

// newRemoteHarness starts the sshd harness (skipping where it cannot
// run) and prepares the user's home: the Codex CLI, a CODEX_HOME for
// the mock server and the project directory.
func newRemoteHarness(t testing.TB) *remoteHarness {
	t.Helper()
	bin := codextest.CodexNative(t)
	s := hoststest.StartSSHD(t)
	ctl, err := os.MkdirTemp("/tmp", "bh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ctl) })
	h := &remoteHarness{s: s, tr: &hosts.Transport{ConfigFile: s.ConfigFile, ControlDir: filepath.Join(ctl, "c")}, srv: codextest.NewServer(t)}
	h.batty = testBinary(t)
	h.codex = filepath.Join(s.Home, "bin", "codex")
	h.home = filepath.Join(s.Home, ".codex-mock")
	h.dir = filepath.Join(s.Home, "proj")
	hoststest.CopyFile(t, bin, h.codex, 0o755)
	h.srv.WriteHomeWith(t, codextest.HomeConfig{Dir: h.home})
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	chownAll(t, s, filepath.Dir(h.codex), h.home, h.dir)
	return h
}

// testBinary is the batty built from this module, as the daemon installs
// it on hosts.
func testBinary(t testing.TB) hosts.Binary {
	t.Helper()
	return hosts.Binary{Path: hoststest.Batty(t), Version: hoststest.BattyVersion(t), Key: fmt.Sprintf("dev-test-%d", time.Now().UnixNano()), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
}

// chownAll gives the trees at paths to the harness's user.
func chownAll(t testing.TB, s *hoststest.SSHD, paths ...string) {
	t.Helper()
	for _, root := range paths {
		err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, s.UID, s.GID)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// project is a team whose role eng runs on the harness's host with the
// real Codex CLI there (top: more top-level YAML; roles: more roles).
func (h *remoteHarness) project(t testing.TB, top, roles string) *testProject {
	t.Helper()
	return h.projectSandbox(t, top, "danger-full-access", roles)
}

// projectSandbox is project with eng's codex.sandbox (and what YAML
// follows it in eng's codex settings) sandbox.
func (h *remoteHarness) projectSandbox(t testing.TB, top, sandbox, roles string) *testProject {
	t.Helper()
	dir := t.TempDir()
	p := &testProject{t: t, dir: dir, fakeLog: filepath.Join(dir, "fake.log"), mark: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())}
	p.writeTeam(fmt.Sprintf(`name: e2e
timeouts:
  shutdown: 5s
hosts:
  - name: h1
    ssh: %s
    dir: %s
%sroles:
  - name: eng
    hosts: [h1]
    codex:
      bin: %s
      codex_home: %s
      sandbox: %s
%s`, h.s.Host.SSH, h.dir, top, h.codex, h.home, sandbox, roles))
	return p
}

// sandboxThere gives the host's Codex CLI the bubblewrap shipped beside
// this one, which its Linux sandbox runs; it skips where there is none.
func (h *remoteHarness) sandboxThere(t testing.TB) {
	t.Helper()
	bwrap := filepath.Join(filepath.Dir(filepath.Dir(codextest.CodexNative(t))), "codex-resources", "bwrap")
	if _, err := os.Stat(bwrap); err != nil {
		t.Skipf("no bubblewrap beside the Codex CLI: %v", err)
	}
	hoststest.CopyFile(t, bwrap, filepath.Join(filepath.Dir(filepath.Dir(h.codex)), "codex-resources", "bwrap"), 0o755)
	chownAll(t, h.s, filepath.Join(filepath.Dir(filepath.Dir(h.codex)), "codex-resources"))
}

// start runs the daemon of p with the harness's transport and batty.
func (h *remoteHarness) start(p *testProject, mod func(*Options)) *running {
	return p.start(func(o *Options) {
		o.Transport, o.HostBatty = h.tr, h.batty
		o.CheckTimeout = 30 * time.Second
		if mod != nil {
			mod(o)
		}
	})
}

// TestE2EHostAgentAnswers runs an agent on a host over ssh: batty is
// installed there, the real Codex CLI there answers a message sent here
// (a reply of 1 MiB too, whole), and `batty stop` (the daemon's end) leaves nothing of the host's user
// running.
func TestE2EHostAgentAnswers(t *testing.T) {
	h := newRemoteHarness(t)
	p := h.project(t, "", "")
	r := h.start(p, nil)
	if _, err := os.Stat(filepath.Join(h.s.Home, hosts.CacheDir, h.batty.Key, "batty")); err != nil {
		t.Fatalf("batty not installed on the host: %v", err)
	}
	id := p.send("eng", "human", "hello there [[mock:reply FROM-THE-HOST]]")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	if o := p.recorded("eng", id); o.Reply != "FROM-THE-HOST" {
		t.Fatalf("outcome %+v", o)
	}
	if n := len(h.srv.Requests()); n == 0 {
		t.Fatal("no request reached the mock API")
	}
	h.ranThere(t)
	// A reply of 1 MiB and more (several pieces) arrives whole, joined by
	// the shim's client here.
	long := strings.Repeat("y", 1<<20) + "END"
	h.srv.Handle(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), "a long one") && !req.FollowUp {
			return codextest.Reply{Text: long}
		}
		return h.srv.Scripted(req)
	})
	id2 := p.send("eng", "human", "a long one")
	if st := r.finished(t, id2); st != "completed" {
		t.Fatalf("status %s", st)
	}
	done, _, err := p.box("eng").Get(id2)
	if err != nil || done.Outcome == nil {
		t.Fatalf("long reply: %+v (%v)", done, err)
	}
	if whole, err := p.box("eng").FullReply(done); err != nil || whole != long {
		t.Fatalf("long reply: %d bytes (%v), want %d", len(whole), err, len(long))
	}
	// The transcript, written there, is here: what `batty logs` shows.
	waitFor(t, "the transcript of the host's agent", func() bool {
		b, _ := os.ReadFile(p.layout.Transcript("eng"))
		return strings.Contains(string(b), "FROM-THE-HOST") && strings.Contains(string(b), "shim started for eng")
	})
	r.stop(t)
	if left := h.s.WaitNoUserProcesses(t, true, 20*time.Second); left != nil {
		t.Fatalf("left running on the host after the stop: %q", left)
	}
}

// TestE2EHostWithoutCodexParked: a host without the configured codex
// parks its agent with the host's fix, and the message waits.
func TestE2EHostWithoutCodexParked(t *testing.T) {
	h := newRemoteHarness(t)
	if err := os.Remove(h.codex); err != nil {
		t.Fatal(err)
	}
	p := h.project(t, "", "")
	r := h.start(p, nil)
	st := agentStatusOf(r.d.status(), "eng")
	if st.State != agentParked || st.Parked == nil || st.Parked.Kind != string(preflight.KindMissing) ||
		!strings.Contains(st.Parked.Detail, "on host h1") || !strings.HasPrefix(st.Parked.Fix, "on h1: ") {
		t.Fatalf("eng without codex on its host: %+v %+v", st, st.Parked)
	}
	id := p.send("eng", "human", "wait")
	waitFor(t, "eng's backlog", func() bool { return agentStatusOf(r.d.status(), "eng").Backlog == 1 })
	if n := r.count(eventlog.EvDelivered, id); n != 0 {
		t.Fatalf("delivered to a parked agent: %d", n)
	}
}

// ranThere fails t unless codex ran as the host's user: the sessions it
// wrote in its CODEX_HOME belong to that user.
func (h *remoteHarness) ranThere(t *testing.T) {
	t.Helper()
	n := 0
	err := filepath.Walk(filepath.Join(h.home, "sessions"), func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			n++
			if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != h.s.UID {
				t.Errorf("codex session %s belongs to uid %d, not the host's user %d: codex ran here", p, st.Uid, h.s.UID)
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("no codex session on the host (%d files): %v", n, err)
	}
}

// TestE2EHostAgentSends: the agent on the host runs the real `batty send`
// there (the host's project directory holds no team file: the roster the
// daemon wrote there stands for it): its messages, to an agent here and
// to the human, reach the team's inboxes here, once each, and the files
// it wrote on the host are removed.
func TestE2EHostAgentSends(t *testing.T) {
	h := newRemoteHarness(t)
	leadHome := h.srv.WriteHome(t)
	p := h.project(t, "", fmt.Sprintf(`    talks_to: [lead]
  - name: lead
    codex:
      bin: %s
      codex_home: %s
      sandbox: danger-full-access
`, h.codex, leadHome))
	// The host's project directory holds no team file: `batty send`
	// there reads the roster the daemon wrote.
	r := h.start(p, nil)
	id := p.send("eng", "human", "pass it on [[mock:shell batty send lead to-the-lead && batty send human to-the-human]]")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	var toLead string
	waitFor(t, "eng's message to lead", func() bool {
		done, _ := p.box("lead").Done(10)
		for _, m := range done {
			if m.From == "eng" && m.Body == "to-the-lead" {
				toLead = m.ID
				return true
			}
		}
		return false
	})
	waitFor(t, "eng's message to the human", func() bool {
		pend, _ := p.box("human").Pending()
		for _, m := range pend {
			if m.From == "eng" && m.Body == "to-the-human" {
				return true
			}
		}
		return false
	})
	if n := r.count(eventlog.EvDelivered, toLead); n != 1 {
		t.Fatalf("eng's message to lead delivered %d times", n)
	}
	waitFor(t, "the host's inboxes emptied", func() bool {
		for _, box := range []string{"lead", "human"} {
			if e, _ := os.ReadDir(filepath.Join(layoutOf(t, h.dir).Dir, "inboxes", box, "new")); len(e) != 0 {
				return false
			}
		}
		return true
	})
}

// TestE2EHostSSHKilledMidTurn kills the agent's ssh in the middle of a
// turn: handled as a crash of its shim, the message is put back and
// answered once by the next shim, and once the team stops nothing of the
// host's user is left running.
func TestE2EHostSSHKilledMidTurn(t *testing.T) {
	h := newRemoteHarness(t)
	p := h.project(t, "", "")
	r := h.start(p, nil)
	id := p.send("eng", "human", "take your time [[mock:slow 4]]")
	r.waitEvent(t, "the delivery", func(e eventlog.Event) bool { return e.Type == eventlog.EvDelivered && e.Message == id })
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := h.srv.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	pid := r.d.byName["eng"].snapshot().shimPID
	if pid == 0 {
		t.Fatal("no shim")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	if n := r.count(eventlog.EvRequeued, id); n != 1 {
		t.Fatalf("requeued %d times, want 1", n)
	}
	finished := 0
	r.mu.Lock()
	for _, e := range r.seen {
		if e.Type == eventlog.EvTurnFinished && e.Message == id && !payloadOf[eventlog.TurnFinished](e).Requeued {
			finished++
		}
	}
	r.mu.Unlock()
	if finished != 1 {
		t.Fatalf("answered %d times", finished)
	}
	r.stop(t)
	if left := h.s.WaitNoUserProcesses(t, true, 20*time.Second); left != nil {
		t.Fatalf("left running on the host: %q", left)
	}
}

// switchable points the transport at an ssh config of its own and returns
// what switches the host on (the sshd's port) and off (a closed port:
// where the host was, nothing answers), as a host that goes down and
// comes back.
func (h *remoteHarness) switchable(t *testing.T) func(up bool) {
	t.Helper()
	good, err := os.ReadFile(h.s.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	bad := strings.Replace(string(good), fmt.Sprintf("Port %d", h.s.Port), fmt.Sprintf("Port %d", closed), 1)
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	h.tr.ConfigFile = cfg
	return func(up bool) {
		t.Helper()
		data := []byte(bad)
		if up {
			data = good
		}
		if err := os.WriteFile(cfg, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestE2EHostUnreachable cuts the host off (its ssh port closed, as a
// host that went down): the agent shows as unreachable with one
// host_unreachable alert, no crash loop, an agent here keeps answering;
// once the host is back, host_reachable, and the agent answers again.
func TestE2EHostUnreachable(t *testing.T) {
	h := newRemoteHarness(t)
	host := h.switchable(t)
	host(true)
	p := h.project(t, "", fmt.Sprintf(`  - name: here
    codex:
      bin: %s
      codex_home: %s
      sandbox: danger-full-access
`, h.codex, h.srv.WriteHome(t)))
	r := h.start(p, nil)
	if st := r.finished(t, p.send("eng", "human", "first [[mock:reply ONE]]")); st != "completed" {
		t.Fatalf("status %s", st)
	}
	host(false)
	// The connection is cut: every ssh here that uses the transport's
	// control sockets (the shared connections and their sessions) dies.
	for _, pid := range sshProcesses(t, h.tr.ControlDir) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	r.waitEvent(t, "host_unreachable", func(e eventlog.Event) bool { return e.Type == eventlog.EvHostUnreachable })
	waitFor(t, "eng unreachable in status", func() bool { return agentStatusOf(r.d.status(), "eng").State == agentUnreachable })
	id := p.send("eng", "human", "while down [[mock:reply TWO]]")
	if st := r.finished(t, p.send("here", "human", "still here [[mock:reply HERE]]")); st != "completed" {
		t.Fatalf("the local agent: status %s", st)
	}
	if st := agentStatusOf(r.d.status(), "eng"); st.State != agentUnreachable || st.Host != "h1" || agentStatusOf(r.d.status(), "here").Host != "" {
		t.Fatalf("eng while its host is down: %+v", st)
	}
	host(true)
	r.waitEvent(t, "host_reachable", func(e eventlog.Event) bool { return e.Type == eventlog.EvHostReachable })
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	if n, f := r.count(eventlog.EvHostUnreachable, ""), r.count(eventlog.EvAgentFailed, ""); n != 1 || f != 0 {
		t.Fatalf("%d host_unreachable alerts, %d agent_failed; want 1, 0", n, f)
	}
}

// TestE2EHostDownAtStart: a host that cannot be reached when the team
// starts parks its agent with the host's fix; once it is back, batty is
// installed by the next check and the agent answers, without a crash
// loop.
func TestE2EHostDownAtStart(t *testing.T) {
	h := newRemoteHarness(t)
	host := h.switchable(t)
	host(false)
	p := h.project(t, "", "")
	r := h.start(p, func(o *Options) { o.RecheckMin, o.RecheckMax = 100*time.Millisecond, 500*time.Millisecond })
	st := agentStatusOf(r.d.status(), "eng")
	if st.State != agentParked || st.Parked == nil || st.Parked.Kind != string(preflight.KindHost) || !strings.Contains(st.Parked.Fix, "ssh "+h.s.Host.SSH) {
		t.Fatalf("eng with its host down: %+v %+v", st, st.Parked)
	}
	id := p.send("eng", "human", "when you can [[mock:reply LATER]]")
	host(true)
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	if f := r.count(eventlog.EvAgentFailed, ""); f != 0 {
		t.Fatalf("%d agent_failed", f)
	}
}

// TestE2EHostAgentRecalls: the agent on the host runs the real `batty
// search` there: its recall travels to the daemon here like a `batty
// send`, and the answer — its own earlier turn, found in the journal
// here — comes back to its outbox there, so its shell prints it.
func TestE2EHostAgentRecalls(t *testing.T) {
	h := newRemoteHarness(t)
	p := h.project(t, "", "")
	r := h.start(p, nil)
	first := p.send("eng", "human", "remember the word zanzibarqq [[mock:reply noted]]")
	if st := r.finished(t, first); st != "completed" {
		t.Fatalf("status %s", st)
	}
	id := p.send("eng", "human", "what did I note? [[mock:shell batty search zanzibarqq]]")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	waitFor(t, "the reply carrying the search's answer", func() bool {
		pend, _ := p.box("human").Pending()
		for _, m := range pend {
			if m.InReplyTo == id {
				if !strings.Contains(m.Body, first) {
					t.Fatalf("the reply lacks the earlier turn's message %s: %q", first, m.Body)
				}
				return true
			}
		}
		return false
	})
}
