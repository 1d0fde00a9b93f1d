package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
)

// TestInboxFullTakesAnAbbreviation: `batty inbox --full` takes the whole
// id, the short form the listings show, or any unique beginning of either;
// an ambiguous one lists the candidates, an unknown one says so.
func TestInboxFullTakesAnAbbreviation(t *testing.T) {
	dir, l := writeTeam(t)
	human := openBox(t, l, "human")
	ids := map[string]string{}
	for _, id := range []string{"20261121T120000.000000000Z-1f2e3d4c", "20261121T120100.000000000Z-1f99aa00", "20261122T080000.000000000Z-77777777"} {
		m := deliver(t, human, inbox.Message{ID: id, From: "manager", To: "human", Body: "body of " + id[len(id)-8:]})
		ids[inbox.ShortID(m.ID)] = m.ID
	}
	for _, tc := range []struct{ abbrev, want string }{
		{"20261121T120000.000000000Z-1f2e3d4c", "body of 1f2e3d4c"},
		{"1f2e3d4c", "body of 1f2e3d4c"},
		{"1f2e", "body of 1f2e3d4c"},
		{"7", "body of 77777777"},
		{"20261122", "body of 77777777"},
	} {
		out, errOut, code := runBattyIn(t, dir, nil, "", "inbox", "--full", tc.abbrev)
		if code != 0 || out != tc.want+"\n" {
			t.Errorf("--full %s: exit %d, stdout %q, want %q; stderr %s", tc.abbrev, code, out, tc.want, errOut)
		}
	}
	_, errOut, code := runBattyIn(t, dir, nil, "", "inbox", "--full", "1f")
	if code != 1 || !strings.Contains(errOut, `"1f": matches 2 messages: 1f2e3d4c, 1f99aa00`) {
		t.Errorf("ambiguous: exit %d, stderr %s", code, errOut)
	}
	_, errOut, code = runBattyIn(t, dir, nil, "", "inbox", "--full", "abc")
	if code != 1 || !strings.Contains(errOut, "no message abc in the inbox of human") {
		t.Errorf("no match: exit %d, stderr %s", code, errOut)
	}
	// An agent's box too, with the short form its listing shows.
	eng := openBox(t, l, "engineer-1")
	m := deliver(t, eng, inbox.Message{From: "human", To: "engineer-1", Body: "do it"})
	out, _, _ := runBattyIn(t, dir, nil, "", "inbox", "engineer-1")
	if !strings.Contains(out, "  "+inbox.ShortID(m.ID)+"\n") || strings.Contains(out, m.ID) {
		t.Fatalf("the listing does not show the short id %s:\n%s", inbox.ShortID(m.ID), out)
	}
	out, errOut, code = runBattyIn(t, dir, nil, "", "inbox", "engineer-1", "--full", inbox.ShortID(m.ID)[:4])
	if code != 0 || out != "do it\n" {
		t.Errorf("agent --full: exit %d, %q; stderr %s", code, out, errOut)
	}
}

// Status shows the message in flight by its short id, as the feed and the
// inbox do.
func TestStatusShowsTheShortID(t *testing.T) {
	id := "20261121T120000.000000000Z-1f2e3d4c"
	var b bytes.Buffer
	printStatus(&b, control.Status{Team: "demo", Agents: []control.AgentStatus{{Name: "a", State: "working", InFlight: &id, InFlightAgeS: 12}}})
	if !strings.Contains(b.String(), "1f2e3d4c (12s)") || strings.Contains(b.String(), "2026") {
		t.Errorf("status:\n%s", b.String())
	}
}
