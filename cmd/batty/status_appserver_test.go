package main

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
)

// The table marks each agent on a shared app-server with its pid and
// lists each shared process once, with its key and its agents; an agent
// on a process of its own gets neither, and text from the status file
// (CODEX_HOME) cannot drive the terminal.
func TestStatusShowsSharedAppServers(t *testing.T) {
	shared := &control.AppServerStatus{PID: 41250, Key: "3f2a9c1e0b7d", CodexHome: "/home/u/.codex\x1b[2J", Socket: "/s/appserver/3f2a9c1e0b7d.sock", Starts: 2}
	var b strings.Builder
	printStatus(&b, control.Status{Team: "t", Daemon: control.DaemonStatus{PID: 1}, Agents: []control.AgentStatus{
		{Name: "eng-1", State: "idle", AppServer: shared},
		{Name: "eng-2", State: "working", AppServer: shared},
		{Name: "solo", State: "idle"},
	}})
	out := b.String()
	for _, want := range []string{
		"idle [app 41250]", "working [app 41250]",
		"shared app-server 41250 (key 3f2a9c1e0b7d, CODEX_HOME /home/u/.codex",
		"started 2 time(s)): eng-1, eng-2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Count(out, "shared app-server") != 1 || strings.Contains(out, "\x1b") {
		t.Errorf("want one line for the shared process, no escape:\n%q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "solo ") && strings.Contains(line, "[app") {
			t.Errorf("an agent on its own process is marked: %q", line)
		}
	}
}
