package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/cockpit"
	"github.com/battyhq/batty/cockpit/tmuxtest"
	"github.com/battyhq/batty/project/projecttest"
)

// fakeTeam writes a team whose agents run the fake codex.
func fakeTeam(t *testing.T, name string, agents int) string {
	t.Helper()
	dir := t.TempDir()
	self := projecttest.Executable(t) // outside /tmp, where the agents may write
	yaml := fakeTeamYAML(name, self, t.TempDir(), agents)
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fakeTeamYAML is a team file: agents instances of one role whose codex
// is bin (the test binary as the fake codex), its state under state.
func fakeTeamYAML(name, bin, state string, agents int) string {
	return fmt.Sprintf(`name: %s
codex:
  bin: %s
  env:
    BATTY_TEST_ROLE: fakecodex
    CODEX_API_KEY: fake-key-no-login-needed
    FAKE_CODEX_STATE: %s
timeouts:
  shutdown: 5s
roles:
  - name: eng
    instances: %d
`, name, bin, state, agents)
}

// mustBatty runs batty in dir and fails the test unless it exits 0.
func mustBatty(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, errOut, code := runBattyIn(t, dir, nil, "", args...)
	if code != 0 {
		log, _ := os.ReadFile(filepath.Join(layoutOf(t, dir).Dir, "daemon.log"))
		t.Fatalf("batty %s: exit %d\n%s%s\ndaemon.log:\n%s", strings.Join(args, " "), code, out, errOut, log)
	}
	return out + errOut
}

// pollTmux polls a tmux query until ok holds: tmux gives no event for a
// pane's content or title.
func pollTmux(t *testing.T, what string, query func() string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := query()
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last:\n%s", what, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCockpit starts a team of two fake agents with its cockpit, with
// stdout not a terminal: the session is on the project's private server,
// with the feed and one pane per agent, titled; an agent's reply shows in
// its pane and the turn in the feed; titles follow the state (working,
// idle, waiting for network, quota paused) and alerts are in the feed; attach needs a terminal; stop removes the session
// and the server.
func TestCockpit(t *testing.T) {
	bin := tmuxtest.Need(t)
	dir := fakeTeam(t, "cock-pit", 2)
	out := mustBatty(t, dir, "start")
	if !strings.Contains(out, "batty attach") {
		t.Fatalf("start does not say how to see the cockpit:\n%s", out)
	}
	stopped := false
	defer func() {
		if !stopped {
			runBattyIn(t, dir, nil, "", "stop")
		}
	}()
	srv := cockpit.Server{Run: cockpit.ExecRunner{Bin: bin, Socket: cockpit.SocketName(dir)}}
	ctx := context.Background()
	sess, err := srv.Find(ctx, "cock-pit")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Feed == "" || len(sess.Panes) != 2 || sess.Panes["eng-1"] == "" || sess.Panes["eng-2"] == "" {
		t.Fatalf("session panes %+v", sess)
	}
	title := func(pane string) func() string {
		return func() string {
			out, _ := srv.Run.Run(ctx, "display-message", "-p", "-t", pane, "#{pane_title}")
			return strings.TrimSpace(out)
		}
	}
	capture := func(pane string) func() string {
		return func() string {
			out, _ := srv.Run.Run(ctx, "capture-pane", "-p", "-J", "-S", "-200", "-t", pane)
			return out
		}
	}
	is := func(want string) func(string) bool { return func(s string) bool { return s == want } }
	has := func(want string) func(string) bool { return func(s string) bool { return strings.Contains(s, want) } }
	pollTmux(t, "eng-1 idle", title(sess.Panes["eng-1"]), is("eng-1 · idle"))
	pollTmux(t, "feed title", title(sess.Feed), is("orchestrator · cock-pit · dispatch running"))

	mustBatty(t, dir, "send", "eng-1", "hello cockpit")
	pollTmux(t, "the reply in eng-1's pane", capture(sess.Panes["eng-1"]), has("ECHO:hello cockpit"))
	pollTmux(t, "the turn in the feed", capture(sess.Feed), has("✔ eng-1: message"))

	mustBatty(t, dir, "send", "eng-2", "scenario:slow:3 take your time")
	pollTmux(t, "eng-2 working", title(sess.Panes["eng-2"]), is("eng-2 · working <1m"))
	pollTmux(t, "eng-2 idle again", title(sess.Panes["eng-2"]), is("eng-2 · idle"))

	// About 4 s without the network (40 notices, 100 ms apart): eng-2
	// waits, eng-1 (same account) is held.
	mustBatty(t, dir, "send", "eng-2", "scenario:netwait:40 no network")
	pollTmux(t, "eng-2 waiting for network", title(sess.Panes["eng-2"]), is("eng-2 · waiting for network"))
	pollTmux(t, "eng-1 held", title(sess.Panes["eng-1"]), is("eng-1 · held: no network"))
	pollTmux(t, "the alert in the feed", capture(sess.Feed), has("ALERT eng-2: codex waits for the network"))
	pollTmux(t, "eng-2 back", title(sess.Panes["eng-2"]), is("eng-2 · idle"))
	pollTmux(t, "eng-1 back", title(sess.Panes["eng-1"]), is("eng-1 · idle"))

	mustBatty(t, dir, "send", "eng-1", "scenario:quotaonce")
	pollTmux(t, "eng-1 quota paused", title(sess.Panes["eng-1"]), is("eng-1 · quota paused · 1 waiting"))
	pollTmux(t, "the alert in the feed", capture(sess.Feed), has("ALERT quota exhausted (eng-1)"))

	_, errOut, code := runBattyIn(t, dir, nil, "", "attach")
	if code != 1 || !strings.Contains(errOut, "needs a terminal") {
		t.Fatalf("attach without a terminal: exit %d, %s", code, errOut)
	}

	mustBatty(t, dir, "stop")
	stopped = true
	if ok, err := srv.Has(ctx, "cock-pit"); ok || err != nil {
		t.Fatalf("session after stop: %v, %v", ok, err)
	}
	if _, err := srv.Run.Run(ctx, "list-sessions"); !cockpit.NoServer(err) {
		t.Fatalf("the private server survived stop: %v", err)
	}
	_, errOut, code = runBattyIn(t, dir, nil, "", "attach")
	if code != 1 || !strings.Contains(errOut, "is not running") {
		t.Fatalf("attach to a stopped team: exit %d, %s", code, errOut)
	}
}

// TestStartWithoutTmux: with no tmux on PATH, start says how to install it
// and runs the team without the cockpit; --no-tmux never looks for it, and
// attach explains that the team has no cockpit.
func TestStartWithoutTmux(t *testing.T) {
	dir := fakeTeam(t, "plain", 1)
	defer runBattyIn(t, dir, nil, "", "stop") // whatever failed, nothing stays
	noTmux := []string{"PATH=" + t.TempDir()}
	out, errOut, code := runBattyIn(t, dir, noTmux, "", "start")
	if code != 0 || !strings.Contains(errOut, "tmux not found") || !strings.Contains(errOut, "apt-get install tmux") || strings.Contains(out, "batty attach") {
		t.Fatalf("start without tmux: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = runBattyIn(t, dir, nil, "", "attach")
	if code != 1 || !strings.Contains(errOut, "without a cockpit") {
		t.Fatalf("attach to a team without a cockpit: exit %d, %s", code, errOut)
	}
	mustBatty(t, dir, "stop")

	out = mustBatty(t, dir, "start", "--no-tmux")
	if strings.Contains(out, "cockpit") {
		t.Fatalf("start --no-tmux mentions a cockpit:\n%s", out)
	}
	mustBatty(t, dir, "send", "eng", "hi")
	mustBatty(t, dir, "stop")
}

// TestAttach attaches a terminal (script(1) gives it one) from a
// subdirectory of the project: tmux shows it the session, an alert reaches
// it as a message, and detaching leaves the team running.
func TestAttach(t *testing.T) {
	bin := tmuxtest.Need(t)
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed")
	}
	dir := fakeTeam(t, "att", 1)
	mustBatty(t, dir, "start")
	defer runBattyIn(t, dir, nil, "", "stop")
	sub := filepath.Join(dir, "src", "deep")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	typescript := filepath.Join(t.TempDir(), "typescript")
	attach := battyCommand(t, sub, []string{"TERM=xterm"}, "attach")
	// script runs the command through a shell: this binary as batty attach.
	cmd := exec.Command(scriptBin, "-qfec", self+" attach", typescript)
	cmd.Dir, cmd.Env = sub, attach.Env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	}()
	srv := cockpit.Server{Run: cockpit.ExecRunner{Bin: bin, Socket: cockpit.SocketName(dir)}}
	ctx := context.Background()
	pollTmux(t, "an attached client", func() string {
		out, _ := srv.Run.Run(ctx, "list-clients", "-t", "=att", "-F", "#{client_name}")
		return out
	}, func(s string) bool { return strings.TrimSpace(s) != "" })

	mustBatty(t, dir, "send", "eng", "scenario:auth")
	pollTmux(t, "the alert on the client", func() string {
		b, _ := os.ReadFile(typescript)
		return string(b)
	}, func(s string) bool { return strings.Contains(s, "codex needs a login (eng)") })

	if _, err := srv.Run.Run(ctx, "detach-client", "-s", "=att"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			b, _ := os.ReadFile(typescript)
			t.Fatalf("attach after detach: %v\n%s", err, b)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("attach did not return after detach")
	}
	if ok, err := srv.Has(ctx, "att"); !ok || err != nil {
		t.Fatalf("session gone after detach: %v %v", ok, err)
	}
}
