package orchestrator

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/inbox"
)

func TestRelayBox(t *testing.T) {
	p := newProject(t, "  - name: eng\n    talks_to: [rev]\n  - name: rev\n    instances: 2\n  - name: ops\n")
	tests := []struct {
		name, from, box string
		m               inbox.Message
		want, err       string
	}{
		{"to the human", "eng", "human", inbox.Message{ID: "1", From: "eng", To: "human"}, "human", ""},
		{"to a role", "eng", "@rev", inbox.Message{ID: "1", From: "eng", To: "rev"}, "@rev", ""},
		{"to an instance", "eng", "rev-2", inbox.Message{ID: "1", From: "eng", To: "rev-2"}, "rev-2", ""},
		{"another sender", "eng", "human", inbox.Message{ID: "1", From: "ops", To: "human"}, "", "not from the agent eng"},
		{"talks_to", "eng", "ops", inbox.Message{ID: "1", From: "eng", To: "ops"}, "", "may not message ops"},
		{"other box", "eng", "rev-1", inbox.Message{ID: "1", From: "eng", To: "rev-2"}, "", `in box "rev-1", not "rev-2"`},
		{"unknown", "eng", "zed", inbox.Message{ID: "1", From: "eng", To: "zed"}, "", "zed"},
		{"outcome", "eng", "human", inbox.Message{ID: "1", From: "eng", To: "human", Outcome: &inbox.Outcome{}}, "", "has an outcome"},
	}
	for _, tt := range tests {
		got, err := relayBox(p.cfg, tt.from, tt.box, tt.m)
		if tt.err == "" && (err != nil || got != tt.want) || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: relayBox = %q, %v; want %q, %q", tt.name, got, err, tt.want, tt.err)
		}
	}
}
