package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSendBeyondTheBacklogLimit: with backlog_limit reached, `batty send`
// to an agent or to a role queue is refused with an error naming the
// recipient, its backlog and the limit, and nothing is written.
func TestSendBeyondTheBacklogLimit(t *testing.T) {
	dir, l := writeTeam(t)
	path := filepath.Join(dir, "team.yaml")
	if err := os.WriteFile(path, []byte("backlog_limit: 2\n"+testTeam), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ to, box, want string }{
		{"manager", "manager", "the inbox of manager holds 2 messages"},
		{"engineer", "@engineer", "the queue of role engineer (@engineer) holds 2 messages"},
	} {
		mustSend(t, dir, nil, "", tt.to, "one")
		mustSend(t, dir, nil, "", tt.to, "two")
		out, errOut, code := runBattyIn(t, dir, nil, "", "send", tt.to, "three")
		if code != 1 || out != "" {
			t.Fatalf("send beyond the limit: exit %d, stdout %q", code, out)
		}
		for _, w := range []string{"send to " + tt.to + " refused, nothing queued", tt.want, "backlog_limit: 2 in " + path, "raise backlog_limit"} {
			if !strings.Contains(errOut, w) {
				t.Errorf("stderr %q lacks %q", errOut, w)
			}
		}
		for _, sub := range []string{"new", "tmp"} {
			des, err := os.ReadDir(filepath.Join(l.Inboxes(), tt.box, sub))
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]int{"new": 2, "tmp": 0}[sub]; len(des) != want {
				t.Errorf("%s/%s holds %d files, want %d", tt.box, sub, len(des), want)
			}
		}
	}
	// The human's inbox has no limit: replies are never refused.
	env := []string{"BATTY_AGENT=manager"}
	for range 3 {
		mustSend(t, dir, env, "", "human", "a reply")
	}
}
