package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/cmd/batty/internal/iostreams"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
)

// Every command line that cannot be run exits 2, a runtime error 1, and
// success 0, whatever the command.
func TestExitCodes(t *testing.T) {
	dir, _ := writeTeam(t)
	for _, tc := range []struct {
		code int
		args []string
	}{
		// usage: unknown command or flag, bad flag value, wrong arguments
		{2, []string{"bogus"}},
		{2, []string{"stat"}},
		{2, []string{"--bogus"}},
		{2, []string{"help", "bogus"}},
		{2, []string{"completion", "bogus"}},
		{2, []string{"completion", "bash", "extra"}},
		{2, []string{"version", "extra"}},
		{2, []string{"status", "--bogus"}},
		{2, []string{"status", "extra"}},
		{2, []string{"start", "extra"}},
		{2, []string{"start", "--no-such-flag"}},
		{2, []string{"stop", "--timeout", "soon"}},
		{2, []string{"pause", "a", "b"}},
		{2, []string{"resume", "--team"}},
		{2, []string{"reset"}},
		{2, []string{"reset", "a", "b"}},
		{2, []string{"send"}},
		{2, []string{"send", "manager"}},
		{2, []string{"send", "--from"}},
		{2, []string{"inbox", "a", "b"}},
		{2, []string{"inbox", "-n", "0"}},
		{2, []string{"inbox", "-n", "many"}},
		{2, []string{"logs"}},
		{2, []string{"logs", "a", "b"}},
		{2, []string{"logs", "-n", "-1", "manager"}},
		{2, []string{"logs", "-n", "x", "manager"}},
		{2, []string{"logs", "--color", "blue", "manager"}},
		{2, []string{"logs", "-f", "team.yaml", "manager"}},
		{2, []string{"logs", "team.yaml"}},
		{2, []string{"init", "a", "b"}},
		{2, []string{"validate", "extra"}},
		{2, []string{"chat", "extra"}},
		{2, []string{"chat", "--turn-timeout", "forever"}},
		// runtime errors
		{1, []string{"logs", "nobody"}},
		{1, []string{"send", "nobody", "hi"}},
		{1, []string{"reset", "nobody"}},
		{1, []string{"status", "--team", filepath.Join(dir, "missing.yaml")}},
		{1, []string{"validate", "-f", filepath.Join(dir, "missing.yaml")}},
		// success
		{0, nil},
		{0, []string{"--help"}},
		{0, []string{"help"}},
		{0, []string{"help", "send"}},
		{0, []string{"send", "--help"}},
		{0, []string{"version"}},
		{0, []string{"--version"}},
		{0, []string{"completion", "bash"}},
		{0, []string{"validate", "--team", "team.yaml"}},
		{0, []string{"logs", "manager"}},
	} {
		_, errOut, code := runBattyIn(t, dir, nil, "", tc.args...)
		if code != tc.code {
			t.Errorf("batty %s: exit %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), code, tc.code, errOut)
			continue
		}
		if code == 2 && !strings.Contains(errOut, "Usage: batty") {
			t.Errorf("batty %s: exit 2 without a usage line; stderr:\n%s", strings.Join(tc.args, " "), errOut)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	v, _, code := runBatty(t, nil, "", "version")
	flag, _, code2 := runBatty(t, nil, "", "--version")
	want := fmt.Sprintf("batty %s (protocol %d)\n", versionString(), protocol.Version)
	if code != 0 || code2 != 0 || v != want || flag != want {
		t.Fatalf("version %q (exit %d), --version %q (exit %d); want %q", v, code, flag, code2, want)
	}
}

// Every visible command is in a help group and shows examples.
func TestEveryCommandHasAGroupAndExamples(t *testing.T) {
	root := testRoot()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() {
				continue
			}
			if c == root && sub.GroupID == "" {
				t.Errorf("%s is in no help group: add it to commandGroups", sub.Name())
			}
			if sub.Example == "" {
				t.Errorf("%s has no examples", sub.Name())
			}
			walk(sub)
		}
	}
	walk(root)
	var help bytes.Buffer
	root.SetOut(&help)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"Team:", "Messages:", "Inspect:", "Without the daemon:", "Setup:"} {
		if !strings.Contains(help.String(), "\n"+g+"\n") {
			t.Errorf("help has no group %q:\n%s", g, help.String())
		}
	}
	if strings.Contains(help.String(), "Additional Commands") {
		t.Errorf("help lists ungrouped commands:\n%s", help.String())
	}
}

// completions runs cobra's completion request for args and returns the
// names offered.
func completions(t *testing.T, dir string, env []string, args ...string) []string {
	t.Helper()
	out, errOut, code := runBattyIn(t, dir, env, "", append([]string{cobra.ShellCompRequestCmd}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d; stderr %s", args, code, errOut)
	}
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, ":") {
			continue
		}
		names = append(names, strings.SplitN(l, "\t", 2)[0])
	}
	return names
}

func TestCompletionOfAgentAndRoleNames(t *testing.T) {
	dir, _ := writeTeam(t)
	for _, tc := range []struct {
		env  []string
		args []string
		want []string
	}{
		{nil, []string{"send", ""}, []string{"architect", "manager", "engineer-1", "engineer-2", "engineer"}},
		{nil, []string{"send", "eng"}, []string{"engineer-1", "engineer-2", "engineer"}},
		{nil, []string{"send", "manager", ""}, nil},
		// An agent is offered whom it may message.
		{[]string{agentenv.Agent + "=architect"}, []string{"send", ""}, []string{"human", "manager"}},
		{[]string{agentenv.Agent + "=manager"}, []string{"send", ""}, []string{"human", "architect", "engineer-1", "engineer-2", "engineer"}},
		{nil, []string{"send", "--from", ""}, []string{"human", "architect", "manager", "engineer-1", "engineer-2"}},
		{nil, []string{"logs", ""}, []string{"architect", "manager", "engineer-1", "engineer-2"}},
		{nil, []string{"logs", "-f", "m"}, []string{"manager"}},
		{nil, []string{"logs", "--color", ""}, []string{"auto", "always", "never"}},
		{nil, []string{"inbox", ""}, []string{"human", "architect", "manager", "engineer-1", "engineer-2", "engineer"}},
		{nil, []string{"reset", ""}, []string{"architect", "manager", "engineer-1", "engineer-2"}},
		{nil, []string{"help", "se"}, []string{"search", "send"}},
	} {
		if got := completions(t, dir, tc.env, tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("complete %q (env %q) = %q, want %q", tc.args, tc.env, got, tc.want)
		}
	}
	// --team names the team from anywhere.
	got := completions(t, t.TempDir(), nil, "logs", "--team", filepath.Join(dir, "team.yaml"), "arch")
	if !slices.Equal(got, []string{"architect"}) {
		t.Errorf("complete with --team = %q", got)
	}
	// Without a team file, nothing (and no error).
	if got := completions(t, t.TempDir(), nil, "logs", ""); len(got) != 0 {
		t.Errorf("complete without a team = %q", got)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, _, code := runBatty(t, nil, "", "completion", shell)
		if code != 0 || !strings.Contains(out, "batty") || !strings.Contains(out, cobra.ShellCompRequestCmd) {
			t.Errorf("completion %s: exit %d, script %.200q", shell, code, out)
		}
	}
}

// writeColoured writes a coloured transcript for engineer-1.
func writeColoured(t *testing.T, l project.Layout) {
	t.Helper()
	appendToDir(t, l.Transcript("engineer-1"), "12:00:00 \x1b[36m[batty] \x1b[0mhello\n12:00:01 \x1b[1;36m» done\x1b[0m\n")
}

func appendToDir(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, s)
}

func TestLogsStripsColourWhenPiped(t *testing.T) {
	dir, l := writeTeam(t)
	writeColoured(t, l)
	plain := "12:00:00 [batty] hello\n12:00:01 » done\n"
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"logs", "engineer-1"}, nil, plain},
		{[]string{"logs", "--color=never", "engineer-1"}, nil, plain},
		{[]string{"logs", "--color=always", "engineer-1"}, []string{"NO_COLOR=1"}, "12:00:00 \x1b[36m[batty] \x1b[0mhello\n12:00:01 \x1b[1;36m» done\x1b[0m\n"},
	} {
		out, errOut, code := runBattyIn(t, dir, tc.env, "", tc.args...)
		if code != 0 || out != tc.want {
			t.Errorf("%q: exit %d, output %q, want %q; stderr %s", tc.args, code, out, tc.want, errOut)
		}
	}
}

// openPTY returns a new pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open pty: %v", err)
	}
	return m, s
}

// On a terminal the colours stay, unless NO_COLOR is set to anything.
func TestLogsColourOnATerminalAndNoColor(t *testing.T) {
	dir, l := writeTeam(t)
	writeColoured(t, l)
	for _, tc := range []struct {
		env    []string
		colour bool
	}{
		{nil, true},
		{[]string{"NO_COLOR=1"}, false},
		{[]string{"NO_COLOR="}, true}, // empty means unset
	} {
		out := outputOnTerminal(t, battyCommand(t, dir, append([]string{"NO_COLOR="}, tc.env...), "logs", "engineer-1"))
		if got := bytes.Contains(out, []byte("\x1b[")); got != tc.colour || !bytes.Contains(out, []byte("hello")) {
			t.Errorf("env %q: output %q; want colour %v", tc.env, out, tc.colour)
		}
	}
}

func TestStripColorDecision(t *testing.T) {
	for _, tc := range []struct {
		mode     colorMode
		terminal bool
		noColor  bool
		strip    bool
	}{
		{colorAuto, true, false, false},
		{colorAuto, true, true, true},
		{colorAuto, false, false, true},
		{colorAlways, false, true, false},
		{colorNever, true, false, true},
	} {
		if got := stripColor(tc.mode, tc.terminal, tc.noColor); got != tc.strip {
			t.Errorf("stripColor(%s, terminal %v, NO_COLOR set %v) = %v", tc.mode, tc.terminal, tc.noColor, got)
		}
	}
}

// `batty logs -f team.yaml agent` (the team file where kubectl users put
// the follow flag) says to use --team.
func TestLogsTeamFileArgumentHint(t *testing.T) {
	dir, _ := writeTeam(t)
	if err := os.WriteFile(filepath.Join(dir, "other"), []byte("name: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"logs", "-f", "team.yaml", "manager"},
		{"logs", "team.yaml"},
		{"logs", "other"}, // an existing file, not an agent
		{"logs", "my-team.YML", "manager"},
	} {
		_, errOut, code := runBattyIn(t, dir, nil, "", args...)
		if code != 2 || !strings.Contains(errOut, "looks like a team file") || !strings.Contains(errOut, "--team") || !strings.Contains(errOut, "-f means --follow") {
			t.Errorf("%q: exit %d, stderr %s", args, code, errOut)
		}
	}
	_, errOut, code := runBattyIn(t, dir, nil, "", "logs", "-f", "team.yaml", "manager")
	if !strings.Contains(errOut, "batty logs --team team.yaml -f manager") || code != 2 {
		t.Errorf("hint does not show the fixed command: %s", errOut)
	}
}

func TestLooksLikeTeamFile(t *testing.T) {
	isFile := func(p string) bool { return p == "exists" }
	for arg, want := range map[string]bool{
		"team.yaml": true, "x/t.yml": true, "T.YAML": true, "exists": true,
		"manager": false, "engineer-1": false, "yaml": false,
	} {
		if got := looksLikeTeamFile(arg, isFile); got != want {
			t.Errorf("looksLikeTeamFile(%q) = %v", arg, got)
		}
	}
}

// A message that starts with "--" is probably a flag given after the
// recipient: it is sent as text, with a warning.
func TestSendWarnsAboutAFlagAfterTheRecipient(t *testing.T) {
	dir, l := writeTeam(t)
	out, errOut, code := runBattyIn(t, dir, nil, "", "send", "manager", "--from", "architect", "hi")
	m := queuedRE.FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(errOut, `warning: the message starts with "--from"`) || !strings.Contains(errOut, "flags go before the recipient") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if msg := pendingMessage(t, l, "manager", m[1]); msg.Body != "--from architect hi" || msg.From != "human" {
		t.Fatalf("stored from=%q body=%q", msg.From, msg.Body)
	}
	if _, errOut, _ := runBattyIn(t, dir, nil, "", "send", "manager", "-", ""); strings.Contains(errOut, "warning") {
		t.Fatalf("warning for stdin: %s", errOut)
	}
}

// With the team stopped, send queues the message and says it waits for
// batty start; status says the daemon is not running; pause and resume say
// what they changed.
func TestStoppedTeamWording(t *testing.T) {
	dir, l := writeTeam(t)
	out, errOut, code := runBattyIn(t, dir, nil, "", "send", "manager", "hello")
	m := queuedRE.FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(errOut, "the team is not running; the message waits until `batty start`") {
		t.Fatalf("send: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	pendingMessage(t, l, "manager", m[1])

	out, _, code = runBattyIn(t, dir, nil, "", "status")
	first, _, _ := strings.Cut(out, "\n")
	if code != 0 || first != "team demo · daemon not running (`batty start` starts it)" {
		t.Fatalf("status: exit %d, first line %q", code, first)
	}
	for _, step := range []struct{ cmd, want string }{
		{"resume", "batty: nothing is paused (the daemon is not running: `batty start` starts it)\n"},
		{"pause", "batty: dispatch paused; it stays paused across `batty start` until `batty resume`\n"},
		{"pause", "batty: dispatch was already paused (the daemon is not running)\n"},
		{"resume", "batty: pause lifted; the team dispatches once `batty start` starts it\n"},
		{"resume", "batty: nothing is paused (the daemon is not running: `batty start` starts it)\n"},
	} {
		out, errOut, code := runBattyIn(t, dir, nil, "", step.cmd)
		if code != 0 || out != step.want {
			t.Fatalf("%s: exit %d, output %q, want %q; stderr %s", step.cmd, code, out, step.want, errOut)
		}
	}
	out, errOut, code = runBattyIn(t, dir, nil, "", "resume", "manager")
	if code != 0 || out != "batty: the daemon is not running; `batty start` starts manager afresh\n" {
		t.Fatalf("resume manager: exit %d, output %q; stderr %s", code, out, errOut)
	}
	if _, errOut, code = runBattyIn(t, dir, nil, "", "resume", "nobody"); code != 1 || !strings.Contains(errOut, `no agent "nobody" in team "demo"`) {
		t.Fatalf("resume nobody: exit %d, stderr %s", code, errOut)
	}
	runBattyIn(t, dir, nil, "", "pause", "review")
	out, _, _ = runBattyIn(t, dir, nil, "", "status")
	if first, _, _ := strings.Cut(out, "\n"); !strings.Contains(first, "daemon not running") || !strings.Contains(first, "PAUSED: review, kept at the next start") {
		t.Fatalf("paused stopped status: %q", first)
	}
}

func TestStatusHeadline(t *testing.T) {
	for _, tc := range []struct {
		st   control.Status
		want string
	}{
		{control.Status{Team: "t"}, "team t · daemon not running (`batty start` starts it)"},
		{control.Status{Team: "t", Daemon: control.DaemonStatus{PID: 7, UptimeS: 3}}, "team t · daemon pid 7, up 3s · dispatch running"},
		{control.Status{Team: "t", Daemon: control.DaemonStatus{PID: 7}, Dispatch: control.DispatchStatus{Paused: true, Reason: "lunch"}},
			"team t · daemon pid 7, up 0s · dispatch PAUSED: lunch"},
	} {
		if got := statusHeadline(tc.st); got != tc.want {
			t.Errorf("statusHeadline = %q, want %q", got, tc.want)
		}
	}
}

func TestPauseOutcome(t *testing.T) {
	for _, tc := range []struct {
		pause, changed, running bool
		want                    string
	}{
		{true, true, true, "batty: dispatch paused; messages keep queueing until `batty resume`"},
		{true, false, true, "batty: dispatch was already paused"},
		{false, true, true, "batty: dispatch resumed"},
		{false, false, true, "batty: nothing is paused; dispatch is already running"},
	} {
		if got := pauseOutcome(tc.pause, tc.changed, tc.running); got != tc.want {
			t.Errorf("pauseOutcome(%v, %v, %v) = %q, want %q", tc.pause, tc.changed, tc.running, got, tc.want)
		}
	}
}

// outputOnTerminal runs cmd with its stdout on a terminal (a pty) and
// returns what it wrote there; the test fails if it fails.
func outputOnTerminal(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	m, s := openPTY(t)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = s, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	out, err := io.ReadAll(m)
	if err != nil && !errors.Is(err, syscall.EIO) { // EIO: the terminal's other side is closed
		t.Fatal(err)
	}
	m.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v; stderr %s", cmd.Args, err, errb.String())
	}
	return out
}

// testRoot is the command tree on a test's streams (buffers, no terminal).
func testRoot() *cobra.Command {
	ios, _, _, _ := iostreams.Test()
	return newRoot(ios)
}
