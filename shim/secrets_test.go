package shim

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimconfig"
)

// procCmdline returns the command line of a live process as the kernel
// shows it to every local user (/proc/<pid>/cmdline), NULs as spaces.
func procCmdline(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("read command line of pid %d: %v", pid, err)
	}
	if len(b) == 0 {
		t.Fatalf("pid %d has an empty command line (exited?)", pid)
	}
	return string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
}

// A codex.env secret reaches codex's environment and no process's command
// line: neither the shim's nor codex's. The standing instructions reach
// codex (as developer_instructions) but not the shim's command line.
func TestSecretsStayOffEveryCommandLine(t *testing.T) {
	const secret = "sk-test-0b7e5c3a9f1d"
	const prompt = "ROLE-PROMPT: you test things."
	argvLog := filepath.Join(t.TempDir(), "codex-argv")
	h := startShim(t, func(c *shimconfig.Config) {
		c.Env = append(c.Env, "OPENAI_API_KEY="+secret, "FAKE_CODEX_ARGV="+argvLog)
		c.Instructions = prompt
	})
	shimArgs := procCmdline(t, h.p.Pid())
	for _, leak := range []string{secret, "OPENAI_API_KEY", "ROLE-PROMPT"} {
		if strings.Contains(shimArgs, leak) {
			t.Errorf("the shim's command line holds %q: %s", leak, shimArgs)
		}
	}

	// A running codex: its command line, read while it runs.
	h.send("m1", "scenario:slow:60")
	ev := h.expect(kAccepted, kState, kStarted, kThread)
	codexArgs := procCmdline(t, ev[2].(protocol.TurnStarted).PID)
	if strings.Contains(codexArgs, secret) || strings.Contains(codexArgs, "OPENAI_API_KEY") {
		t.Errorf("codex's command line holds the secret: %s", codexArgs)
	}
	if !strings.Contains(codexArgs, `developer_instructions="`+prompt+`"`) {
		t.Errorf("codex's command line lacks the instructions: %s", codexArgs)
	}
	h.command(protocol.Interrupt{Reason: "test"})
	h.finished("m1", protocol.TurnInterrupted)
	h.expect(kState)

	// Codex still gets the secret, in its environment.
	h.send("m2", "scenario:env:OPENAI_API_KEY")
	h.expect(kAccepted, kState, kStarted)
	if tf := h.finished("m2", protocol.TurnCompleted); tf.Reply != secret {
		t.Fatalf("codex saw OPENAI_API_KEY=%q, want %q", tf.Reply, secret)
	}
	b, err := os.ReadFile(argvLog)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Fatalf("fake codex recorded %d command lines, want 2:\n%s", n, b)
	}
	if strings.Contains(string(b), secret) {
		t.Fatalf("a codex command line held the secret:\n%s", b)
	}
}
