package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/battyhq/batty/cmd/batty/internal/iostreams"
	"github.com/battyhq/batty/cockpit/tmuxtest"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/project/projecttest"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimtest"
)

// TestMain lets this test binary be the batty binary itself when
// BATTY_TEST_ROLE=batty, so `batty chat` can re-execute it as `batty shim`.
// With BATTY_TEST_BAD_FRAME=1, that shim sends an undecodable frame after
// accepting its first message.
func TestMain(m *testing.M) {
	switch os.Getenv("BATTY_TEST_ROLE") {
	case "batty":
		if os.Getenv("BATTY_TEST_BAD_FRAME") == "1" && len(os.Args) > 1 && os.Args[1] == "shim" {
			os.Exit(shimtest.BadFrameMain(os.Args[2:], shimtest.NilRetryAt))
		}
		os.Exit(execute(iostreams.System(), os.Args[1:]))
	case "fakecodex":
		os.Exit(codextest.FakeMain(os.Args[1:]))
	case "shimlike":
		os.Exit(shimLikeMain())
	}
	os.Exit(projecttest.Isolated(func() int { return tmuxtest.Isolated(m) }))
}

// runBatty runs this binary as batty with args and stdin; it returns stdout,
// stderr and the exit code.
func runBatty(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runBattyIn(t, "", env, stdin, args...)
}

// runBattyIn is runBatty in the working directory dir ("" for the test's).
func runBattyIn(t *testing.T, dir string, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := battyCommand(t, dir, env, args...)
	cmd.Stdin = strings.NewReader(stdin)
	return runCmd(t, cmd)
}

// runCmd runs cmd and returns its stdout, stderr and exit code; failing to
// start it fails the test.
func runCmd(t testing.TB, cmd *exec.Cmd) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// battyCommand prepares this binary to run as batty in dir with args. The
// environment is the test's without the variables that point batty at a
// project or an agent, plus env.
func battyCommand(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Dir = dir
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BATTY_AGENT=") && !strings.HasPrefix(kv, "BATTY_DIR=") {
			base = append(base, kv)
		}
	}
	if os.Getenv("GORACE") == "" {
		// A race-enabled binary otherwise sleeps a second before exiting.
		base = append(base, "GORACE=atexit_sleep_ms=0")
	}
	cmd.Env = append(append(base, "BATTY_TEST_ROLE=batty"), env...)
	return cmd
}

func chatEnv(t *testing.T) (string, []string) {
	bin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	return bin, []string{"CODEX_HOME=" + srv.WriteHome(t)}
}

func TestChatJSONRunsEveryLineOnOneThread(t *testing.T) {
	bin, env := chatEnv(t)
	out, errOut, code := runBatty(t, env, "hello [[mock:reply ALPHA]]\n\nagain [[mock:reply BETA]]\n",
		"chat", "--json", "--codex-bin", bin, "--cwd", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var finished []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		if ev["event"] == "turn_finished" {
			finished = append(finished, ev)
		}
	}
	if len(finished) != 2 {
		t.Fatalf("%d turn_finished events, want 2 (the empty line is skipped):\n%s", len(finished), out)
	}
	for i, want := range []string{"ALPHA", "BETA"} {
		if finished[i]["status"] != "completed" || finished[i]["reply"] != want {
			t.Fatalf("turn %d = %v", i, finished[i])
		}
	}
	if finished[0]["thread_id"] == "" || finished[0]["thread_id"] != finished[1]["thread_id"] {
		t.Fatalf("threads %v and %v differ", finished[0]["thread_id"], finished[1]["thread_id"])
	}
	if !strings.Contains(out, `"event":"state_changed"`) || !strings.Contains(out, `"to":"stopped"`) {
		t.Fatalf("no clean shutdown in the event stream:\n%s", out)
	}
}

func TestChatExitsNonZeroWhenATurnFails(t *testing.T) {
	bin, env := chatEnv(t)
	out, _, code := runBatty(t, env, "fine\nnot fine [[mock:quota]]\n", "chat", "--codex-bin", bin, "--cwd", t.TempDir())
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"✔ chat-1 completed", "! quota blocked until", "✘ chat-2 failed (quota)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestChatWithoutCodex(t *testing.T) {
	out, _, code := runBatty(t, nil, "hi\n", "chat", "--codex-bin", "/nonexistent/codex")
	if code != 1 || !strings.Contains(out, "(spawn)") || !strings.Contains(out, "/nonexistent/codex") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

// A frame chat cannot decode (one the msgpack library panics on) is an
// error that closes the channel: chat says so and exits 1, it does not
// crash.
func TestChatSurvivesAnUndecodableFrame(t *testing.T) {
	out, errOut, code := runBatty(t, []string{"BATTY_TEST_BAD_FRAME=1"}, "hello\n",
		"chat", "--codex-bin", "/nonexistent/codex", "--cwd", t.TempDir())
	if code != 1 || strings.Contains(errOut, "goroutine ") {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"broke the control channel", "decode quota_blocked", "1 message(s) unfinished"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, code := runBatty(t, nil, "", "version")
	if code != 0 || !strings.HasPrefix(out, "batty ") || !strings.Contains(out, fmt.Sprintf("(protocol %d)", protocol.Version)) {
		t.Fatalf("exit %d, output %q", code, out)
	}
}
