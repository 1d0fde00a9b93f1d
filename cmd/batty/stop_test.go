package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/reap"
)

// With no daemon running, batty stop kills what a team killed together
// with its daemon left running (found by the project's mark).
func TestStopWithoutDaemonKillsLeftovers(t *testing.T) {
	dir, l := writeTeam(t)
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	left := exec.Command("sleep", "300")
	left.Env = append(os.Environ(), reap.MarkEnv+"="+l.Dir)
	left.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { left.Process.Kill(); left.Wait() })

	out, errOut, code := runBattyIn(t, dir, nil, "", "stop")
	if code != 0 || !strings.Contains(out, "batty: not running") || !strings.Contains(out, "killed 1 process(es) an earlier run left running") {
		t.Fatalf("stop: exit %d, %q, %q", code, out, errOut)
	}
	if codextest.Alive(left.Process.Pid) {
		t.Fatal("the leftover survived batty stop")
	}
	// Nothing left: a second stop says only that nothing runs.
	if out, _, code := runBattyIn(t, dir, nil, "", "stop"); code != 0 || out != "batty: not running\n" {
		t.Fatalf("second stop: exit %d, %q", code, out)
	}
}
