package shim

import (
	"errors"
	"os"
	"testing"

	"github.com/battyhq/batty/codex/appserver"
)

// TestMayHaveLeft: only a turn that completed having only talked is
// spared the leftover scans.
func TestMayHaveLeft(t *testing.T) {
	for _, c := range []struct {
		spawned bool
		err     error
		status  string
		want    bool
	}{
		{false, nil, appserver.StatusCompleted, false},
		{true, nil, appserver.StatusCompleted, true},
		{false, errors.New("connection ended"), "", true},
		{false, nil, appserver.StatusInterrupted, true},
		{false, nil, appserver.StatusFailed, true},
	} {
		if got := mayHaveLeft(c.spawned, c.err, c.status); got != c.want {
			t.Errorf("mayHaveLeft(%v, %v, %q) = %v, want %v", c.spawned, c.err, c.status, got, c.want)
		}
	}
}

// TestAppNotesSpawned: an item that may start a process marks the turn;
// the turn's words do not.
func TestAppNotesSpawned(t *testing.T) {
	for typ, want := range map[string]bool{"agentMessage": false, "reasoning": false, "userMessage": false, "plan": false,
		"commandExecution": true, "fileChange": true, "mcpToolCall": true, "somethingNew": true} {
		if got := !talkItems[typ]; got != want {
			t.Errorf("item %q may start a process: %v, want %v", typ, got, want)
		}
	}
}

// TestAppOutputSchema reads the schema file for turn/start.
func TestAppOutputSchema(t *testing.T) {
	if s, err := appOutputSchema(""); s != nil || err != nil {
		t.Errorf("no file: %s, %v", s, err)
	}
	dir := t.TempDir()
	good, bad := dir+"/good.json", dir+"/bad.json"
	for path, text := range map[string]string{good: `{"type":"object"}`, bad: `{"type":`} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := appOutputSchema(good); err != nil || string(s) != `{"type":"object"}` {
		t.Errorf("good: %s, %v", s, err)
	}
	if _, err := appOutputSchema(bad); err == nil {
		t.Error("a file that is not JSON was taken")
	}
	if _, err := appOutputSchema(dir + "/none.json"); err == nil {
		t.Error("a missing file was taken")
	}
}
