package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
)

// A usage-limit pause shows where one looks first: the agents its account
// holds are quota_paused (an agent of another account stays idle), the
// message that hit the limit left its error, resume names the pauses it
// ended, and the error is cleared once that message completes.
func TestQuotaPausedStateResumeWordsAndErrorCleared(t *testing.T) {
	homes := t.TempDir()
	for _, h := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(homes, h), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	p := newProject(t, fmt.Sprintf(`  - name: left
    codex: {codex_home: %s}
  - name: right
    codex: {codex_home: %s}
`, filepath.Join(homes, "a"), filepath.Join(homes, "b")))
	r := p.start(noJitter)
	reset := time.Now().Add(2 * time.Hour).Unix()
	q := p.send("left", "human", fmt.Sprintf("scenario:quota:%d", reset))
	r.waitEvent(t, "requeue", func(e eventlog.Event) bool { return e.Type == eventlog.EvRequeued && e.Message == q })

	left := r.waitAgent(t, "left", "quota_paused", func(a control.AgentStatus) bool { return a.State == control.AgentQuotaPaused })
	if !strings.Contains(left.LastError, "usage limit") {
		t.Fatalf("left's last error %q, want the usage limit", left.LastError)
	}
	r.waitAgent(t, "right", "idle", func(a control.AgentStatus) bool { return a.State == "idle" })

	call(t, p, control.Request{Op: control.OpPause, Reason: "lunch"})
	resp := call(t, p, control.Request{Op: control.OpResume})
	want := []string{"dispatch pause (manual: lunch)", "usage-limit pause of account " + filepath.Join(homes, "a")}
	if !slices.Equal(resp.Ended, want) {
		t.Fatalf("resume ended %q, want %q", resp.Ended, want)
	}
	if st := r.finished(t, q); st != "completed" {
		t.Fatalf("%s: %s", q, st)
	}
	r.waitAgent(t, "left", "idle with its error cleared", func(a control.AgentStatus) bool { return a.State == "idle" && a.LastError == "" })
	if resp := call(t, p, control.Request{Op: control.OpResume}); len(resp.Ended) != 0 || resp.Changed {
		t.Fatalf("a second resume ended %q (changed %v)", resp.Ended, resp.Changed)
	}
}

func TestHeldState(t *testing.T) {
	for _, c := range []struct {
		state            string
		inflight, paused bool
		want             string
	}{
		{"idle", false, true, control.AgentQuotaPaused},
		{"idle", false, false, "idle"},
		{"working", true, true, "working"}, // the account's probe turn
		{agentParked, false, true, agentParked},
		{agentFailed, false, true, agentFailed},
	} {
		if got := heldState(c.state, c.inflight, c.paused); got != c.want {
			t.Errorf("heldState(%q, %v, %v) = %q, want %q", c.state, c.inflight, c.paused, got, c.want)
		}
	}
}
