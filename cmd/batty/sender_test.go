package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/orchestrator"
	"github.com/battyhq/batty/team"
)

func TestSenderOf(t *testing.T) {
	for _, tc := range []struct {
		flag, env string
		want      string
		refused   bool
	}{
		{"", "", team.Human, false},
		{"manager", "", "manager", false},
		{team.Human, "", team.Human, false},
		{"", "engineer-1", "engineer-1", false},
		{"engineer-1", "engineer-1", "engineer-1", false},
		{team.Human, "engineer-1", "", true},
		{"manager", "engineer-1", "", true},
		{"Engineer-1", "engineer-1", "", true},
	} {
		got, err := senderOf(tc.flag, tc.env)
		if tc.refused {
			if err == nil || !strings.Contains(err.Error(), `$BATTY_AGENT="`+tc.env+`"`) || !strings.Contains(err.Error(), `--from "`+tc.flag+`"`) {
				t.Errorf("senderOf(%q, %q) = %q, %v; want a refusal naming both", tc.flag, tc.env, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("senderOf(%q, %q) = %q, %v; want %q", tc.flag, tc.env, got, err, tc.want)
		}
	}
}

// An agent's shell has $BATTY_AGENT set: `batty send --from` cannot make
// its message the human's or another agent's. The refusal is a usage error
// and nothing is written.
func TestSendAgentCannotPoseAsAnother(t *testing.T) {
	dir, l := writeTeam(t)
	env := []string{orchestrator.EnvAgent + "=engineer-1"}
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
