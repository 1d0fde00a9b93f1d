package orchestrator

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/team"
)

func TestSandboxPolicy(t *testing.T) {
	w := []string{"/c/go-build"}
	deny := []string{"/s/p", "/s/p/worktrees", "", "rel", "/tmp/tmux-1/"}
	denied := []string{"/s/p", "/s/p/worktrees", "/tmp/tmux-1"}
	env := []string{"HOME=/home/u", "XDG_RUNTIME_DIR=/run/user/1", "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1"}
	// With the network on, the user's sockets as for an agent.
	user := append(slices.Clone(denied), "/run/user/1", "/tmp/ssh-x", "/home/u/.gnupg", "/var/run/docker.sock", "/run/docker.sock")
	hidden := []string{"DBUS_SESSION_BUS_ADDRESS", "GPG_AGENT_INFO", "SSH_AUTH_SOCK"}
	tests := []struct {
		name    string
		ws      team.WorkspaceSandbox
		command string
		want    *sandbox.Policy
	}{
		{"off", team.WorkspaceSandbox{Off: true, Writable: w, SetupNetwork: true}, "setup", nil},
		{"off for verify", team.WorkspaceSandbox{Off: true}, "verify", nil},
		{"verify without the network by default", team.WorkspaceSandbox{Writable: w, SetupNetwork: true}, "verify",
			&sandbox.Policy{Bin: "codex", Homes: "/h", Writable: w, Deny: denied}},
		{"setup with it by default", team.WorkspaceSandbox{Writable: w, SetupNetwork: true}, "setup",
			&sandbox.Policy{Bin: "codex", Homes: "/h", Writable: w, Network: true, Deny: user, HideEnv: hidden}},
		{"verify with it", team.WorkspaceSandbox{VerifyNetwork: true}, "verify",
			&sandbox.Policy{Bin: "codex", Homes: "/h", Network: true, Deny: user, HideEnv: hidden}},
		{"setup without it", team.WorkspaceSandbox{VerifyNetwork: true}, "setup", &sandbox.Policy{Bin: "codex", Homes: "/h", Deny: denied}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sandboxPolicy(tt.ws, "codex", "/h", tt.command, deny, env); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("sandboxPolicy =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// The daemon runs the team's setup and verify in Codex's sandbox by
// default: a setup that writes into the project's checkout parks the agent
// naming the setting, and so does a verify that does, for its landing:
// the agent is told which setting, main does not move, nothing is
// written. Neither can read the state directory its worktree lies in
// (each would pass if it could).
func TestTheTeamsCommandsRunInTheSandbox(t *testing.T) {
	bin := codextest.Sandbox(t)
	escape := "echo pwned > ../../../escaped"
	readState := `ls "$` + reap.MarkEnv + `" >/dev/null 2>&1 && exit 0; `
	p := newGitProject(t, "workspace:\n  setup: '"+readState+"test -e ok || "+escape+"'\n  verify: '"+readState+escape+"'\n", "  - name: eng\n    workspace: worktree\n")
	p.cfg.Codex.Bin = bin // the agents keep the fake codex, their role's
	escaped := filepath.Join(p.dir, "escaped")
	r := p.start(nil)
	st := r.waitAgent(t, "eng", "parked by its setup", func(a control.AgentStatus) bool {
		return a.State == agentParked && a.Parked != nil && a.Parked.Kind == string(ProblemWorkspace)
	})
	if !strings.Contains(st.Parked.Detail, sandbox.KeyWritable) {
		t.Fatalf("parked %+v, want the setting named", st.Parked)
	}
	if _, err := os.Stat(escaped); err == nil {
		t.Fatal("the setup wrote into the project's checkout")
	}

	// The setup passes once the worktree has what it looks for.
	if err := os.WriteFile(filepath.Join(p.layout.WorktreesDir(), "eng", "ok"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if resp, err := control.Call(p.layout, control.Request{Op: control.OpResume, Agent: "eng"}, waitLimit); err != nil || !resp.OK {
		t.Fatalf("resume: %+v, %v", resp, err)
	}
	p.sendAndWait(r, "eng", "scenario:write:new.txt=x", "completed")
	before := git(t, p.dir, "rev-parse", "main")
	p.send(team.LandingBox, "human", "eng")
	r.waitEvent(t, "the landing failed", func(e eventlog.Event) bool { return e.Type == eventlog.EvLandingFailed })
	waitMessage(t, p.box("eng"), func(m inbox.Message) bool {
		return strings.Contains(m.Body, "did not land on main") && strings.Contains(m.Body, sandbox.KeyWritable)
	})
	if after := git(t, p.dir, "rev-parse", "main"); after != before {
		t.Fatal("main moved")
	}
	if _, err := os.Stat(escaped); err == nil {
		t.Fatal("verify wrote into the project's checkout")
	}
}
