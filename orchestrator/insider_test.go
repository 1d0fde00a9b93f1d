package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/shellword"
)

// ctlClientMain is a command an agent runs that reaches the daemon's
// control socket (Codex's sandbox lets it, with network access): it asks
// the daemon of teamFile for op and prints "answered" or the daemon's
// refusal.
func ctlClientMain(teamFile, op string) int {
	l, err := project.LayoutFor(teamFile)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	req := control.Request{Op: op, Agent: "eng", IDs: []string{"00000000000000000000000000"}, Timeout: time.Second}
	if _, err := control.Call(l, req, 30*time.Second); err != nil {
		fmt.Println(err)
		return 0
	}
	fmt.Println("answered")
	return 0
}

// agentAsks has agent eng's codex run a command that asks the daemon for
// op over the control socket, and returns what the command printed.
func agentAsks(t *testing.T, p *testProject, r *running, op string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The fake codex runs it without arguments: a script says them.
	script := filepath.Join(t.TempDir(), "ask-"+op)
	body := fmt.Sprintf("#!/bin/sh\nBATTY_TEST_ROLE=ctlclient exec %s %s %s\n", shellword.Quote(self), shellword.Quote(p.cfg.Path), op)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	id := p.send("eng", "human", "scenario:run:"+script)
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("%s: status %s", op, st)
	}
	m, _, err := p.box("eng").Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return m.Outcome.Reply
}

// A command an agent runs connects to the daemon's control socket, as
// Codex's sandbox lets it with network access, and asks to pause, stop,
// resume, reset or cancel: every request is refused with the reason, and
// the team keeps running, unpaused. Status is answered. The human (this
// test process) still pauses and stops the team.
func TestAgentCannotStopOrPauseTheTeam(t *testing.T) {
	p := newProject(t, "  - name: eng\n")
	r := p.start(nil)
	for _, op := range []string{control.OpPause, control.OpStop, control.OpResume, control.OpReset, control.OpCancel, control.OpApprove, control.OpReject, "launch"} {
		got := agentAsks(t, p, r, op)
		want := `RUN:refused: this command runs inside agent "eng"'s sandbox (its batty shim, pid `
		if !strings.HasPrefix(got, want) || !strings.Contains(got, "only the human may") {
			t.Fatalf("the agent's %s: %q; want a refusal", op, got)
		}
	}
	if got := agentAsks(t, p, r, control.OpStatus); got != "RUN:answered" {
		t.Fatalf("the agent's status: %q", got)
	}
	st := call(t, p, control.Request{Op: control.OpStatus}).Status
	if st.Dispatch.Paused || r.count(eventlog.EvPaused, "") != 0 || r.count(eventlog.EvDaemonStopped, "") != 0 {
		t.Fatalf("the agent paused or stopped the team: %+v", st.Dispatch)
	}
	// The team still works, and the human still may.
	p.sendAndWait(r, "eng", "still here", "completed")
	if !call(t, p, control.Request{Op: control.OpPause}).Changed {
		t.Fatal("the human's pause changed nothing")
	}
	call(t, p, control.Request{Op: control.OpStop, Timeout: time.Second})
	select {
	case err := <-r.done:
		r.done <- err
	case <-time.After(waitLimit):
		t.Fatal("the human's stop did not stop the daemon")
	}
}
