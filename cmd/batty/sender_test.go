package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/team"
)

func TestSenderOf(t *testing.T) {
	noProc := errors.New("open /proc/self/stat: no such file or directory")
	for _, tc := range []struct {
		name    string
		f       senderFacts
		want    string
		refused string // part of the refusal; "" = accepted
	}{
		{"the human", senderFacts{}, team.Human, ""},
		{"--from outside the team", senderFacts{Flag: "manager"}, "manager", ""},
		{"--from human outside", senderFacts{Flag: team.Human}, team.Human, ""},
		{"an agent's environment", senderFacts{EnvAgent: "engineer-1"}, "engineer-1", ""},
		{"--from repeats the agent", senderFacts{Flag: "engineer-1", EnvAgent: "engineer-1"}, "engineer-1", ""},
		{"--from human in an agent's environment", senderFacts{Flag: team.Human, EnvAgent: "engineer-1"}, "", `--from "human" does not match $BATTY_AGENT="engineer-1"`},
		{"--from another agent", senderFacts{Flag: "manager", EnvAgent: "engineer-1"}, "", `--from "manager" does not match $BATTY_AGENT="engineer-1"`},
		{"names are exact", senderFacts{Flag: "Engineer-1", EnvAgent: "engineer-1"}, "", `--from "Engineer-1" does not match`},
		// Under an agent's shim the environment says nothing.
		{"under a shim", senderFacts{Shim: "engineer-1"}, "engineer-1", ""},
		{"under a shim, BATTY_AGENT=human", senderFacts{Shim: "engineer-1", EnvAgent: team.Human}, "engineer-1", ""},
		{"under a shim, BATTY_AGENT of another", senderFacts{Shim: "engineer-1", EnvAgent: "manager"}, "engineer-1", ""},
		{"under a shim, --from repeats it", senderFacts{Shim: "engineer-1", Flag: "engineer-1", EnvAgent: team.Human}, "engineer-1", ""},
		{"under a shim, --from human", senderFacts{Shim: "engineer-1", Flag: team.Human}, "", `--from "human": this command runs inside agent "engineer-1"`},
		{"under a shim, --from another", senderFacts{Shim: "engineer-1", Flag: "manager", EnvAgent: "manager"}, "", `runs inside agent "engineer-1"`},
		// BATTY_AGENT never names the human.
		{"BATTY_AGENT=human", senderFacts{EnvAgent: team.Human}, "", `$BATTY_AGENT="human"`},
		{"BATTY_AGENT=human with --from", senderFacts{EnvAgent: team.Human, Flag: team.Human}, "", `$BATTY_AGENT="human"`},
		// /proc unreadable: the environment decides, but a marked
		// process without BATTY_AGENT is not taken for the human.
		{"no /proc, agent's environment", senderFacts{EnvAgent: "engineer-1", ShimErr: noProc, Marked: true}, "engineer-1", ""},
		{"no /proc, marked, no BATTY_AGENT", senderFacts{ShimErr: noProc, Marked: true}, "", "cannot tell who sends this message"},
		{"no /proc, marked, --from", senderFacts{Flag: team.Human, ShimErr: noProc, Marked: true}, "", "BATTY_PROJECT_MARK"},
		{"no /proc, unmarked", senderFacts{ShimErr: noProc}, team.Human, ""},
		{"/proc readable, marked, no shim", senderFacts{Marked: true}, team.Human, ""},
	} {
		got, err := senderOf(tc.f)
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%s: senderOf(%+v) = %q, %v; want a refusal with %q", tc.name, tc.f, got, err, tc.refused)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: senderOf(%+v) = %q, %v; want %q", tc.name, tc.f, got, err, tc.want)
		}
	}
}

// An agent's shell has $BATTY_AGENT set: `batty send --from` cannot make
// its message the human's or another agent's. The refusal is a usage error
// and nothing is written.
func TestSendAgentCannotPoseAsAnother(t *testing.T) {
	dir, l := writeTeam(t)
	env := []string{agentenv.Agent + "=engineer-1"}
	for _, from := range []string{team.Human, "manager", "engineer-2"} {
		out, errOut, code := runBattyIn(t, dir, env, "", "send", "--from", from, "architect", "ship it")
		if code != exitUsage || out != "" ||
			!strings.Contains(errOut, `batty send: --from "`+from+`" does not match $BATTY_AGENT="engineer-1"`) ||
			!strings.Contains(errOut, "Usage: batty send") {
			t.Errorf("--from %s: exit %d\nstdout: %s\nstderr: %s", from, code, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(l.Inboxes(), "architect")); !os.IsNotExist(err) {
		t.Fatalf("a refused message created the architect's box: %v", err)
	}
}

// shimLikeMain is a process that looks like an agent's shim (this test
// binary, run as `<self> shim --agent NAME`): it starts the next process
// of BATTY_TEST_CHAIN — another shim-like process for each further
// "shim:NAME" entry, then this binary as batty with the remaining
// arguments — and exits with its status. It is how a test puts a real
// shim-like process among the ancestors of `batty send`.
func shimLikeMain() int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	chain := strings.Split(os.Getenv("BATTY_TEST_CHAIN"), "\x1f")
	var cmd *exec.Cmd
	if agent, ok := strings.CutPrefix(chain[0], "shim:"); ok {
		cmd = exec.Command(self, "shim", "--agent="+agent, "--queue-depth=4")
		cmd.Env = append(os.Environ(), "BATTY_TEST_ROLE=shimlike", "BATTY_TEST_CHAIN="+strings.Join(chain[1:], "\x1f"))
	} else {
		cmd = exec.Command(self, chain...)
		cmd.Env = append(os.Environ(), "BATTY_TEST_ROLE=batty")
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// runUnderShims runs `batty args…` in dir below a chain of real shim-like
// processes, one per agent of shims, the first outermost.
func runUnderShims(t *testing.T, dir string, env []string, shims []string, args ...string) (string, string, int) {
	t.Helper()
	var chain []string
	for _, a := range shims[1:] {
		chain = append(chain, "shim:"+a)
	}
	chain = append(chain, args...)
	cmd := battyCommand(t, dir, append(env, "BATTY_TEST_ROLE=shimlike", "BATTY_TEST_CHAIN="+strings.Join(chain, "\x1f")),
		"shim", "--agent="+shims[0], "--queue-depth=4")
	return runCmd(t, cmd)
}

// Below an agent's shim — a real process whose command line is `batty
// shim --agent NAME` — batty send is from that agent, whatever
// $BATTY_AGENT says: "human" from an agent's environment is the agent.
// With a second shim-like process nested inside (one the agent could
// start itself), the outermost still decides.
func TestSendUnderAShimIsFromItsAgent(t *testing.T) {
	dir, l := writeTeam(t)
	for _, c := range []struct {
		name  string
		shims []string
		env   []string
	}{
		{"BATTY_AGENT=human", []string{"engineer-1"}, []string{agentenv.Agent + "=human"}},
		{"BATTY_AGENT unset", []string{"engineer-1"}, nil},
		{"a forged shim inside", []string{"engineer-1", "architect"}, []string{agentenv.Agent + "=architect"}},
	} {
		out, errOut, code := runUnderShims(t, dir, c.env, c.shims, "send", "manager", "from "+c.name)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", c.name, code, out, errOut)
		}
	}
	// Each is a request in engineer-1's outbox, the one its sandbox may
	// write: the daemon delivers it as from engineer-1.
	msgs := requests(t, l, "engineer-1")
	if len(msgs) != 3 {
		t.Fatalf("engineer-1's outbox: %+v", msgs)
	}
	for _, m := range msgs {
		if m.From != "engineer-1" {
			t.Errorf("message %q is from %q, want engineer-1", m.Body, m.From)
		}
	}
	// --from naming anyone else is refused, the human included.
	out, errOut, code := runUnderShims(t, dir, nil, []string{"engineer-1"}, "send", "--from", "human", "manager", "pose")
	if code != exitUsage || !strings.Contains(errOut, `--from "human": this command runs inside agent "engineer-1"`) {
		t.Fatalf("--from human below a shim: exit %d\n%s%s", code, out, errOut)
	}
	// Outside any shim, BATTY_AGENT=human is refused.
	out, errOut, code = runBattyIn(t, dir, []string{agentenv.Agent + "=human"}, "", "send", "manager", "pose")
	if code != exitUsage || !strings.Contains(errOut, `$BATTY_AGENT="human"`) {
		t.Fatalf("BATTY_AGENT=human: exit %d\n%s%s", code, out, errOut)
	}
}
