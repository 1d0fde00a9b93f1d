package orchestrator

import (
	"testing"

	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/team"
)

func TestSharedKey(t *testing.T) {
	base := sharedKey("/bin/codex", "/h/a", []string{"A=1"}, []string{"-c", "x=1"})
	if base != sharedKey("/bin/codex", "/h/a", []string{"A=1"}, []string{"-c", "x=1"}) {
		t.Fatal("the same settings name two processes")
	}
	for name, k := range map[string]string{
		"another account":  sharedKey("/bin/codex", "/h/b", []string{"A=1"}, []string{"-c", "x=1"}),
		"another binary":   sharedKey("/bin/codex2", "/h/a", []string{"A=1"}, []string{"-c", "x=1"}),
		"another env":      sharedKey("/bin/codex", "/h/a", []string{"A=2"}, []string{"-c", "x=1"}),
		"another setting":  sharedKey("/bin/codex", "/h/a", []string{"A=1"}, []string{"-c", "x=2"}),
		"env moved to arg": sharedKey("/bin/codex", "/h/a", nil, []string{"A=1", "-c", "x=1"}),
		"parts run on":     sharedKey("/bin/codex", "/h/a", []string{"A=1-c"}, []string{"x=1"}),
	} {
		if k == base {
			t.Errorf("%s shares the process", name)
		}
	}
}

func TestSharedWanted(t *testing.T) {
	agent := func(runtime, mode, host string) team.Agent {
		return team.Agent{Name: "a", Host: host, Codex: team.CodexSettings{Runtime: runtime, AppServer: mode}}
	}
	for _, c := range []struct {
		def  team.Agent
		want bool
	}{
		{agent(team.RuntimeAppServer, team.AppServerPerAccount, ""), true},
		{agent(team.RuntimeAppServer, team.AppServerPerAgent, ""), false},
		{agent(team.RuntimeExec, team.AppServerPerAccount, ""), false},
		{agent(team.RuntimeAppServer, team.AppServerPerAccount, "build1"), false},
	} {
		on := host.On(team.Host{Name: c.def.Host}, host.Local{}, host.Remote{})
		if got := sharedWanted(c.def, on); got != c.want {
			t.Errorf("sharedWanted(%+v) = %v, want %v", c.def.Codex, got, c.want)
		}
	}
}
