package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An edited team file that changes what batty runs as the user (here
// on_alert) or how agents are held (the sandbox) is not applied by
// restart unless accepted: without a terminal to ask on, restart lists
// the changes, names --yes and leaves the team running as it was; with
// --yes it restarts. A change of nothing trusted (the model) restarts as
// before, without asking.
func TestRestartAsksBeforeChangedTrustedSettings(t *testing.T) {
	dir := fakeTeam(t, "trust", 1)
	t.Cleanup(func() { runBattyIn(t, dir, nil, "", "stop", "--timeout", "1s") })
	mustBatty(t, dir, "start", "--no-tmux")
	first := jsonStatus(t, dir).Daemon.PID

	file := filepath.Join(dir, "team.yaml")
	orig, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(dir, "pwned")
	edited := strings.Replace(string(orig), "codex:\n", "on_alert: [touch, "+pwned+"]\ncodex:\n  sandbox: danger-full-access\n", 1)
	if err := os.WriteFile(file, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBattyIn(t, dir, nil, "", "restart", "--no-tmux")
	for _, want := range []string{
		"  on_alert: (unset) → touch " + pwned + "\n",
		"  roles.eng.codex.sandbox: workspace-write → danger-full-access\n",
		"batty restart --yes",
	} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Fatalf("restart without a terminal: exit %d, want 1 and %q\nstdout: %s\nstderr: %s", code, want, out, errOut)
		}
	}
	if pid := jsonStatus(t, dir).Daemon.PID; pid != first || strings.Contains(out, "stopped") {
		t.Fatalf("the refused restart stopped the team: pid %d, was %d; %s", pid, first, out)
	}

	if out, errOut, code := restartOnTerminal(t, dir, "n\n"); code != 1 || !strings.Contains(errOut, "Apply them and restart? [y/N]") ||
		!strings.Contains(errOut, "not restarted") || jsonStatus(t, dir).Daemon.PID != first {
		t.Fatalf("restart answered no: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	out = mustBatty(t, dir, "restart", "--no-tmux", "--yes")
	second := jsonStatus(t, dir).Daemon.PID
	if !strings.Contains(out, "batty: stopped (pid ") || second == first || second == 0 {
		t.Fatalf("restart --yes: pid %d (was %d)\n%s", second, first, out)
	}

	// Answered yes on a terminal.
	edited = strings.Replace(edited, "danger-full-access", "read-only", 1)
	if err := os.WriteFile(file, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := restartOnTerminal(t, dir, "y\n"); code != 0 || !strings.Contains(errOut, "roles.eng.codex.sandbox: danger-full-access → read-only") ||
		jsonStatus(t, dir).Daemon.PID == second {
		t.Fatalf("restart answered yes: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	second = jsonStatus(t, dir).Daemon.PID

	// The model is not a trusted setting.
	if err := os.WriteFile(file, []byte(strings.Replace(edited, "codex:\n", "codex:\n  model: other\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out = mustBatty(t, dir, "restart", "--no-tmux")
	if third := jsonStatus(t, dir).Daemon.PID; third == second || strings.Contains(out, "→") {
		t.Fatalf("restart of an untrusted change: pid %d (was %d)\n%s", third, second, out)
	}
}

// The daemon refuses a team whose trusted settings are not the ones
// restart had accepted: they changed again in between.
func TestDaemonRefusesATeamChangedSinceAccepted(t *testing.T) {
	dir := fakeTeam(t, "trust", 1)
	out, errOut, code := runBattyIn(t, dir, nil, "", "daemon", "-f", filepath.Join(dir, "team.yaml"), "--accepted", "0123abcd")
	if code != 1 || !strings.Contains(errOut, "changed again") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(layoutOf(t, dir).Dir, "daemon.lock")); !os.IsNotExist(err) {
		t.Fatalf("the daemon started: %v", err)
	}
}

// restartOnTerminal runs batty restart --no-tmux in dir with stdin a
// terminal on which answer was typed.
func restartOnTerminal(t *testing.T, dir, answer string) (string, string, int) {
	t.Helper()
	m, tty := openPTY(t)
	defer m.Close()
	defer tty.Close()
	if _, err := m.WriteString(answer); err != nil {
		t.Fatal(err)
	}
	cmd := battyCommand(t, dir, nil, "restart", "--no-tmux")
	cmd.Stdin = tty
	return runCmd(t, cmd)
}
