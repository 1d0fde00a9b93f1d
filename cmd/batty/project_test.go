package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every command that loads the team file reports an invalid one alike: a
// line that names the file and says it is invalid, then every problem on a
// line of its own as file:line:col: message, and exit status 1.
func TestInvalidTeamFileIsReportedAlike(t *testing.T) {
	dir := t.TempDir()
	bad := "name: demo\nroles:\n  - name: architect\n    instances: 0\n    sandbox: none\n"
	file := filepath.Join(dir, "team.yaml")
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := filepath.EvalSymlinks(file)
	if err != nil {
		t.Fatal(err)
	}
	problem := regexp.MustCompile(`^` + regexp.QuoteMeta(file) + `:\d+:\d+: `)
	for _, args := range [][]string{
		{"start", "--no-tmux"},
		{"status"},
		{"reset", "architect"},
		{"resume"},
		{"resume", "architect"},
		{"send", "architect", "hello"},
		{"inbox"},
		{"logs", "architect"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, code := runBattyIn(t, dir, nil, "", args...)
			lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
			if code != 1 || out != "" || len(lines) != 3 || lines[0] != "batty: team file "+file+" is invalid:" {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			for _, l := range lines[1:] {
				if !problem.MatchString(l) {
					t.Errorf("not %s:line:col: message: %q", file, l)
				}
			}
		})
	}
}
