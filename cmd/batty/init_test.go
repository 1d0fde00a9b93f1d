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

// init in a subdirectory of a project refuses, naming the project, unless
// --force.
func TestInitRefusesInsideAProject(t *testing.T) {
	dir, _ := writeTeam(t)
	sub := filepath.Join(dir, "src")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBattyIn(t, sub, nil, "", "init")
	if code != 1 || out != "" || !strings.Contains(errOut, "already in the project of "+filepath.Join(dir, "team.yaml")) || !strings.Contains(errOut, "--force") {
		t.Fatalf("init in a subdirectory: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if des, err := os.ReadDir(sub); err != nil || len(des) != 0 {
		t.Fatalf("a refused init wrote %v (%v)", des, err)
	}
	// Into a new directory below the project: refused as well.
	if _, errOut, code := runBattyIn(t, dir, nil, "", "init", filepath.Join("a", "b")); code != 1 || !strings.Contains(errOut, "already in the project of") {
		t.Fatalf("init a/b: exit %d, stderr %s", code, errOut)
	}
	out, errOut, code = runBattyIn(t, sub, nil, "", "init", "--force")
	if code != 0 || !strings.Contains(out, "wrote team.yaml") {
		t.Fatalf("init --force: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// init adds .batty/ to the project's .gitignore, creating it if needed and
// never twice.
func TestInitIgnoresTheStateDir(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := runBattyIn(t, dir, nil, "", "init")
	if code != 0 || !strings.Contains(out, "wrote .gitignore\n") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".gitignore")); err != nil || string(b) != ".batty/\n" {
		t.Fatalf(".gitignore: %q, %v", b, err)
	}
	if _, _, code := runBattyIn(t, dir, nil, "", "init", "--force"); code != 0 {
		t.Fatalf("init --force: exit %d", code)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(b) != ".batty/\n" {
		t.Fatalf(".gitignore after a second init: %q", b)
	}

	// An existing .gitignore gets the line appended, on a line of its own.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, ".gitignore"), []byte("*.o\nbin"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = runBattyIn(t, other, nil, "", "init")
	if code != 0 || !strings.Contains(out, "added .batty/ to .gitignore\n") {
		t.Fatalf("exit %d, stdout %s", code, out)
	}
	st, err := os.Stat(filepath.Join(other, ".gitignore"))
	if b, _ := os.ReadFile(filepath.Join(other, ".gitignore")); err != nil || string(b) != "*.o\nbin\n.batty/\n" || st.Mode().Perm() != 0o600 {
		t.Fatalf(".gitignore: %q, %v", b, err)
	}
}

func TestWithGitignoreEntry(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ".batty/\n"},
		{"bin\n", "bin\n.batty/\n"},
		{"bin", "bin\n.batty/\n"},
		{".battyx\n", ".battyx\n.batty/\n"},
		{"# .batty/\n", "# .batty/\n.batty/\n"},
		{".batty\n", ".batty\n"},
		{"a\n/.batty/\r\nb\n", "a\n/.batty/\r\nb\n"},
		{"  .batty/  \n", "  .batty/  \n"},
	} {
		got, changed := withGitignoreEntry([]byte(tt.in))
		if string(got) != tt.want || changed != (tt.in != tt.want) {
			t.Errorf("withGitignoreEntry(%q) = %q, %v; want %q", tt.in, got, changed, tt.want)
		}
	}
}

// status on a project never started shows the team and creates no .batty/.
func TestStatusOfANeverStartedProjectCreatesNothing(t *testing.T) {
	dir, l := writeTeam(t)
	out, errOut, code := runBattyIn(t, dir, nil, "", "status")
	if code != 0 || !strings.Contains(out, "engineer-2") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if _, err := os.Lstat(l.Dir); !os.IsNotExist(err) {
		t.Fatalf("status created %s: %v", l.Dir, err)
	}
	if _, _, code := runBattyIn(t, dir, nil, "", "status", "--json"); code != 0 {
		t.Fatalf("status --json: exit %d", code)
	}
	if _, err := os.Lstat(l.Dir); !os.IsNotExist(err) {
		t.Fatalf("status --json created %s: %v", l.Dir, err)
	}
}

// In a git repository whose branch has a commit, init gives the engineers
// worktrees of their own, and the team is valid there; in one without a
// commit yet (no branch for a worktree to start from) they stay in the
// checkout.
func TestInitInAGitRepositoryGivesEngineersWorktrees(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	out, errOut, code := runBattyIn(t, dir, nil, "", "init")
	if code != 0 || strings.Contains(out, "worktree") {
		t.Fatalf("init in a repository without a commit: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "team.yaml")); !strings.Contains(string(b), "    # workspace: worktree ") {
		t.Fatalf("without a commit the engineers got worktrees:\n%s", b)
	}

	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "initial")
	out, errOut, code = runBattyIn(t, dir, nil, "", "init", "--force")
	if code != 0 || !strings.Contains(out, "the engineers work in git worktrees of their own (workspace: worktree)") {
		t.Fatalf("init: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "team.yaml"))
	if !strings.Contains(string(b), "\n    workspace: worktree ") {
		t.Fatalf("team.yaml gives the engineers no worktrees:\n%s", b)
	}
	out, errOut, code = runBattyIn(t, dir, nil, "", "validate")
	if code != 0 || !strings.HasPrefix(out, "team.yaml: valid") {
		t.Fatalf("validate: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
