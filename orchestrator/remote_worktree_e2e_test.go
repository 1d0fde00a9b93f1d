package orchestrator

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/clones"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/team"
)

// gitProject makes p's directory a git repository on main with one
// commit (shared.txt), as newGitProject does.
func gitProject(t *testing.T, p *testProject) {
	t.Helper()
	git(t, p.dir, "init", "-q", "-b", "main")
	for name, body := range map[string]string{".gitignore": ".batty/\nfake*\nprompts.log\n", "shared.txt": "base\n"} {
		if err := os.WriteFile(filepath.Join(p.dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	git(t, p.dir, "add", "-A")
	git(t, p.dir, "commit", "-q", "-m", "initial")
}

// cloneThere is agent's clone on a host whose project directory is
// hostDir and home directory home, as this machine reaches it: in the
// project's state directory there (hosts.WorktreesThere).
func cloneThere(hostDir, home, agent string) string {
	return hosts.ExpandHome(path.Join(hosts.WorktreesThere(hostDir), agent), home)
}

// TestE2EHostWorktreeAgentLands: a worktree engineer on a host works in a
// clone there — the real Codex CLI writes a file through its shell tool,
// as a real model does — each turn's commit comes back into batty/eng
// here over the same ssh connection, and the merge queue lands it on
// main like local work; the project's checkout comes along, and nothing
// of the host's user is left running after the stop.
func TestE2EHostWorktreeAgentLands(t *testing.T) {
	h := newRemoteHarness(t)
	p := h.project(t, "workspace:\n  verify: test -s made-there.txt\n", "    workspace: worktree\n")
	gitProject(t, p)
	r := h.start(p, nil)
	id := p.send("eng", "human", "write the file [[mock:shell printf 'made there\\n' > made-there.txt]]")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	r.waitEvent(t, "the turn's commit", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWorkspaceCommitted && e.Message == id && !payloadOf[eventlog.WorkspaceCommitted](e).WIP
	})
	if got := git(t, p.dir, "show", "batty/eng:made-there.txt"); got != "made there" {
		t.Fatalf("batty/eng here holds %q", got)
	}
	msg := git(t, p.dir, "log", "-1", "--format=%an%n%B", "batty/eng")
	if !strings.HasPrefix(msg, "eng\nwrite the file") || !strings.Contains(msg, "Batty-Message: "+id) {
		t.Fatalf("the turn's commit:\n%s", msg)
	}
	// The work happened on the host, as its user, in the clone there, in
	// the project's state directory there; there is no worktree here.
	clone := cloneThere(h.dir, h.s.Home, "eng")
	fi, err := os.Stat(filepath.Join(clone, "made-there.txt"))
	if err != nil {
		t.Fatalf("the file is not in the clone on the host: %v", err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != h.s.UID {
		t.Fatalf("the file belongs to uid %d, not the host's user %d", uid, h.s.UID)
	}
	if _, err := os.Stat(filepath.Join(p.layout.WorktreesDir(), "eng")); err == nil {
		t.Fatal("a worktree here for the agent on the host")
	}
	ws := r.agentStatus(t, "eng").Workspace
	if ws == nil || !ws.Exists || ws.Ahead != 1 || ws.Dirty != 0 || ws.Path != clones.Where("h1", h.dir, "eng") {
		t.Fatalf("status workspace %+v", ws)
	}

	// From its clone, the agent talks to the team as everywhere.
	id2 := p.send("eng", "human", "report [[mock:shell batty send human done-in-the-clone]]")
	if st := r.finished(t, id2); st != "completed" {
		t.Fatalf("status %s", st)
	}
	waitMessage(t, p.box("human"), func(m inbox.Message) bool { return m.From == "eng" && m.Body == "done-in-the-clone" })

	p.send(team.LandingBox, "human", "eng")
	landed := r.waitEvent(t, "the landing", func(e eventlog.Event) bool { return e.Type == eventlog.EvLanded && e.Agent == "eng" })
	if main := git(t, p.dir, "rev-parse", "main"); payloadOf[eventlog.Landed](landed).Commit != main {
		t.Fatalf("landed %v, main is %s", payloadOf[eventlog.Landed](landed).Commit, main)
	}
	if b, _ := os.ReadFile(filepath.Join(p.dir, "made-there.txt")); string(b) != "made there\n" {
		t.Fatalf("the project's checkout after the landing: %q", b)
	}
	r.stop(t)
	if left := h.s.WaitNoUserProcesses(t, true, 20*time.Second); left != nil {
		t.Fatalf("left running on the host after the stop: %q", left)
	}
}

// hostProfileSandbox is eng's codex settings for a workspace-write agent
// on the harness's host (projectSandbox): /tmp and $TMPDIR left out of
// its writable paths, as the host's home lies under /tmp.
const hostProfileSandbox = `workspace-write
      config:
        sandbox_workspace_write.exclude_slash_tmp: true
        sandbox_workspace_write.exclude_tmpdir_env_var: true`

// TestE2EHostWorktreeAgentUnderItsProfile: a workspace-write worktree
// engineer on a host runs under its permission profile there, the real
// Codex CLI running its commands in its Linux sandbox: in its clone
// there (in the project's state directory there, whose clones,
// outboxes and state/ the profile denies) it writes its file, runs git
// there (`git status`, `git log`: the clone repository is readable),
// `batty send` there reaches the human here (the roster beside the state
// directory, the outbox in it); it cannot list the clones, the outboxes
// nor state/, write the clone repository, nor make a directory of its
// own in the state directory; its commit comes back and lands; with the
// network on as without (the user's sockets there then denied as well).
func TestE2EHostWorktreeAgentUnderItsProfile(t *testing.T) {
	for _, network := range []bool{false, true} {
		t.Run(fmt.Sprintf("network %t", network), func(t *testing.T) { hostWorktreeAgentUnderItsProfile(t, network) })
	}
}

func hostWorktreeAgentUnderItsProfile(t *testing.T, network bool) {
	h := newRemoteHarness(t)
	sb := hostProfileSandbox + fmt.Sprintf("\n        sandbox_workspace_write.network_access: %t", network)
	p := h.projectSandbox(t, "workspace:\n  verify: test -s made-there.txt\n", sb, "    workspace: worktree\n")
	gitProject(t, p)
	h.sandboxThere(t)
	r := h.start(p, nil)
	state := hosts.ExpandHome(hosts.StateDir(h.dir), h.s.Home)
	config := filepath.Join(state, "repo", ".git", "config")
	script := strings.Join([]string{
		`printf 'made there\n' > made-there.txt && echo WROTE-OWN`,
		`{ git status --short && git log --oneline -1; } 2>&1 && echo GIT-WORKS`,
		`batty send human sent-under-its-profile && echo SENT`,
		`ls ` + state + `/outboxes >/dev/null 2>&1 && echo READ-OUTBOXES`,
		`ls ` + state + `/worktrees >/dev/null 2>&1 && echo READ-CLONES`,
		`ls ` + state + `/state >/dev/null 2>&1 && echo READ-STATE`,
		`{ echo '# planted' >> ` + config + `; } 2>/dev/null && echo WROTE-REPO`,
		`mkdir ` + state + `/mine 2>/dev/null && echo MADE-CHILD`,
	}, "; ")
	id := p.send("eng", "human", "write the file [[mock:shell "+script+"]]")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	reply := p.recorded("eng", id).Reply
	if !strings.Contains(reply, "WROTE-OWN") || !strings.Contains(reply, "SENT") {
		t.Fatalf("the agent could not work in its clone there or send:\n%s", reply)
	}
	if !strings.Contains(reply, "GIT-WORKS") || !strings.Contains(reply, "?? made-there.txt") || !strings.Contains(reply, "initial") {
		t.Fatalf("git does not work in the agent's clone there:\n%s", reply)
	}
	if after, err := os.ReadFile(config); err != nil || strings.Contains(string(after), "planted") {
		t.Fatalf("the clone repository's config: %v\n%s", err, after)
	}
	if _, err := os.Lstat(filepath.Join(state, "mine")); err == nil {
		t.Fatal("the agent made a directory in the state directory there")
	}
	for _, bad := range []string{"READ-OUTBOXES", "READ-CLONES", "READ-STATE", "WROTE-REPO", "MADE-CHILD"} {
		if strings.Contains(reply, bad) {
			t.Fatalf("the agent's profile let it read the state directory there (%s):\n%s", bad, reply)
		}
	}
	waitMessage(t, p.box("human"), func(m inbox.Message) bool { return m.From == "eng" && m.Body == "sent-under-its-profile" })
	r.waitEvent(t, "the turn's commit", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWorkspaceCommitted && e.Message == id && !payloadOf[eventlog.WorkspaceCommitted](e).WIP
	})
	if got := git(t, p.dir, "show", "batty/eng:made-there.txt"); got != "made there" {
		t.Fatalf("batty/eng here holds %q", got)
	}
	p.send(team.LandingBox, "human", "eng")
	r.waitEvent(t, "the landing", func(e eventlog.Event) bool { return e.Type == eventlog.EvLanded && e.Agent == "eng" })
	if b, _ := os.ReadFile(filepath.Join(p.dir, "made-there.txt")); string(b) != "made there\n" {
		t.Fatalf("the project's checkout after the landing: %q", b)
	}
	r.stop(t)
}

// TestE2EHostCloneSetupEndsWithTheConnection: the team stops while the
// setup of a host agent's clone runs there: the ssh session ends, and
// with it the host's end and the setup command; nothing of the host's
// user is left running.
func TestE2EHostCloneSetupEndsWithTheConnection(t *testing.T) {
	h := newRemoteHarness(t)
	// Without the sandbox: the host's user cannot run this machine's
	// codex (clones' TestWorkspaceSetupInTheSandbox runs a host's setup in it).
	p := h.project(t, "workspace:\n  setup: echo started > setup-ran; exec sleep 300\n  sandbox: off\n", "    workspace: worktree\n")
	gitProject(t, p)
	r := h.start(p, nil)
	waitFor(t, "the setup running on the host", func() bool {
		_, err := os.Stat(filepath.Join(cloneThere(h.dir, h.s.Home, "eng"), "setup-ran"))
		return err == nil && r.agentStatus(t, "eng").State == agentPreparing
	})
	r.stop(t)
	if left := h.s.WaitNoUserProcesses(t, true, 20*time.Second); left != nil {
		t.Fatalf("left running on the host after the stop: %q", left)
	}
}

// TestE2EHostWorktreeAgentRidesOutAnOutage: the host of a worktree agent
// goes down while it is idle and comes back: its clone cannot be reached
// meanwhile, which makes the agent unreachable (one alert), never parks
// it; once the host is back the next message is answered there and its
// commit comes back here.
func TestE2EHostWorktreeAgentRidesOutAnOutage(t *testing.T) {
	h := newRemoteHarness(t)
	host := h.switchable(t)
	host(true)
	p := h.project(t, "", "    workspace: worktree\n")
	gitProject(t, p)
	r := h.start(p, func(o *Options) { o.RespawnMax = 2 * time.Second })
	if st := r.finished(t, p.send("eng", "human", "one [[mock:shell printf '1\\n' > one.txt]]")); st != "completed" {
		t.Fatalf("status %s", st)
	}
	host(false)
	for _, pid := range sshProcesses(t, h.tr.ControlDir) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	r.waitEvent(t, "host_unreachable", func(e eventlog.Event) bool { return e.Type == eventlog.EvHostUnreachable })
	id := p.send("eng", "human", "two [[mock:shell printf '2\\n' > two.txt]]")
	// The clone is tried while the host is down (the log is the only
	// trace of a try).
	waitFor(t, "a preparation of the clone while the host is down, and eng unreachable", func() bool {
		return strings.Contains(r.log.String(), "The clone on the host could not be prepared") &&
			r.agentStatus(t, "eng").State == agentUnreachable
	})
	host(true)
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	r.waitEvent(t, "the second turn's commit", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWorkspaceCommitted && e.Message == id
	})
	if got := git(t, p.dir, "show", "batty/eng:two.txt"); got != "2" {
		t.Fatalf("batty/eng here holds %q", got)
	}
	if n, parked, failed := r.count(eventlog.EvHostUnreachable, ""), r.count(eventlog.EvAgentParked, ""), r.count(eventlog.EvAgentFailed, ""); n != 1 || parked != 0 || failed != 0 {
		t.Fatalf("%d host_unreachable, %d agent_parked, %d agent_failed; want 1, 0, 0", n, parked, failed)
	}
}

// TestE2EHostSharedAgentCannotReachTheClones: on a host that runs a
// worktree engineer, an agent that works in the project directory there
// (no worktree; the real Codex CLI under its permission profile there,
// its workspace the project directory there, /tmp left out as the host's
// home lies there) tries through its shell to
// write the engineer's clone (a file, a .codex/config.toml) and the
// clone repository's .git/config (a filter `batty clone-host` would run
// as the user), and to list the clones and the outboxes in the
// project's state directory there, which its profile denies (the clone
// repository there it may read, not write): every write fails, nothing
// denied can be read, and the engineer's next commit carries none of it.
func TestE2EHostSharedAgentCannotReachTheClones(t *testing.T) {
	h := newRemoteHarness(t)
	p := h.project(t, "", fmt.Sprintf(`    workspace: worktree
  - name: arch
    hosts: [h1]
    codex:
      bin: %s
      codex_home: %s
      sandbox: workspace-write
      config:
        sandbox_workspace_write.exclude_slash_tmp: true
        sandbox_workspace_write.exclude_tmpdir_env_var: true
`, h.codex, h.home))
	gitProject(t, p)
	h.sandboxThere(t)
	r := h.start(p, nil)
	if st := r.finished(t, p.send("eng", "human", "one [[mock:shell printf '1\\n' > one.txt]]")); st != "completed" {
		t.Fatalf("status %s", st)
	}
	clone := cloneThere(h.dir, h.s.Home, "eng")
	state := hosts.ExpandHome(hosts.StateDir(h.dir), h.s.Home)
	config := filepath.Join(state, "repo", ".git", "config")
	for _, p := range []string{filepath.Join(clone, "one.txt"), config} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the clone on the host: %v", err)
		}
	}
	before, _ := os.ReadFile(config)
	script := strings.Join([]string{
		`{ echo planted > ` + clone + `/planted.txt; } 2>/dev/null && echo WROTE-CLONE`,
		`{ mkdir -p ` + clone + `/.codex && printf '[mcp_servers.x]\ncommand = "/bin/sh"\n' > ` + clone + `/.codex/config.toml; } 2>/dev/null && echo WROTE-CODEX`,
		`{ printf '[filter "x"]\n\tsmudge = touch /tmp/pwned\n' >> ` + config + `; } 2>/dev/null && echo WROTE-CONFIG`,
		`ls ` + state + `/worktrees >/dev/null 2>&1 && echo READ-CLONES`,
		`ls ` + state + `/outboxes >/dev/null 2>&1 && echo READ-OUTBOXES`,
		`echo own > arch.txt && echo WROTE-OWN`,
	}, "; ")
	id := p.send("arch", "human", "[[mock:shell "+script+"]]")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	reply := p.recorded("arch", id).Reply
	if !strings.Contains(reply, "WROTE-OWN") {
		t.Fatalf("the shared agent's shell did not run or could not write the project there:\n%s", reply)
	}
	for _, bad := range []string{"WROTE-CLONE", "WROTE-CODEX", "WROTE-CONFIG", "READ-CLONES", "READ-OUTBOXES"} {
		if strings.Contains(reply, bad) {
			t.Fatalf("the shared agent's sandbox let it write the clones there (%s):\n%s", bad, reply)
		}
	}
	if _, err := os.Stat(filepath.Join(h.dir, "arch.txt")); err != nil {
		t.Fatalf("the shared agent did not work in the project there: %v", err)
	}
	for _, p := range []string{filepath.Join(clone, "planted.txt"), filepath.Join(clone, ".codex")} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s was written", p)
		}
	}
	if after, _ := os.ReadFile(config); string(after) != string(before) {
		t.Fatalf("the clone repository's config changed:\n%s", after)
	}
	id2 := p.send("eng", "human", "two [[mock:shell printf '2\\n' > two.txt]]")
	if st := r.finished(t, id2); st != "completed" {
		t.Fatalf("status %s", st)
	}
	r.waitEvent(t, "the second commit", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvWorkspaceCommitted && e.Message == id2
	})
	if tree := git(t, p.dir, "ls-tree", "-r", "--name-only", "batty/eng"); strings.Contains(tree, "planted") || strings.Contains(tree, ".codex") || !strings.Contains(tree, "two.txt") {
		t.Fatalf("batty/eng holds:\n%s", tree)
	}
	r.stop(t)
}
