package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// stableStatusShape reads the keys of `batty status --json` that docs/guide/watch.md
// lists after "The JSON shape is stable:" — top-level keys, and for an
// object or a list of objects the keys of its members — leaving out the
// text in parentheses (remarks) and maps with keys of their own
// ("queues {role: waiting}").
func stableStatusShape(t *testing.T) map[string][]string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "guide", "watch.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	start := strings.Index(s, "The JSON shape is stable:")
	end := strings.Index(s[max(start, 0):], "An agent's `state`")
	if start < 0 || end < 0 {
		t.Fatal("docs/guide/watch.md no longer says \"The JSON shape is stable:\" ... \"An agent's `state`\"")
	}
	s = s[start+len("The JSON shape is stable:") : start+end]
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	shape := map[string][]string{}
	for _, m := range regexp.MustCompile("`([a-z_]+)\\s*(\\[?\\{([^}]*)\\}\\]?)?`").FindAllStringSubmatch(b.String(), -1) {
		name, members := m[1], m[3]
		shape[name] = nil
		if members == "" || strings.Contains(members, ":") {
			continue
		}
		for _, k := range strings.Split(members, ",") {
			shape[name] = append(shape[name], strings.TrimSpace(k))
		}
	}
	return shape
}

// TestStatusJSONHasTheStableShape: every key docs/guide/watch.md lists for `batty
// status --json` is there, for an agent that is not parked and does not
// wait for the network too (parked and network are null then), for an
// account that is not paused and a schedule that is not running. Only the
// schedules' unknown times are left out, as the guide says.
func TestStatusJSONHasTheStableShape(t *testing.T) {
	shape := stableStatusShape(t)
	for _, k := range []string{"team", "daemon", "dispatch", "agents", "queues", "accounts", "schedules"} {
		if _, ok := shape[k]; !ok {
			t.Fatalf("the guide's stable shape, as read: %v; it lacks %q", shape, k)
		}
	}
	dir := t.TempDir()
	team := testTeam + `schedules:
  - name: nightly
    to: manager
    prompt: "report"
    every: 24h
`
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(team), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBattyIn(t, dir, nil, "", "status", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	unknownTimes := map[string]bool{"next_due": true, "last_started": true, "last_finished": true}
	for key, members := range shape {
		v, ok := st[key]
		if !ok {
			t.Errorf("no %q in\n%s", key, out)
			continue
		}
		var objects []any
		switch v := v.(type) {
		case []any:
			objects = v
		case map[string]any:
			objects = []any{v}
		}
		if len(members) > 0 && len(objects) == 0 {
			t.Errorf("%q has no member to check: %v", key, v)
		}
		for _, o := range objects {
			obj, _ := o.(map[string]any)
			for _, m := range members {
				if _, ok := obj[m]; !ok && !(key == "schedules" && unknownTimes[m]) {
					t.Errorf("%s: no %q in %v", key, m, obj)
				}
			}
		}
	}
	agent := st["agents"].([]any)[0].(map[string]any)
	if agent["parked"] != nil || agent["network"] != nil {
		t.Errorf("parked and network of an agent that is neither: %v, %v; want null", agent["parked"], agent["network"])
	}
}
