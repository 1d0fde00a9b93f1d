package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestValidateListsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	bad := `name: Demo Team
roles:
  - name: engineer
    instances: 0
    talks_to: [mangaer]
    sandbox: none
  - name: engineer
`
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBattyIn(t, dir, nil, "", "validate")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	lineRE := regexp.MustCompile(`^team\.yaml:(\d+):\d+: `)
	var got []string
	for _, l := range lines {
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not file:line:col: message: %q\nstderr:\n%s", l, errOut)
		}
		got = append(got, m[1])
	}
	// Team name, instances, talks_to, the unknown key and the duplicate role.
	if want := []string{"1", "4", "5", "6", "7"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("problems on lines %v, want %v:\n%s", got, want, errOut)
	}
	for _, want := range []string{`invalid team name "Demo Team" (`, `try "demo-team"`, `unknown key "sandbox" in role`, `duplicate role name "engineer" (first defined at line 3)`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestValidatePassesAndFindsFiles(t *testing.T) {
	dir, _ := writeTeam(t)
	out, errOut, code := runBattyIn(t, dir, nil, "", "validate")
	if code != 0 || errOut != "" || out != "team.yaml: valid — team \"demo\", 4 agents: architect, manager, engineer-1, engineer-2\n" {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	file := filepath.Join(dir, "team.yaml")
	out, _, code = runBattyIn(t, t.TempDir(), nil, "", "validate", "-f", file)
	if code != 0 || !strings.HasPrefix(out, file+": valid — team \"demo\"") {
		t.Fatalf("-f: exit %d, output %q", code, out)
	}
	// ./.batty/team.yaml is found too.
	other := t.TempDir()
	if err := os.Mkdir(filepath.Join(other, ".batty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, ".batty", "team.yaml"), []byte("name: solo\nroles:\n  - name: solo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = runBattyIn(t, other, nil, "", "validate")
	if want := filepath.Join(".batty", "team.yaml") + ": valid — team \"solo\", 1 agent: solo\n"; code != 0 || out != want {
		t.Fatalf("exit %d, output %q, want %q", code, out, want)
	}
	_, errOut, code = runBattyIn(t, t.TempDir(), nil, "", "validate")
	if code != 1 || !strings.Contains(errOut, "no team file found") || !strings.Contains(errOut, "batty init") {
		t.Fatalf("no team file: exit %d, stderr %s", code, errOut)
	}
	if _, errOut, code := runBattyIn(t, dir, nil, "", "validate", "extra"); code != 2 || !strings.Contains(errOut, "Usage: batty validate") {
		t.Fatalf("extra argument: exit %d, stderr %s", code, errOut)
	}
}
