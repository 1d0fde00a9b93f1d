package orchestrator

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/battyhq/batty/control"
)

func TestStatusSaysWhenTheTeamFilesChangedSinceTheStart(t *testing.T) {
	dir := t.TempDir()
	prompt := filepath.Join(dir, "manager.md")
	if err := os.WriteFile(prompt, []byte("You manage.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newProject(t, "  - name: manager\n    prompt: "+prompt+"\n")
	p.start(inProcess)
	changed := func() bool {
		t.Helper()
		return call(t, p, control.Request{Op: control.OpStatus}).Status.TeamFileChanged
	}
	if changed() {
		t.Fatal("changed right after the start")
	}
	teamFile := filepath.Join(p.dir, "team.yaml")
	orig, err := os.ReadFile(teamFile)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(teamFile, append(append([]byte{}, orig...), "# edited\n"...), 0o600)
	if !changed() {
		t.Fatal("an edited team file is not reported")
	}
	os.WriteFile(teamFile, orig, 0o600)
	if changed() {
		t.Fatal("the team file restored is still reported")
	}
	os.WriteFile(prompt, []byte("You manage well.\n"), 0o600)
	if !changed() {
		t.Fatal("an edited prompt file is not reported")
	}
}

func TestFingerprintTellsContentsAndMissingFiles(t *testing.T) {
	files := map[string]string{"a": "x", "b": "yz"}
	read := func(f string) ([]byte, error) {
		s, ok := files[f]
		if !ok {
			return nil, errors.New("missing")
		}
		return []byte(s), nil
	}
	base := fingerprint([]string{"a", "b"}, read)
	if fingerprint([]string{"a", "b"}, read) != base {
		t.Fatal("not stable")
	}
	files["a"], files["b"] = "xy", "z" // same bytes in all, moved across the boundary
	if fingerprint([]string{"a", "b"}, read) == base {
		t.Fatal("a byte moved between files is not a change")
	}
	delete(files, "b")
	if fingerprint([]string{"a", "b"}, read) == base {
		t.Fatal("a missing file is not a change")
	}
}
