package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project"
)

// A team whose state home's path is over 200 bytes (a long home
// directory) runs as any other: the real batty starts its daemon, whose
// control socket is far longer than a socket address holds; `batty
// status`, `send`, `inbox` and `doctor` reach it; the agent's shim reaches
// the shared app-server's broker, whose socket is under the state
// directory too; `batty stop` stops it and its sockets are gone.
func TestE2ELongStateHome(t *testing.T) {
	state := t.TempDir()
	for len(state) < 200 {
		state = filepath.Join(state, strings.Repeat("h", 50))
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	// Set before newTeamRun: its stop at the end of the test needs it.
	t.Setenv(project.EnvStateHome, state)
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	r := newTeamRun(t, "e2e-long")
	r.writeTeam(fmt.Sprintf(`name: longhome
codex:
  bin: %s
  codex_home: %s
  sandbox: danger-full-access
roles:
  - name: eng
    codex: {runtime: app-server, app_server: per-account}
`, codexBin, home))
	l := layoutOf(t, r.dir)
	if !strings.HasPrefix(l.Socket(), state+"/") || len(l.Socket()) < 200 {
		t.Fatalf("control socket %s: want it under %s", l.Socket(), state)
	}
	r.must("start", "--no-tmux")
	r.must("send", "eng", "hello [[mock:reply LONG-HOME-OK]]")
	st := r.waitStatus("eng's turn", func(st control.Status) bool { return agentStatus(st, "eng").TurnsCompleted == 1 })
	shared := agentStatus(st, "eng").AppServer
	if shared == nil || !strings.HasPrefix(shared.Socket, l.Dir+"/") {
		t.Fatalf("eng's app-server %+v: want the broker's socket in %s", shared, l.Dir)
	}
	if out := r.must("inbox", "--json"); !strings.Contains(out, "LONG-HOME-OK") {
		t.Fatalf("the human's inbox lacks the reply:\n%s", out)
	}
	out, errOut, _ := r.batty("doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s%s", err, out, errOut)
	}
	answered := false
	for _, c := range rep.Checks {
		answered = answered || c.Name == "appserver" && c.Status == "ok" && strings.Contains(c.Detail, "its broker answers on "+shared.Socket)
	}
	if !answered {
		t.Errorf("doctor did not reach the broker at %s: %+v", shared.Socket, rep.Checks)
	}
	r.must("stop", "--timeout", "5s")
	for _, sock := range []string{l.Socket(), shared.Socket} {
		if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after stop %s is still there: %v", sock, err)
		}
	}
}
