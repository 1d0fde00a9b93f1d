package orchestrator

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/project"
)

// With codex.app_server: per-account, two agents on one account run on
// one shared app-server: each command sees its own BATTY_AGENT; a command
// running below the shared process is judged inside an agent (the
// control socket refuses it what it refuses agents); the process killed
// with SIGKILL under a turn raises one app_server_died alert, the turn is
// retried on a new process and completes; and once the team stops, no
// process of it is left (the harness checks the mark). The state home's
// path is over 200 bytes: the control socket and the broker's socket are
// far longer than a socket address holds.
func TestE2ESharedAppServer(t *testing.T) {
	state := longStateHome(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	role := func(name string) string {
		return "  - name: " + name + "\n    codex:\n      runtime: app-server\n      app_server: per-account\n"
	}
	p := newRealProject(t, home, "timeouts:\n  shutdown: 5s\n", role("a")+role("b"))
	r := p.start(noJitter)

	for _, ag := range []string{"a", "b"} {
		id := p.send(ag, "human", "[[mock:shell echo AGENT=$BATTY_AGENT]]")
		if st := r.finished(t, id); st != "completed" {
			t.Fatalf("%s: %s", ag, st)
		}
		if o := p.recorded(ag, id); !strings.Contains(o.Reply, "AGENT="+ag) {
			t.Fatalf("%s's command saw %q, want its own BATTY_AGENT", ag, o.Reply)
		}
	}
	pids := r.d.sharedPids()
	if len(pids) != 1 {
		t.Fatalf("shared app-servers %v, want one", pids)
	}
	var server int
	for pid := range pids {
		server = pid
	}
	for _, ag := range []string{"a", "b"} {
		if s, ok := r.d.sharedOf(ag); !ok || s.PID != server {
			t.Fatalf("%s runs on %+v, %v; want pid %d", ag, s, ok, server)
		}
	}

	// Status names the process and its broker for each agent on it.
	st := r.d.status()
	for _, as := range st.Agents {
		if s := as.AppServer; s == nil || s.PID != server || s.Key == "" || s.Key != st.Agents[0].AppServer.Key ||
			!strings.HasPrefix(s.Socket, state+"/") || s.CodexHome != home || s.Starts != 1 {
			t.Fatalf("status of %s: app_server %+v, want pid %d, one key, the socket under %s, CODEX_HOME %s, 1 start", as.Name, s, server, state, home)
		}
	}

	// A command below the shared process, then the process killed.
	fifo := filepath.Join(t.TempDir(), "pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := p.send("a", "human", "[[mock:shell echo $$ > "+fifo+"; sleep 1; echo SLEPT]]")
	if err := f.SetReadDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	in, err := r.d.insider(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Inside() || in.Server != server {
		t.Fatalf("a command below the shared app-server: insider %+v, want inside, server %d", in, server)
	}
	if err := syscall.Kill(server, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("the message cut off by the kill: %s, want completed on the retry", st)
	}
	if o := p.recorded("a", id); !strings.Contains(o.Reply, "SLEPT") {
		t.Fatalf("reply %q", o.Reply)
	}
	died := r.waitEvent(t, "app_server_died", func(e eventlog.Event) bool { return e.Type == eventlog.EvAppServerDied })
	if a, ok := eventlog.AlertFor(died); !ok || a.Kind != eventlog.AlertAppServer || !strings.Contains(died.Detail, "signal: killed") {
		t.Fatalf("alert %+v of %+v", a, died)
	}
	if n := r.count(eventlog.EvAppServerDied, ""); n != 1 {
		t.Fatalf("%d app_server_died events, want 1", n)
	}
	if pids := r.d.sharedPids(); len(pids) != 1 || pids[server] != "" {
		t.Fatalf("shared app-servers after the kill %v, want one new", pids)
	}
	if s := r.d.status().Agents[1].AppServer; s == nil || s.PID == server || s.Starts != 2 {
		t.Fatalf("b's app_server after the restart %+v, want a new pid and 2 starts", s)
	}
	// b goes on on the new process.
	id = p.send("b", "human", "[[mock:reply B-AFTER]]")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("b after the restart: %s", st)
	}
}

// A daemon killed with SIGKILL leaves no shared app-server running, nor
// anything else of its team: the process, started in the team's cgroup
// as the shims are, ends with its parent (Pdeathsig, and its stdin
// closing), and the shims with their socket.
func TestDaemonSIGKILLedLeavesNoSharedAppServer(t *testing.T) {
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	role := "  - name: a\n    codex:\n      runtime: app-server\n      app_server: per-account\n"
	p := newRealProject(t, home, "timeouts:\n  shutdown: 5s\n", role)
	child := p.startChildDaemon()
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = child.Process.Kill()
			_ = child.Wait()
		}
	})
	id := p.send("a", "human", "[[mock:reply HELLO]]")
	waitOutcome(t, p, "a", id)
	resp, err := control.Call(p.layout, control.Request{Op: control.OpStatus}, waitLimit)
	if err != nil || len(resp.Status.Agents) != 1 {
		t.Fatalf("status %+v, %v", resp.Status, err)
	}
	ag := resp.Status.Agents[0]
	if ag.AppServer == nil || ag.AppServer.PID <= 0 || ag.ShimPID <= 0 {
		t.Fatalf("agent a: app_server %+v, shim %d; want a running shared process", ag.AppServer, ag.ShimPID)
	}
	server := ag.AppServer.PID
	t.Cleanup(func() { _ = syscall.Kill(server, syscall.SIGKILL) })
	if !strings.Contains(codextest.Cmdline(server), "app-server") {
		t.Fatalf("status names pid %d (%s) as the shared app-server", server, codextest.Cmdline(server))
	}
	if got, want := procCgroup(t, server), procCgroup(t, ag.ShimPID); got != want {
		t.Errorf("the shared app-server is in cgroup %q, its shim in %q: want the team's, the same", got, want)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	killed = true
	if !codextest.WaitExit(server, codextest.ExitGrace) {
		t.Fatalf("the shared app-server %d (%s) outlived its daemon's SIGKILL", server, codextest.Cmdline(server))
	}
	assertNoProcesses(t, p.mark)
}

// procCgroup is process pid's cgroup v2 path (the "0::" line of
// /proc/<pid>/cgroup).
func procCgroup(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return rest
		}
	}
	return ""
}

// longStateHome points BATTY_STATE_HOME, for the rest of the test, at a
// new directory whose path is over 200 bytes long, and returns it.
func longStateHome(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for len(dir) < 200 {
		dir = filepath.Join(dir, strings.Repeat("l", 50))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv(project.EnvStateHome, dir)
	return dir
}
