package orchestrator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/textclip"
)

func TestAlertFor(t *testing.T) {
	turn := func(status protocol.TurnStatus, failure protocol.FailureKind, requeued bool) Event {
		return Event{Type: EvTurnFinished, Agent: "eng", Message: "m1", Detail: "codex exited 3",
			Data: map[string]any{"status": status, "failure": failure, "requeued": requeued}}
	}
	for _, tc := range []struct {
		name    string
		e       Event
		kind    string // "" = no alert
		message string
	}{
		{"quota", Event{Type: EvQuotaBlocked, Agent: "eng", Detail: "try again at 10:56 PM"}, AlertQuota, "quota exhausted (reported by eng): try again at 10:56 PM"},
		{"auth", Event{Type: EvAuthRequired, Agent: "eng", Detail: "401 — run codex login"}, AlertAuth, "codex needs a login (reported by eng): 401 — run codex login"},
		{"network", Event{Type: "network_waiting", Agent: "eng", Detail: "Reconnecting... waiting for network"}, AlertNetwork, "the API is unreachable (reported by eng): Reconnecting... waiting for network"},
		{"context", Event{Type: EvContextExhaust, Agent: "eng", Detail: "window full"}, AlertContext, "eng's context window is full: window full"},
		{"message failed event", Event{Type: "message_failed", Agent: "eng", Message: "m1", Detail: "500 after 3 attempts"}, AlertMessageFailed, "message m1 to eng failed: 500 after 3 attempts"},
		{"turn failed", turn(protocol.TurnFailed, protocol.FailExit, false), AlertMessageFailed, "message m1 to eng failed (exit): codex exited 3"},
		{"turn failed, decoded from JSON", Event{Type: EvTurnFinished, Agent: "eng", Message: "m1", Data: map[string]any{"status": "timed_out", "requeued": false}}, AlertMessageFailed, "message m1 to eng timed_out"},
		{"turn failed but requeued", turn(protocol.TurnFailed, protocol.FailQuota, true), "", ""},
		{"turn failed, told by message_failed", Event{Type: EvTurnFinished, Agent: "eng", Message: "m1",
			Data: map[string]any{"status": protocol.TurnFailed, "failure": protocol.FailStream, "requeued": false, "alerted": true}}, "", ""},
		{"turn failed, told by context_exhausted", Event{Type: EvTurnFinished, Agent: "eng", Message: "m1",
			Data: map[string]any{"status": protocol.TurnFailed, "failure": protocol.FailContextWindow, "requeued": false, "alerted": true}}, "", ""},
		{"turn completed", turn(protocol.TurnCompleted, protocol.FailNone, false), "", ""},
		{"rejected", Event{Type: EvRejected, Agent: "eng", Message: "m2", Detail: "qa may not message eng (talks_to)"}, AlertMessageFailed, "message m2 to eng rejected: qa may not message eng (talks_to)"},
		{"agent failed", Event{Type: EvAgentFailed, Agent: "eng", Detail: "5 crashes within 1m0s"}, AlertAgentFailed, "eng failed: 5 crashes within 1m0s"},
		{"wedged", Event{Type: EvWedged, Agent: "eng", Detail: "no pong within 10s"}, AlertAgentWedged, "eng's shim stopped answering and was killed: no pong within 10s"},
		{"parked", Event{Type: EvAgentParked, Agent: "eng", Detail: "codex not found"}, AlertAgentParked, "eng is parked: codex not found"},
		{"reply", Event{Type: EvReply, Agent: "eng", Message: "r1", Data: map[string]any{"preview": "done, tests pass"}}, AlertReply, "eng replied to you: done, tests pass"},
		{"schedule failed", Event{Type: EvScheduleFailed, Message: "s-1", Detail: "failed exit: codex exited 3", Data: map[string]any{"schedule": "nightly"}},
			AlertSchedule, "schedule nightly failed: failed exit: codex exited 3"},
		{"schedule stopped", Event{Type: EvScheduleStopped, Data: map[string]any{"schedule": "nightly"}}, "", ""},
		{"reply without preview", Event{Type: EvReply, Agent: "eng"}, AlertReply, "eng replied to you"},
		{"no agent", Event{Type: EvQuotaBlocked}, AlertQuota, "quota exhausted (reported by the team)"},
		{"delivered", Event{Type: EvDelivered, Agent: "eng"}, "", ""},
		{"warning", Event{Type: EvWarning, Agent: "eng", Detail: "x"}, "", ""},
		{"paused", Event{Type: EvPaused, Detail: "quota"}, "", ""},
		{"shim exited", Event{Type: EvShimExited, Agent: "eng"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ok := AlertFor(tc.e)
			if ok != (tc.kind != "") || a.Kind != tc.kind || a.Message != tc.message {
				t.Fatalf("AlertFor = %v %q %q, want %q %q", ok, a.Kind, a.Message, tc.kind, tc.message)
			}
			if ok && (a.Agent != tc.e.Agent || a.Event != tc.e.Type || a.MessageID != tc.e.Message) {
				t.Fatalf("alert %+v does not carry the event's agent, type and message", a)
			}
		})
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"a\x00b", 10, "a\x00b"}, // cleaned for the environment by alertEnv
		{"abcdefghij", 6, "abc…"},
		{"ééééé", 7, "éé…"}, // é is 2 bytes, … is 3: never half a rune
	} {
		if got := textclip.Bytes(tc.in, tc.n, textclip.Ellipsis); got != tc.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestAlertEnv: BATTY_ALERT_MESSAGE is one line, as documented, whatever
// the error or reply it quotes holds: no ESC (an OSC 52 would write the
// clipboard of the terminal a hook echoes it to), no CR, LF or NUL, no
// bidirectional control; what was removed shows as an escape. Stdin keeps
// the whole text.
func TestAlertEnv(t *testing.T) {
	e := Event{Type: EvAgentFailed, Agent: "eng", Detail: "boom\x1b]52;c;Y3VybA==\x07\x1b]0;pwned\x07\r\nfake\x00 \u202eevil\u2066"}
	a, ok := AlertFor(e)
	if !ok {
		t.Fatal("no alert")
	}
	env := alertEnv(a)
	want := []string{"BATTY_ALERT_KIND=agent_failed", "BATTY_ALERT_AGENT=eng",
		`BATTY_ALERT_MESSAGE=eng failed: boom fake\x00 \u202eevil\u2066`}
	if !slices.Equal(env, want) {
		t.Fatalf("environment %q, want %q", env, want)
	}
	if a.Message != "eng failed: "+e.Detail {
		t.Fatalf("the alert's message (stdin) is %q, want the whole text", a.Message)
	}
}

// TestTurnError: an agent's last error names the status, the failure kind
// when there is one, and the error, without an empty kind between.
func TestTurnError(t *testing.T) {
	for _, tc := range []struct{ status, failure, err, want string }{
		{"interrupted", "", "turn interrupted", "interrupted: turn interrupted"},
		{"failed", "exit", "codex exited 3", "failed exit: codex exited 3"},
		{"timed_out", "", "no answer in 10m", "timed_out: no answer in 10m"},
	} {
		if got := turnError(tc.status, tc.failure, tc.err); got != tc.want {
			t.Errorf("turnError(%q, %q, %q) = %q, want %q", tc.status, tc.failure, tc.err, got, tc.want)
		}
	}
}

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

func TestAlertQueueDropsTheOldest(t *testing.T) {
	h := &alertHook{limit: 2, wake: make(chan struct{}, 1)}
	for _, id := range []string{"a", "b", "c"} {
		h.event(Event{Type: EvAgentFailed, Agent: id})
	}
	h.event(Event{Type: EvReply, Agent: "d"}) // replies are off
	a, dropped, ok := h.next()
	if !ok || a.Agent != "b" || dropped != 1 {
		t.Fatalf("next = %+v, dropped %d, %v; want b, 1 dropped", a, dropped, ok)
	}
	if a, dropped, ok = h.next(); !ok || a.Agent != "c" || dropped != 0 {
		t.Fatalf("next = %+v, dropped %d, %v; want c", a, dropped, ok)
	}
	if _, _, ok = h.next(); ok {
		t.Fatal("queue not empty")
	}
	h.close()
	h.event(Event{Type: EvAgentFailed, Agent: "e"})
	if _, _, ok = h.next(); ok {
		t.Fatal("an alert queued after close")
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
	hook := hookScript(t, p.dir, "record.sh", `f="$1/$(date +%s%N)-$$"
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
	var alerts []Alert
	waitFor(t, "the reply's alert", func() bool {
		alerts = alerts[:0]
		envs, _ := filepath.Glob(filepath.Join(rec, "*.envdone"))
		reply := false
		for _, envFile := range envs {
			base := strings.TrimSuffix(envFile, ".envdone")
			env, _ := os.ReadFile(envFile)
			in, _ := os.ReadFile(base + ".json")
			var a Alert
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
			reply = reply || a.Kind == AlertReply
		}
		return reply
	})
	failed := map[string]int{}
	for _, a := range alerts {
		switch a.Kind {
		case AlertMessageFailed:
			failed[a.MessageID]++
			if a.Agent != "solo" || a.Team != "test" || !strings.Contains(a.Message, "failed") {
				t.Errorf("message_failed alert %+v", a)
			}
		case AlertContext:
			failed[a.MessageID]++
		case AlertReply:
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
	hook := hookScript(t, p.dir, "hang.sh", `sleep 1000 &
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
	hook := hookScript(t, p.dir, "fail.sh", "echo boom-on-stderr >&2\nexit 7\n")
	p.cfg.OnAlert = []string{hook}
	r := p.start(nil)
	r.finished(t, p.send("solo", "human", "scenario:crash"))
	waitFor(t, "the failure in the log", func() bool {
		l := r.logString()
		return strings.Contains(l, "Alert command failed") && strings.Contains(l, "exit=7") && strings.Contains(l, "boom-on-stderr")
	})
	// A hook that cannot start is logged too, and the daemon goes on.
	p2 := newProject(t, "  - name: solo\n")
	p2.cfg.OnAlert = []string{filepath.Join(p2.dir, "no-such-hook")}
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
	hook := hookScript(t, p.dir, "wait.sh", `echo $$ > "$1/pid.tmp" && mv "$1/pid.tmp" "$1/pid"
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
		Call(p.layout, Request{Op: OpStop, Timeout: time.Second}, waitLimit)
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
	st, err := Call(p.layout, Request{Op: OpStatus}, waitLimit)
	if err != nil || st.Status.Agents[0].ShimPID <= 0 {
		t.Fatalf("status %+v, %v", st.Status, err)
	}
	shim := st.Status.Agents[0].ShimPID
	syscall.Kill(shim, syscall.SIGKILL)
	waitFor(t, "the shim's respawn", func() bool {
		st, err := Call(p.layout, Request{Op: OpStatus}, waitLimit)
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

// A reply between agents is no alert (the feed shows it); a reply to the
// human is (alert_on_reply decides whether on_alert hears of it); a failed
// outcome write is.
func TestAlertForRepliesAndRecording(t *testing.T) {
	if _, ok := AlertFor(Event{Type: EvReply, Agent: "eng", Data: map[string]any{"to": "arch"}}); ok {
		t.Error("a reply to an agent is an alert")
	}
	if a, ok := AlertFor(Event{Type: EvReply, Agent: "eng", Data: map[string]any{"to": "human"}}); !ok || a.Kind != AlertReply {
		t.Errorf("a reply to the human: %+v %v", a, ok)
	}
	if a, ok := AlertFor(Event{Type: EvRecordFailed, Agent: "eng", Detail: "no space"}); !ok || a.Kind != AlertRecordFailed || a.Message != "eng cannot record an outcome: no space" {
		t.Errorf("record_failed: %+v %v", a, ok)
	}
	if _, ok := AlertFor(Event{Type: EvRecordRecovered, Agent: "eng"}); ok {
		t.Error("record_recovered is an alert")
	}
}
