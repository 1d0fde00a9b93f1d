package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/battyhq/batty/cockpit"
	"github.com/battyhq/batty/control"
)

// An agent in the project's checkout whose sandbox has the network on
// runs under its own permission profile: through its login shell it
// cannot drive batty's tmux server (a window that would touch a file, a
// `batty pause`), list another agent's worktree, read the state
// directory's inboxes or reach a fake ssh-agent under $XDG_RUNTIME_DIR,
// and SSH_AUTH_SOCK is not in its environment; it still writes its
// workspace and sends with `batty send`. The team is not paused. The
// engineer, under the same profile in its worktree in the state
// directory, runs `git status` and `git log` there. So on
// each runtime: a `codex exec` per turn, its own app-server, a shared one.
func TestE2ENetworkAgentKeepsToItsRooms(t *testing.T) {
	for _, rt := range []struct{ name, keys string }{
		{"exec", ""},
		{"app-server", "runtime: app-server"},
		{"shared-app-server", "runtime: app-server\n  app_server: per-account"},
	} {
		t.Run(rt.name, func(t *testing.T) { networkAgentKeepsToItsRooms(t, rt.keys) })
	}
}

func networkAgentKeepsToItsRooms(t *testing.T, runtimeKeys string) {
	runtime := t.TempDir()
	sockDir := filepath.Join(runtime, "ssh")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	agentSock := filepath.Join(sockDir, "agent.sock")
	ln, err := net.Listen("unix", agentSock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var reached atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			c.Close()
		}
	}()
	r, _, codexBin, home := sandboxedRun(t, "rooms", "XDG_RUNTIME_DIR="+runtime, "SSH_AUTH_SOCK="+agentSock)
	initRepo(t, r.dir, map[string]string{"README.md": "project\n"})
	r.writeTeam(fmt.Sprintf(`name: rooms
codex:
  bin: %s
  codex_home: %s
  sandbox: workspace-write
  %s
  config:
    sandbox_workspace_write.network_access: true
roles:
  - name: architect
    talks_to: [eng]
  - name: eng
    workspace: worktree
`, codexBin, home, runtimeKeys))
	r.must("start")
	l := layoutOf(t, r.dir)
	tmuxSock := filepath.Join(os.Getenv("TMUX_TMPDIR"), fmt.Sprintf("tmux-%d", os.Getuid()), cockpit.SocketName(r.dir))
	if out, err := exec.Command("tmux", "-S", tmuxSock, "ls").CombinedOutput(); err != nil {
		t.Fatalf("batty's tmux server is not at %s: %v\n%s", tmuxSock, err, out)
	}
	proof := filepath.Join(t.TempDir(), "proof")
	engTree := filepath.Join(l.WorktreesDir(), "eng")
	r.waitStatus("eng's worktree", func(control.Status) bool { _, err := os.Stat(engTree); return err == nil })

	script := strings.Join([]string{
		fmt.Sprintf("tmux -S %s new-window -d 'touch %s' >/dev/null 2>&1 || echo T1", tmuxSock, proof),
		fmt.Sprintf(`tmux -S %s new-window -d "$BATTY_BIN pause" >/dev/null 2>&1 || echo T2`, tmuxSock),
		fmt.Sprintf("ls %s >/dev/null 2>&1 || echo W1", engTree),
		fmt.Sprintf("ls %s >/dev/null 2>&1 || echo I1", l.Inboxes()),
		fmt.Sprintf("tmux -S %s ls >/dev/null 2>&1 || echo A1", agentSock),
		`test -z "$SSH_AUTH_SOCK" && echo E1`,
		"echo written > workspace-proof && echo P1",
		`"$BATTY_BIN" send eng from-the-profile >/dev/null 2>&1; echo S=$?`,
	}, "; ")
	r.must("send", "architect", "[[mock:shell "+script+"]]")
	r.waitStatus("the architect's turn", func(st control.Status) bool {
		a := agentStatus(st, "architect")
		return a.TurnsCompleted == 1 || a.LastError != ""
	})
	inbox := r.must("inbox", "--json")
	// Each mark says one refusal or success: T1 and T2 tmux refused, W1
	// the worktree and I1 the inboxes unlisted, A1 the ssh-agent refused,
	// E1 no SSH_AUTH_SOCK, P1 the workspace written, S=0 sent.
	for _, want := range []string{"T1", "T2", "W1", "I1", "A1", "E1", "P1", "S=0"} {
		if !strings.Contains(inbox, want) {
			t.Errorf("the architect's reply lacks %q:\n%s", want, inbox)
		}
	}
	r.waitStatus("eng's turn on the architect's message", func(st control.Status) bool {
		return agentStatus(st, "eng").TurnsCompleted == 1
	})
	// The engineer, in its worktree in the denied state directory, runs
	// git there: its worktree's repository is the project's, readable.
	r.must("send", "eng", "[[mock:shell echo x > eng-proof && { git status --short && git log --oneline -1; } 2>&1 && echo GIT-WORKS]]")
	r.waitStatus("eng's turn with git", func(st control.Status) bool {
		a := agentStatus(st, "eng")
		return a.TurnsCompleted == 2 || a.LastError != ""
	})
	if inbox := r.must("inbox", "--json"); !strings.Contains(inbox, "GIT-WORKS") || !strings.Contains(inbox, "?? eng-proof") || !strings.Contains(inbox, "initial") {
		t.Errorf("git does not work in the engineer's worktree under its profile:\n%s", inbox)
	}
	if _, err := os.Stat(proof); err == nil {
		t.Error("a command the agent gave batty's tmux server ran outside the sandbox")
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the agent connected to the ssh-agent socket %d times", n)
	}
	if b, err := os.ReadFile(filepath.Join(r.dir, "workspace-proof")); err != nil || string(b) != "written\n" {
		t.Errorf("the agent could not write its workspace: %q, %v", b, err)
	}
	if st := r.status(); st.Dispatch.Paused {
		t.Fatalf("the agent paused the team through tmux: %+v", st.Dispatch)
	}
}

// A planning role with sandbox: read-only runs under a permission profile
// over Codex's :read-only: through its shell it reads the project's
// checkout but cannot write it, cannot list the state directory's inboxes
// nor an engineer's worktree, and still sends with `batty send` (its
// outbox its one writable path); the engineer gets the message and its
// answer comes back to the architect. So on each runtime: a `codex exec`
// per turn, its own app-server, a shared one.
func TestE2EReadOnlyArchitectSends(t *testing.T) {
	for _, rt := range []struct{ name, keys string }{
		{"exec", ""},
		{"app-server", "runtime: app-server"},
		{"shared-app-server", "runtime: app-server\n  app_server: per-account"},
	} {
		t.Run(rt.name, func(t *testing.T) { readOnlyArchitectSends(t, rt.keys) })
	}
}

func readOnlyArchitectSends(t *testing.T, runtimeKeys string) {
	r, _, codexBin, home := sandboxedRun(t, "readonly")
	initRepo(t, r.dir, map[string]string{"README.md": "project\n"})
	r.writeTeam(fmt.Sprintf(`name: planner
codex:
  bin: %s
  codex_home: %s
  sandbox: workspace-write
  %s
roles:
  - name: architect
    talks_to: [eng]
    codex:
      sandbox: read-only
  - name: eng
    talks_to: [architect]
    workspace: worktree
`, codexBin, home, runtimeKeys))
	r.must("start", "--no-tmux")
	l := layoutOf(t, r.dir)
	engTree := filepath.Join(l.WorktreesDir(), "eng")
	r.waitStatus("eng's worktree", func(control.Status) bool { _, err := os.Stat(engTree); return err == nil })

	const body = "plan-from-the-read-only-architect"
	script := strings.Join([]string{
		"echo written > read-only-proof 2>/dev/null && echo WROTE || echo R1",
		"grep -q project README.md && echo C1",
		fmt.Sprintf("ls %s >/dev/null 2>&1 || echo W1", engTree),
		fmt.Sprintf("ls %s >/dev/null 2>&1 || echo I1", l.Inboxes()),
		`"$BATTY_BIN" send eng ` + body + ` >/dev/null 2>&1; echo S=$?`,
	}, "; ")
	r.must("send", "architect", "[[mock:shell "+script+"]]")
	r.waitStatus("the architect's turn", func(st control.Status) bool {
		a := agentStatus(st, "architect")
		return a.TurnsCompleted == 1 || a.LastError != ""
	})
	inbox := r.must("inbox", "--json")
	// R1 the checkout not written, C1 it read, W1 the worktree and I1 the
	// inboxes unlisted, S=0 sent.
	for _, want := range []string{"R1", "C1", "W1", "I1", "S=0"} {
		if !strings.Contains(inbox, want) {
			t.Errorf("the architect's reply lacks %q:\n%s", want, inbox)
		}
	}
	if strings.Contains(inbox, "WROTE") {
		t.Errorf("the read-only architect wrote the project's checkout:\n%s", inbox)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "read-only-proof")); err == nil {
		t.Error("the read-only architect's file is in the project's checkout")
	}

	// eng runs a turn on the message; its answer reaches the architect.
	r.waitStatus("the architect's turn on eng's answer", func(st control.Status) bool {
		return agentStatus(st, "eng").TurnsCompleted == 1 && agentStatus(st, "architect").TurnsCompleted == 2
	})
	var engBox, archBox []listedMessage
	if err := json.Unmarshal([]byte(r.must("inbox", "eng", "--json")), &engBox); err != nil {
		t.Fatal(err)
	}
	if len(engBox) != 1 || engBox[0].From != "architect" || engBox[0].Body != body {
		t.Fatalf("eng's inbox: %+v", engBox)
	}
	if err := json.Unmarshal([]byte(r.must("inbox", "architect", "--json")), &archBox); err != nil {
		t.Fatal(err)
	}
	answered := false
	for _, m := range archBox {
		answered = answered || m.From == "eng" && m.InReplyTo == engBox[0].ID
	}
	if !answered {
		t.Errorf("eng's answer is not in the architect's inbox: %+v", archBox)
	}
}
