package shim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/syncbuf"
	"github.com/battyhq/batty/team"
)

func TestTakeStdio(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want []string
		ok   bool
	}{
		{[]string{"--agent=a"}, []string{"--agent=a"}, false},
		{[]string{"--agent=a", "--stdio"}, []string{"--agent=a"}, true},
		{[]string{"--stdio", "--agent=a", "--stdio"}, []string{"--agent=a"}, true},
		{[]string{"--agent=--stdio"}, []string{"--agent=--stdio"}, false},
	} {
		in := append([]string(nil), tt.in...)
		got, ok := takeStdio(in)
		if !reflect.DeepEqual(got, tt.want) || ok != tt.ok || !reflect.DeepEqual(in, tt.in) {
			t.Errorf("takeStdio(%q) = %q, %v (input now %q); want %q, %v", tt.in, got, ok, in, tt.want, tt.ok)
		}
	}
}

// startStdioClient starts a real shim with the fake codex through
// shimclient.SpawnOptions.Remote: the "transport" is wrap (sh -c SCRIPT
// with the shim's command line as its arguments), run here, the shim
// speaking on its stdin and stdout.
func startStdioClient(t *testing.T, wrap string) (*shimclient.Client, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mark := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	cfg := shimconfig.Config{
		Agent: "far", CodexBin: self, StopGrace: 300 * time.Millisecond,
		Env: []string{"BATTY_TEST_ROLE=fakecodex", "FAKE_CODEX_STATE=" + t.TempDir()},
	}
	log := &syncbuf.Buffer{}
	var argv []string
	remote := func(a []string) (*exec.Cmd, error) {
		argv = a
		cmd := exec.Command("sh", append([]string{"-c", wrap, "sh"}, a...)...)
		cmd.Env = append(os.Environ(), "BATTY_TEST_ROLE=shim", "BATTY_TEST_MARK="+mark)
		return cmd, nil
	}
	c, err := shimclient.Start(context.Background(), shimclient.SpawnOptions{Path: self, Config: cfg, Stderr: log, Remote: remote})
	if err != nil {
		t.Fatalf("start shim: %v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			t.Logf("shim log:\n%s", log.String())
		}
		assertNoProcesses(t, mark)
	})
	if len(argv) < 3 || argv[0] != self || argv[len(argv)-1] != shimconfig.StdioFlag {
		t.Fatalf("remote command line = %q, want %s, its flags, %s", argv, self, shimconfig.StdioFlag)
	}
	if h := c.Hello(); h.Agent != "far" || h.PID == c.Pid() {
		t.Fatalf("hello = %+v: want the shim's own, not the transport's (pid %d)", h, c.Pid())
	}
	return c, mark
}

// nextEvent returns the next event of c, failing the test when none comes
// within eventWait or Events closed.
func nextEvent(t *testing.T, c *shimclient.Client) protocol.Message {
	t.Helper()
	select {
	case m, ok := <-c.Events():
		if !ok {
			t.Fatalf("events closed (%v) while waiting for one", c.Err())
		}
		return m
	case <-time.After(eventWait):
		t.Fatalf("no event within %s", eventWait)
	}
	return nil
}

// TestStdioTurn runs a turn with a shim on stdin and stdout behind a
// transport of its own (a shell that runs it as a child), then stops it.
func TestStdioTurn(t *testing.T) {
	c, _ := startStdioClient(t, `"$@"`)
	if err := c.Send(protocol.SendMessage{ID: "m1", From: team.Human, Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	for {
		if tf, ok := nextEvent(t, c).(protocol.TurnFinished); ok {
			if tf.MessageID != "m1" || tf.Status != protocol.TurnCompleted || tf.Reply != "ECHO:hi" {
				t.Fatalf("turn finished = %+v", tf)
			}
			break
		}
	}
	if err := c.Stop(context.Background(), time.Minute, "test"); err != nil {
		t.Fatalf("stop: %v", err)
	}
}

// TestStdioStreamCut cuts the stream of a shim in the middle of a turn:
// the relays that carry it (cat, in the transport's process group) are
// killed while the shim, in a session of its own as it would be on
// another host, lives on. The end of its stdin stops it, and its codex
// with it.
func TestStdioStreamCut(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skipf("setsid (util-linux) is not installed: %v", err)
	}
	c, _ := startStdioClient(t, `cat | setsid "$@" | cat`)
	if err := c.Send(protocol.SendMessage{ID: "m1", From: team.Human, Body: "scenario:silent"}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, ok := nextEvent(t, c).(protocol.TurnStarted); ok {
			break
		}
	}
	if err := syscall.Kill(-c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	// The cleanup checks that nothing marked (the shim, its codex) is
	// left.
}
