package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/project"
)

// Every command finds the project from a subdirectory, walking up as git
// does, and works on that project: nothing is created in the subdirectory.
func TestEveryCommandFindsTheProjectFromASubdirectory(t *testing.T) {
	dir, l := writeTeam(t)
	sub := filepath.Join(dir, "src", "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// One message for architect, sent from the subdirectory, lands in the
	// project's store.
	out, errOut, code := runBattyIn(t, sub, nil, "", "send", "architect", "hello from below")
	if code != 0 || !strings.HasPrefix(out, "queued ") {
		t.Fatalf("send: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if n, _, err := openBox(t, l, "architect").Count(); err != nil || n != 1 {
		t.Fatalf("architect's box in %s holds %d messages (%v), want 1", l.Dir, n, err)
	}
	for _, tc := range []struct {
		args []string
		want string // in stdout
	}{
		{[]string{"status"}, "architect"},
		{[]string{"inbox", "architect"}, "hello from below"},
		{[]string{"validate"}, filepath.Join("..", "..", "team.yaml") + `: valid — team "demo"`},
		{[]string{"reset", "architect"}, "architect will start a fresh thread"},
		{[]string{"pause"}, "dispatch paused"},
		{[]string{"resume"}, "pause lifted"},
		{[]string{"resume", "architect"}, "starts architect afresh"},
		{[]string{"stop"}, "not running"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runBattyIn(t, sub, nil, "", tc.args...)
			if code != 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want 0 and %q in stdout\nstdout: %s\nstderr: %s", code, tc.want, out, errOut)
			}
		})
	}
	// logs: the project's transcript is found (none yet is its own
	// message, not "no team file").
	_, errOut, code = runBattyIn(t, sub, nil, "", "logs", "architect")
	if strings.Contains(errOut, "no team file") || strings.Contains(errOut, "unknown agent") {
		t.Fatalf("logs: exit %d, stderr %s", code, errOut)
	}
	if des, err := os.ReadDir(sub); err != nil || len(des) != 0 {
		t.Fatalf("the subdirectory got %v (%v), want nothing", des, err)
	}

	// --team still wins over the walk.
	other, _ := writeTeam(t)
	out, errOut, code = runBattyIn(t, sub, nil, "", "validate", "--team", filepath.Join(other, "team.yaml"))
	if code != 0 || !strings.HasPrefix(out, filepath.Join(other, "team.yaml")+": valid") {
		t.Fatalf("validate --team: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// .batty/team.yaml in a parent directory is found too, and the nearest
// project wins.
func TestTheNearestTeamFileUpwardsWins(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".batty"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".batty", "team.yaml"), []byte("name: outer\nroles:\n  - name: solo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(root, "inner")
	deep := filepath.Join(inner, "a")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBattyIn(t, inner, nil, "", "validate")
	if want := filepath.Join("..", ".batty", "team.yaml") + ": valid — team \"outer\", 1 agent: solo\n"; code != 0 || out != want {
		t.Fatalf("exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
	}
	if err := os.WriteFile(filepath.Join(inner, "team.yaml"), []byte("name: inner\nroles:\n  - name: solo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runBattyIn(t, deep, nil, "", "validate")
	if want := filepath.Join("..", "team.yaml") + ": valid — team \"inner\", 1 agent: solo\n"; code != 0 || out != want {
		t.Fatalf("exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
	}
}

// With no team file here or above, the error says where batty looked, that
// it walked up to /, and offers `batty init` for this directory only.
func TestNoTeamFileSaysWhereItLooked(t *testing.T) {
	dir := t.TempDir()
	wd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"send", "architect", "hi"}, {"inbox"}, {"logs", "architect"}, {"stop"}, {"validate"}, {"reset", "architect"}, {"resume"}, {"pause"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, code := runBattyIn(t, dir, nil, "", args...)
			want := "batty: no team file found in " + wd + " or any parent directory up to / (looked for team.yaml and .batty/team.yaml); to create a new team in " + wd + ", run `batty init`\n"
			if code != 1 || out != "" || errOut != want {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %q\nwant:   %q", code, out, errOut, want)
			}
		})
	}
	if des, err := os.ReadDir(dir); err != nil || len(des) != 0 {
		t.Fatalf("the directory got %v (%v), want nothing", des, err)
	}
}

// A team file found from inside batty's state — an agent's worktree,
// <state>/worktrees/<agent>, whose team.yaml the agent may have written —
// is never adopted, also when reached through a symbolic link, and
// `batty start` run there does not start the agent's team: the error
// names the project's team file (the one the state directory records).
// The same holds for a worktree where an earlier batty kept it, in the
// project's .batty. An agent there, with $BATTY_DIR, still reaches its
// project.
func TestATeamFileInsideTheStateDirectoryIsNotAdopted(t *testing.T) {
	dir, l := writeTeam(t)
	evil := "name: evil\non_alert: [touch, " + filepath.Join(dir, "pwned") + "]\nroles:\n  - name: solo\n"
	plant := func(wt string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(wt, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wt, "team.yaml"), []byte(evil), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	wt := filepath.Join(l.WorktreesDir(), "engineer-1")
	plant(wt)
	legacy := filepath.Join(dir, ".batty", "worktrees", "engineer-1")
	plant(legacy)
	link := filepath.Join(t.TempDir(), "wt")
	if err := os.Symlink(wt, link); err != nil {
		t.Fatal(err)
	}
	// Before the team ever started, the state directory names no team file.
	unnamed := wt + "/team.yaml is inside batty's state directory " + l.Dir + " (an agent's worktree), whose team file batty never takes"
	if _, errOut, code := runBattyIn(t, wt, nil, "", "validate"); code != 1 || !strings.Contains(errOut, unnamed) {
		t.Fatalf("exit %d, want 1 and %q\nstderr: %s", code, unnamed, errOut)
	}
	if err := os.WriteFile(l.TeamFileRef(), []byte(filepath.Join(dir, "team.yaml")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	named := func(found, state string) string {
		return found + " is inside batty's state directory " + state +
			" (an agent's worktree); the project's team file is " + filepath.Join(dir, "team.yaml") +
			": run batty from " + dir + " or pass --team"
	}
	for _, tc := range []struct {
		name, cwd string
		env       []string
		args      []string
		want      string
	}{
		{"worktree", wt, nil, []string{"validate"}, named(wt+"/team.yaml", l.Dir)},
		{"below the worktree", filepath.Join(wt, "sub"), nil, []string{"status"}, named(wt+"/team.yaml", l.Dir)},
		{"through a link", link, []string{"PWD=" + link}, []string{"validate"}, named(wt+"/team.yaml", l.Dir)},
		{"start", wt, nil, []string{"start", "--no-tmux"}, named(wt+"/team.yaml", l.Dir)},
		{"legacy worktree", legacy, nil, []string{"validate"}, named(legacy+"/team.yaml", filepath.Join(dir, ".batty"))},
		{"legacy start", filepath.Join(legacy, "sub"), nil, []string{"start", "--no-tmux"}, named(legacy+"/team.yaml", filepath.Join(dir, ".batty"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runBattyIn(t, tc.cwd, tc.env, "", tc.args...)
			if code != 1 || !strings.Contains(errOut, tc.want) || strings.Contains(out, "evil") {
				t.Fatalf("exit %d, want 1 and %q\nstdout: %s\nstderr: %s", code, tc.want, out, errOut)
			}
		})
	}
	evilState, err := project.LayoutFor(filepath.Join(wt, "team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(evilState.Dir); !os.IsNotExist(err) {
		t.Fatalf("a state directory was made for the worktree's team: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); !os.IsNotExist(err) {
		t.Fatal("the worktree's team file ran its program")
	}
	out, errOut, code := runBattyIn(t, wt, []string{"BATTY_DIR=" + l.Dir}, "", "send", "architect", "from the worktree")
	if code != 0 || !strings.HasPrefix(out, "queued ") {
		t.Fatalf("send with BATTY_DIR: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = runBattyIn(t, wt, nil, "", "validate", "--team", filepath.Join(dir, "team.yaml"))
	if code != 0 || !strings.Contains(out, ": valid") {
		t.Fatalf("validate --team: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
