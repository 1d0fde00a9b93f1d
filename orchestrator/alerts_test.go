package orchestrator

import (
	"encoding/json"
	"fmt"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/project/projecttest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/reap"
)

func TestFailedCooldown(t *testing.T) {
	lo, hi := time.Minute, 30*time.Minute
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{
		{0, time.Minute}, {1, time.Minute}, {2, 2 * time.Minute}, {3, 4 * time.Minute}, {5, 16 * time.Minute},
		{6, 30 * time.Minute}, {7, 30 * time.Minute}, {1000, 30 * time.Minute},
	} {
		if got := failedCooldown(tc.n, lo, hi); got != tc.want {
			t.Errorf("failedCooldown(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
	if got := failedCooldown(3, time.Hour, time.Minute); got != time.Minute {
		t.Errorf("cap below the start: %s", got)
	}
}

// hookScript writes an executable shell script into dir and returns its
// path.
func hookScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every failed message reaches on_alert once — one failed outright, one
// whose retries ran out, one too large for the context window (as a
// context alert) — and, with alert_on_reply, a reply too; each with the
// documented environment and JSON.
func TestOnAlertGetsMessageFailed(t *testing.T) {
	p := newProjectWith(t, "max_attempts: 2\n", "  - name: solo\n")
	rec := filepath.Join(p.dir, "alerts")
	os.Mkdir(rec, 0o700)
	hook := hookScript(t, projecttest.TempProgramDir(t), "record.sh", `f="$1/$(date +%s%N)-$$"
env > "$f.env"
cat > "$f.json"
mv "$f.env" "$f.envdone"
`)
	p.cfg.OnAlert = []string{hook, rec}
	p.cfg.AlertOnReply = true
	r := p.start(fastRetries)
	crashed := p.send("solo", "human", "scenario:crash")
	if st := r.finished(t, crashed); st != "failed" {
		t.Fatalf("status %s", st)
	}
	exhausted := p.send("solo", "human", "scenario:servererror")
	if st := r.finished(t, exhausted); st != "failed" {
		t.Fatalf("status %s", st)
	}
	overflow := p.send("solo", "human", "enormous scenario:context")
	if st := r.finished(t, overflow); st != "failed" {
		t.Fatalf("status %s", st)
	}
	r.finished(t, p.send("solo", "human", "hello"))

	// One worker runs them in order: once the reply's alert is in, so are
	// the failures' (and any duplicate).
	var alerts []eventlog.Alert
	waitFor(t, "the reply's alert", func() bool {
		alerts = alerts[:0]
		envs, _ := filepath.Glob(filepath.Join(rec, "*.envdone"))
		reply := false
		for _, envFile := range envs {
			base := strings.TrimSuffix(envFile, ".envdone")
			env, _ := os.ReadFile(envFile)
			in, _ := os.ReadFile(base + ".json")
			var a eventlog.Alert
			if err := json.Unmarshal(in, &a); err != nil {
				t.Fatalf("stdin %q: %v", in, err)
			}
			for _, want := range []string{"BATTY_ALERT_KIND=" + a.Kind, "BATTY_ALERT_AGENT=solo", "BATTY_ALERT_MESSAGE=" + a.Message,
				reap.MarkEnv + "=" + p.layout.Dir} {
				if !strings.Contains(string(env), want+"\n") {
					t.Fatalf("%s alert: environment lacks %q:\n%s", a.Kind, want, env)
				}
			}
			alerts = append(alerts, a)
			reply = reply || a.Kind == eventlog.AlertReply
		}
		return reply
	})
	failed := map[string]int{}
	for _, a := range alerts {
		switch a.Kind {
		case eventlog.AlertMessageFailed:
			failed[a.MessageID]++
			if a.Agent != "solo" || a.Team != "test" || !strings.Contains(a.Message, "failed") {
				t.Errorf("message_failed alert %+v", a)
			}
		case eventlog.AlertContext:
			failed[a.MessageID]++
		case eventlog.AlertReply:
			if !strings.HasPrefix(a.Message, "solo replied to you: ECHO:") {
				t.Errorf("reply alert %+v", a)
			}
		default:
			t.Errorf("unexpected alert %+v", a)
		}
	}
	if failed[crashed] != 1 || failed[exhausted] != 1 || failed[overflow] != 1 || len(failed) != 3 {
		t.Fatalf("failure alerts per message: %v; want one each for %s, %s and %s", failed, crashed, exhausted, overflow)
	}
}

func TestHangingAlertHookIsKilledAndDispatchGoesOn(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	hook := hookScript(t, projecttest.TempProgramDir(t), "hang.sh", `sleep 1000 &
echo $! > "$1/child"
echo $$ > "$1/pid.tmp" && mv "$1/pid.tmp" "$1/pid"
wait
`)
	p.cfg.OnAlert = []string{hook, p.dir}
	p.cfg.Timeouts.Alert = 2 * time.Second
	r := p.start(nil)
	r.finished(t, p.send("solo", "human", "scenario:crash"))
	var pid, child int
	waitFor(t, "the hook's pid", func() bool {
		b, err := os.ReadFile(filepath.Join(p.dir, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	b, _ := os.ReadFile(filepath.Join(p.dir, "child"))
	child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	hookFD, err := reap.OpenPidfd(pid)
	if err != nil {
		t.Fatalf("hook pid %d: %v", pid, err)
	}
	defer hookFD.Close()
	childFD, err := reap.OpenPidfd(child)
	if err != nil {
		t.Fatalf("hook's child pid %d: %v", child, err)
	}
	defer childFD.Close()

	// The hook hangs; the agent works on.
	if st := r.finished(t, p.send("solo", "human", "still working?")); st != "completed" {
		t.Fatalf("status %s", st)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatal("the hook ended before the next message completed: nothing shows dispatch went on meanwhile")
	}
	deadline := time.Now().Add(waitLimit)
	if !hookFD.WaitExit(deadline) || !childFD.WaitExit(deadline) {
		t.Fatal("the hook's process group was not killed at its time limit")
	}
	waitFor(t, "the kill in the log", func() bool {
		return strings.Contains(r.logString(), "Alert command killed") && strings.Contains(r.logString(), "timeouts.alert (2s)")
	})
}

func TestFailingAlertHookIsLogged(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	hook := hookScript(t, projecttest.TempProgramDir(t), "fail.sh", "echo boom-on-stderr >&2\nexit 7\n")
	p.cfg.OnAlert = []string{hook}
	r := p.start(nil)
	r.finished(t, p.send("solo", "human", "scenario:crash"))
	waitFor(t, "the failure in the log", func() bool {
		l := r.logString()
		return strings.Contains(l, "Alert command failed") && strings.Contains(l, "exit=7") && strings.Contains(l, "boom-on-stderr")
	})
	// A hook that cannot start is logged too, and the daemon goes on.
	p2 := newProject(t, "  - name: solo\n")
	p2.cfg.OnAlert = []string{filepath.Join(projecttest.TempProgramDir(t), "no-such-hook")}
	r2 := p2.start(nil)
	r2.finished(t, p2.send("solo", "human", "scenario:crash"))
	waitFor(t, "the start failure in the log", func() bool {
		return strings.Contains(r2.logString(), "Alert command did not start")
	})
	if st := r2.finished(t, p2.send("solo", "human", "next")); st != "completed" {
		t.Fatalf("status %s", st)
	}
}

// logString is the daemon's log so far.
func (r *running) logString() string {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	return r.log.b.String()
}

// In a daemon that is a subreaper (`batty daemon`), an alert command is its
// own child, not a leftover: a shim's death, which has the daemon kill what
// shims left, leaves it running, and its exit status reaches the daemon.
func TestAlertHookInASubreaperDaemon(t *testing.T) {
	p := newProject(t, "  - name: solo\n")
	hook := hookScript(t, projecttest.TempProgramDir(t), "wait.sh", `echo $$ > "$1/pid.tmp" && mv "$1/pid.tmp" "$1/pid"
i=0
while [ ! -e "$1/go" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
echo hook-finished
`)
	teamFile := filepath.Join(p.dir, "team.yaml")
	b, err := os.ReadFile(teamFile)
	if err != nil {
		t.Fatal(err)
	}
	b = fmt.Appendf(b, "on_alert: [%q, %q]\n", hook, p.dir)
	if err := os.WriteFile(teamFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(p.dir, "daemon-test.log")
	child := p.startChildDaemon("BATTY_TEST_DAEMON_LOG=" + logPath)
	t.Cleanup(func() {
		control.Call(p.layout, control.Request{Op: control.OpStop, Timeout: time.Second}, waitLimit)
		child.Wait()
		assertNoProcesses(t, p.mark)
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("daemon log:\n%s", b)
		}
	})
	p.send("solo", "human", "scenario:crash")
	pid := codextest.WaitPidFile(t, filepath.Join(p.dir, "pid"), waitLimit)
	hookFD, err := reap.OpenPidfd(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer hookFD.Close()
	st, err := control.Call(p.layout, control.Request{Op: control.OpStatus}, waitLimit)
	if err != nil || st.Status.Agents[0].ShimPID <= 0 {
		t.Fatalf("status %+v, %v", st.Status, err)
	}
	shim := st.Status.Agents[0].ShimPID
	syscall.Kill(shim, syscall.SIGKILL)
	waitFor(t, "the shim's respawn", func() bool {
		st, err := control.Call(p.layout, control.Request{Op: control.OpStatus}, waitLimit)
		return err == nil && st.Status.Agents[0].ShimPID > 0 && st.Status.Agents[0].ShimPID != shim
	})
	if syscall.Kill(pid, 0) != nil {
		t.Fatal("the alert command was killed with the dead shim's leftovers")
	}
	os.WriteFile(filepath.Join(p.dir, "go"), nil, 0o600)
	if !hookFD.WaitExit(time.Now().Add(waitLimit)) {
		t.Fatal("the alert command did not finish")
	}
	waitFor(t, "the command's success in the log", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "Alert command ran") && strings.Contains(string(b), "hook-finished")
	})
	if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "Alert command failed") {
		t.Fatalf("the alert command's exit was lost:\n%s", b)
	}
}
