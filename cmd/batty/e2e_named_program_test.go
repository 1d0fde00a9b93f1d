package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project/projecttest"
)

// A program the team file names runs as the user, outside any sandbox,
// so an agent must never be able to rewrite it. The form the docs used to
// show, `on_alert: [./alert.sh]` in the project's checkout, is refused by
// `batty validate` and `batty start`, naming the line, the file, why and
// the fix. With the script outside every directory an agent may write,
// the team starts; its agent (real Codex, workspace-write, in the
// project's checkout, /tmp writable) rewrites both scripts through its
// shell: the one in the project is rewritten (which is why it is
// refused), the one outside is not, and the alert that follows runs the
// script as the user wrote it — nothing the agent wrote ever runs.
func TestE2EAgentCannotRewriteANamedProgram(t *testing.T) {
	r, _, codexBin, home := sandboxedRun(t, "named-program")
	pwned := filepath.Join(t.TempDir(), "pwned")
	evil := fmt.Sprintf(`#!/bin/sh\necho PWNED >> %s\n`, pwned)
	inside := filepath.Join(r.dir, "alert.sh")
	if err := os.WriteFile(inside, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	teamWith := func(onAlert string) string {
		return fmt.Sprintf(`name: named
on_alert: [%s]
alert_on_reply: true
codex:
  bin: %s
  codex_home: %s
  sandbox: workspace-write
roles:
  - name: architect
`, onAlert, codexBin, home)
	}
	r.writeTeam(teamWith("./alert.sh"))
	want := []string{
		"team.yaml:2: on_alert runs " + inside + ", which lies in " + r.dir + " (the project checkout): an agent may rewrite it",
		"move it outside the project and every directory an agent may write, e.g. to ~/.config/batty/alert.sh",
	}
	for _, cmd := range [][]string{{"validate"}, {"start", "--no-tmux"}} {
		out, errOut, code := r.batty(cmd...)
		if code == 0 || !strings.Contains(errOut, want[0]) || !strings.Contains(errOut, want[1]) {
			t.Fatalf("batty %s with on_alert in the project: exit %d\n%s%s\nwant %q and the fix", cmd[0], code, out, errOut, want[0])
		}
	}
	if st := r.status(); st.Daemon.PID != 0 {
		t.Fatalf("a daemon runs a refused team: %+v", st.Daemon)
	}

	log := filepath.Join(t.TempDir(), "alerts.log")
	outside := projecttest.Program(t, "alert.sh", "#!/bin/sh\necho \"$BATTY_ALERT_KIND\" >> "+log+"\n")
	orig, err := os.ReadFile(outside)
	if err != nil {
		t.Fatal(err)
	}
	r.writeTeam(teamWith(outside))
	r.must("validate")
	r.must("start", "--no-tmux")
	script := strings.Join([]string{
		`{ printf '` + evil + `' > ` + outside + `; } 2>/dev/null && echo WROTE-OUTSIDE`,
		`printf '` + evil + `' > ./alert.sh && echo WROTE-INSIDE`,
	}, "; ")
	r.must("send", "architect", "[[mock:shell "+script+"]]")
	r.waitStatus("the architect's turn", func(st control.Status) bool {
		return agentStatus(st, "architect").TurnsCompleted == 1
	})
	reply := r.must("inbox", "--json")
	if strings.Contains(reply, "WROTE-OUTSIDE") || !strings.Contains(reply, "WROTE-INSIDE") {
		t.Fatalf("want the script in the project rewritten and the one outside not:\n%s", reply)
	}
	// The reply's alert runs the script outside, as the user wrote it.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, _ := os.ReadFile(log); strings.Contains(string(b), "reply") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the alert command outside the project did not run")
		}
		time.Sleep(50 * time.Millisecond) // the daemon is another process
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != string(orig) {
		t.Fatalf("the alert script outside changed (%v):\n%s", err, b)
	}
	if b, err := os.ReadFile(inside); err != nil || !strings.Contains(string(b), "PWNED") {
		t.Fatalf("the agent did not rewrite the script in the project (%v): %s", err, b)
	}
	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Fatalf("what the agent wrote ran as the user: %v", err)
	}
	// An agent that may edit the team file points on_alert back at its
	// script: `batty restart` refuses before stopping anything.
	pid := r.status().Daemon.PID
	r.writeTeam(teamWith("./alert.sh"))
	if out, errOut, code := r.batty("restart", "--no-tmux", "--yes"); code == 0 || !strings.Contains(errOut, want[0]) {
		t.Fatalf("restart onto on_alert in the project: exit %d\n%s%s", code, out, errOut)
	}
	if st := r.status(); st.Daemon.PID != pid {
		t.Fatalf("the refused restart stopped the team: %+v, was pid %d", st.Daemon, pid)
	}
}
