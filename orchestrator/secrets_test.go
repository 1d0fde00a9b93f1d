package orchestrator

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/eventlog"
)

// A codex.env secret from team.yaml reaches codex's environment and no
// process's command line: not the shim's, not codex's.
func TestCodexEnvSecretIsOnNoCommandLine(t *testing.T) {
	const secret = "sk-team-yaml-5e4d3c2b1a"
	dir := t.TempDir()
	argvLog := filepath.Join(dir, "codex-argv")
	prompt := filepath.Join(dir, "solo.md")
	if err := os.WriteFile(prompt, []byte("SOLO-ROLE-PROMPT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newProject(t, fmt.Sprintf(`  - name: solo
    prompt: %s
    codex:
      env:
        OPENAI_API_KEY: %s
        FAKE_CODEX_ARGV: %s
`, prompt, secret, argvLog))
	r := p.start(nil)
	e := r.waitEvent(t, "shim start", func(e eventlog.Event) bool { return e.Type == eventlog.EvShimStarted && e.Agent == "solo" })
	pid := payloadOf[eventlog.ShimStarted](e).PID
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		t.Fatalf("command line of shim %d: %q, %v", pid, b, err)
	}
	if shimArgs := string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})); strings.Contains(shimArgs, secret) || strings.Contains(shimArgs, "OPENAI_API_KEY") {
		t.Fatalf("the shim's command line holds the secret: %s", shimArgs)
	}

	id := p.send("solo", "human", "scenario:env:OPENAI_API_KEY")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s", st)
	}
	done, _, err := p.box("solo").Get(id)
	if err != nil || done.Outcome == nil || done.Outcome.Reply != secret {
		t.Fatalf("codex did not see the secret in its environment: %+v, %v", done.Outcome, err)
	}
	argv, err := os.ReadFile(argvLog)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(argv), secret) || !strings.Contains(string(argv), `developer_instructions="SOLO-ROLE-PROMPT\n\n--- batty: you are part of a team ---`) {
		t.Fatalf("codex's command line: %q", argv)
	}
}
