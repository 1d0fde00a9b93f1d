package orchestrator

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/recall"
	"github.com/battyhq/batty/team"
)

func TestRecallRefusal(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	id := func(at time.Time) string { return at.Format("20060102T150405.000000000Z") + "-0123abcd" }
	tests := []struct {
		name, id, want string
	}{
		{"now", id(now), ""},
		{"a second ago", id(now.Add(-time.Second)), ""},
		{"nobody waits", id(now.Add(-outbox.RecallWait - time.Second)), "nobody waits"},
		{"not an id", "x", "not a request's id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := recallRefusal(tt.id, now)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Fatalf("recallRefusal = %q, want %q", got, tt.want)
			}
		})
	}
}

// An agent's recall, relayed by its shim, is answered into its outbox:
// the turn of the team it names, its secret redacted; the request file is
// acknowledged (removed).
func TestARecallIsAnsweredIntoTheOutbox(t *testing.T) {
	p := newProject(t, "  - name: eng\n  - name: lead\n")
	r := p.start(nil)
	p.sendAndWait(r, "lead", "remember zanzibar password=hunter2hunter2", "completed")
	id, err := outbox.Write(p.layout.Dir, "eng", outbox.Request{Recall: &outbox.Recall{Search: "zanzibar"}})
	if err != nil {
		t.Fatal(err)
	}
	a := waitAnswer(t, p.layout.Dir, "eng", id)
	if a.Error != "" || !strings.Contains(a.Output, "lead") || !strings.Contains(a.Output, "zanzibar") {
		t.Fatalf("answer %+v", a)
	}
	if strings.Contains(a.Output, "hunter2") {
		t.Fatalf("the secret reached the agent:\n%s", a.Output)
	}
}

// waitAnswer waits for the answer to agent's request id and takes it.
func waitAnswer(t *testing.T, stateDir, agent, id string) outbox.Answer {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		a, err := outbox.TakeAnswer(stateDir, agent, id)
		if err == nil {
			return a
		}
		if !errors.Is(err, outbox.ErrNoAnswer) || time.Now().After(deadline) {
			t.Fatalf("answer to %s: %v", id, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An agent that asked too often is answered with when to ask again, and
// nothing is searched.
func TestARecallBeyondTheBucketSaysWhenToAskAgain(t *testing.T) {
	dir := t.TempDir()
	cfg, err := team.Parse(filepath.Join(dir, "team.yaml"), []byte("name: mem\nroles:\n  - name: eng\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := project.Layout{Dir: filepath.Join(dir, "state")}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	a := &agent{agentEnv: agentEnv{cfg: cfg, layout: l}, def: team.Agent{Name: "eng"}, log: hclog.NewNullLogger()}
	now := time.Now()
	for range recall.BucketSize {
		a.recalls.Take(now)
	}
	id, err := outbox.Write(l.Dir, "eng", outbox.Request{Recall: &outbox.Recall{Search: "zanzibar"}})
	if err != nil {
		t.Fatal(err)
	}
	ans, search, err := a.recallDecision(id, now)
	if err != nil || search || ans.Output != "" || !strings.Contains(ans.Error, "try again in 3s") {
		t.Fatalf("answer %+v, %v", ans, err)
	}
}
