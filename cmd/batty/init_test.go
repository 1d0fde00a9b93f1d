package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInitWritesTheTemplateOnce(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runBattyIn(t, dir, nil, "", "init")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	files := []string{"team.yaml", "prompts/architect.md", "prompts/manager.md", "prompts/engineer.md"}
	for _, f := range files {
		if !strings.Contains(out, "wrote "+filepath.FromSlash(f)+"\n") {
			t.Errorf("output does not name %s:\n%s", f, out)
		}
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(out, "batty validate") || !strings.Contains(out, "batty start") || strings.Contains(out, "cd ") {
		t.Errorf("next steps missing or wrong:\n%s", out)
	}
	// The template is a valid team.
	out, errOut, code = runBattyIn(t, dir, nil, "", "validate")
	if code != 0 || out != "team.yaml: valid — team \"demo\", 4 agents: architect, manager, engineer-1, engineer-2\n" {
		t.Fatalf("validate the template: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	edited := []byte("name: mine\nroles:\n  - name: solo\n")
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), edited, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runBattyIn(t, dir, nil, "", "init")
	if code != 1 || out != "" || !strings.Contains(errOut, "refusing to overwrite") || !strings.Contains(errOut, "--force") {
		t.Fatalf("second init: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "team.yaml")); string(b) != string(edited) {
		t.Fatal("init without --force changed team.yaml")
	}
	if _, _, code = runBattyIn(t, dir, nil, "", "init", "--force"); code != 0 {
		t.Fatalf("init --force: exit %d", code)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "team.yaml")); string(b) == string(edited) {
		t.Fatal("init --force left team.yaml alone")
	}
}

func TestInitIntoDirectory(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runBattyIn(t, dir, nil, "", "init", filepath.Join("new", "project"))
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	target := filepath.Join(dir, "new", "project")
	if _, err := os.Stat(filepath.Join(target, "prompts", "engineer.md")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "wrote "+filepath.Join("new", "project", "team.yaml")) || !strings.Contains(out, "cd "+filepath.Join("new", "project")) {
		t.Fatalf("output:\n%s", out)
	}
	if _, errOut, code := runBattyIn(t, dir, nil, "", "init", "a", "b"); code != 2 || !strings.Contains(errOut, "Usage: batty init") {
		t.Fatalf("two directories: exit %d, stderr %s", code, errOut)
	}
}
