package orchestrator

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/team"
)

// TestRequestBox: a request from an agent's outbox goes where `batty send`
// or `batty merge` would send it, always as from that agent, and only
// where talks_to lets it.
func TestRequestBox(t *testing.T) {
	p := newProject(t, "  - name: eng\n    talks_to: [rev]\n  - name: rev\n    instances: 2\n  - name: ops\n")
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name, from string
		r          outbox.Request
		box, to    string
		err        string
	}{
		{"to the human", "eng", outbox.Request{To: "human", Body: "b"}, "human", "human", ""},
		{"to a role", "eng", outbox.Request{To: "rev", Body: "b"}, "@rev", "rev", ""},
		{"to an instance", "eng", outbox.Request{To: "rev-2", Body: "b"}, "rev-2", "rev-2", ""},
		{"talks_to", "eng", outbox.Request{To: "ops", Body: "b"}, "", "", "may not message ops"},
		{"the landing box is no recipient", "eng", outbox.Request{To: "landing", Body: "ops"}, "", "", "landing"},
		{"unknown", "eng", outbox.Request{To: "zed", Body: "b"}, "", "", "zed"},
		{"land its own", "rev-1", outbox.Request{Land: "rev-1"}, team.LandingBox, team.LandingBox, ""},
		{"land one it talks to", "eng", outbox.Request{Land: "rev-2"}, team.LandingBox, team.LandingBox, ""},
		{"land another's", "ops", outbox.Request{Land: "eng"}, "", "", "may land only"},
	}
	for _, tt := range tests {
		box, m, err := requestBox(p.cfg, tt.from, "id1", at, tt.r)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: requestBox = %q, %+v, %v; want an error with %q", tt.name, box, m, err, tt.err)
			}
			continue
		}
		want := inbox.Message{ID: "id1", From: tt.from, To: tt.to, Body: tt.r.Body, CreatedAt: at}
		if tt.r.Land != "" {
			want.Body = tt.r.Land
		}
		if err != nil || box != tt.box || m != want {
			t.Errorf("%s: requestBox = %q, %+v, %v; want %q, %+v", tt.name, box, m, err, tt.box, want)
		}
	}
}
