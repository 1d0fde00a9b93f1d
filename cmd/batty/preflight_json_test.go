package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestPreflightJSON: `batty preflight --json` reads the target on stdin
// and answers one JSON line naming the problem with its fix; without
// --json it is a usage error.
func TestPreflightJSON(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "codex")
	out, errOut, code := runBatty(t, nil, `{"bin":"`+missing+`"}`, "preflight", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var ans struct {
		Problem *struct{ Kind, Detail, Fix string } `json:"problem"`
	}
	if err := json.Unmarshal([]byte(out), &ans); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("answer %q: %v", out, err)
	}
	if ans.Problem == nil || ans.Problem.Kind != "codex_missing" || !strings.Contains(ans.Problem.Detail, missing) || !strings.Contains(ans.Problem.Fix, "npm install") {
		t.Fatalf("answer = %+v", ans.Problem)
	}

	if _, errOut, code := runBatty(t, nil, "{", "preflight", "--json"); code != 1 || !strings.Contains(errOut, "preflight request") {
		t.Fatalf("bad request: exit %d\n%s", code, errOut)
	}
	if _, errOut, code := runBatty(t, nil, "", "preflight"); code != 2 || !strings.Contains(errOut, "pass --json") {
		t.Fatalf("without --json: exit %d\n%s", code, errOut)
	}
}
