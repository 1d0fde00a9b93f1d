package alerthook

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/alerts/alertstest"
	"github.com/battyhq/batty/eventlog"
)

// TestAlertEnv: BATTY_ALERT_MESSAGE is one line, as documented, whatever
// the error or reply it quotes holds: no ESC (an OSC 52 would write the
// clipboard of the terminal a hook echoes it to), no CR, LF or NUL, no
// bidirectional control; what was removed shows as an escape. Stdin keeps
// the whole text.
func TestAlertEnv(t *testing.T) {
	e := eventlog.Event{Type: eventlog.EvAgentFailed, Agent: "eng", Detail: "boom\x1b]52;c;Y3VybA==\x07\x1b]0;pwned\x07\r\nfake\x00 \u202eevil\u2066"}
	a, ok := eventlog.AlertFor(e)
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

// TestHookConformance: the on_alert sink, running a real script, keeps the
// alerts.Sink contract. The script records the alert's agent, then, while
// the test sticks it, waits on a FIFO.
func TestHookConformance(t *testing.T) {
	alertstest.Run(t, func(t *testing.T, limit int, log hclog.Logger) alertstest.Harness {
		dir := t.TempDir()
		out, gate := filepath.Join(dir, "out"), filepath.Join(dir, "gate")
		script := filepath.Join(dir, "hook.sh")
		body := "#!/bin/sh\necho \"$BATTY_ALERT_AGENT\" >> " + out + "\nif [ -p " + gate + " ]; then read x < " + gate + "; fi\n"
		if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
		h := New(Config{Argv: []string{script}, Dir: dir, Timeout: time.Minute, Log: log, Limit: limit,
			Start: func(c *exec.Cmd) error { return c.Start() }, Release: func(int) {}})
		h.Start()
		t.Cleanup(func() { h.Close(context.Background()) })
		return alertstest.Harness{Sink: h,
			Stick: func() func() {
				if err := syscall.Mkfifo(gate, 0o600); err != nil {
					t.Fatal(err)
				}
				// Held open for writing: the script's open never waits,
				// its read does until release writes a line.
				f, err := os.OpenFile(gate, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				var once sync.Once
				return func() {
					once.Do(func() {
						os.Remove(gate)
						f.WriteString("\n")
						f.Close()
					})
				}
			},
			Delivered: func() []string {
				b, err := os.ReadFile(out)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
				return strings.Fields(string(b))
			}}
	})
}

// TestHookSkipsRepliesUnlessAsked: replies reach on_alert only with
// alert_on_reply.
func TestHookSkipsRepliesUnlessAsked(t *testing.T) {
	reply, _ := eventlog.AlertFor(eventlog.Event{Type: eventlog.EvReply, Agent: "eng", Data: eventlog.Reply{To: "human"}})
	failed, _ := eventlog.AlertFor(eventlog.Event{Type: eventlog.EvAgentFailed, Agent: "eng"})
	for _, replies := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "out")
		h := New(Config{Argv: []string{"sh", "-c", `echo "$BATTY_ALERT_KIND" >> "$0"`, out}, Replies: replies,
			Start: func(c *exec.Cmd) error { return c.Start() }, Release: func(int) {}})
		h.Start()
		h.Alert(reply)
		h.Alert(failed)
		h.Close(context.Background())
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want := "agent_failed\n"
		if replies {
			want = "reply\n" + want
		}
		if string(b) != want {
			t.Errorf("alert_on_reply %v: on_alert heard %q, want %q", replies, b, want)
		}
	}
}
