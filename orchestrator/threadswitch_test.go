package orchestrator

import (
	"os"
	"path/filepath"
	"testing"
)

func TestForkHome(t *testing.T) {
	const id = "01a23631-b3f6-7de1-867a-fd96f27c180c"
	mine, theirs, empty := t.TempDir(), t.TempDir(), t.TempDir()
	dir := filepath.Join(theirs, "sessions", "2026", "03", "01")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rollout-2026-03-01T12-00-00-"+id+".jsonl"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		sw     threadSwitch
		here   bool
		home   string
		want   string
		errors bool
	}{
		{"its own thread, even on a host", threadSwitch{thread: id, from: "eng"}, false, mine, "", false},
		{"another's in the same home", threadSwitch{thread: id, from: "ops", portable: true}, true, theirs, "", false},
		{"another's carried from its home", threadSwitch{thread: id, from: "ops", fromHome: theirs, portable: true}, true, mine, theirs, false},
		{"another's found nowhere", threadSwitch{thread: id, from: "ops", fromHome: empty, portable: true}, true, mine, "", true},
		{"another's on a host", threadSwitch{thread: id, from: "ops", fromHome: theirs}, true, mine, "", true},
		{"to an agent on a host", threadSwitch{thread: id, from: "ops", fromHome: theirs, portable: true}, false, mine, "", true},
	} {
		got, err := forkHome("eng", tc.sw, tc.here, tc.home)
		if got != tc.want || (err != nil) != tc.errors {
			t.Errorf("%s: forkHome = %q, %v", tc.name, got, err)
		}
	}
}
