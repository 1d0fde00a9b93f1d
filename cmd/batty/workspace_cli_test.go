package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/project/projecttest"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// gitTestEnv is the environment added for git, and for batty running git,
// in a project under dir: no user or system git configuration of the
// machine, and no repository found above dir.
func gitTestEnv(dir string) []string {
	return []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir),
		"GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}
}

// gitIn runs git in dir with gitTestEnv and an explicit identity, and
// returns its trimmed output, failing the test on an error.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=tester", "-c", "user.email=tester@example.invalid"}, args...)...)
	cmd.Env = append(os.Environ(), gitTestEnv(dir)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// worktreeTeam is a team whose two engineers work in worktrees of their
// own and whose architect, in the project's checkout, may message them;
// its agents run the fake codex. %s is the workspace block (YAML lines).
const worktreeTeam = `name: wt
codex:
  bin: %s
  env:
    BATTY_TEST_ROLE: fakecodex
    CODEX_API_KEY: fake-key-no-login-needed
    FAKE_CODEX_STATE: %s
timeouts:
  shutdown: 5s
%sroles:
  - name: architect
    talks_to: [engineer]
  - name: engineer
    instances: 2
    workspace: worktree
    talks_to: [architect]
`

// writeWorktreeTeam writes worktreeTeam with the workspace block into dir
// and returns its text.
func writeWorktreeTeam(t *testing.T, dir, workspace string) string {
	t.Helper()
	self := projecttest.Executable(t) // outside /tmp, where the agents may write
	text := fmt.Sprintf(worktreeTeam, self, t.TempDir(), workspace)
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return text
}

// lineOf returns the 1-based line of text that starts with prefix.
func lineOf(t *testing.T, text, prefix string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return i + 1
		}
	}
	t.Fatalf("no line %q in\n%s", prefix, text)
	return 0
}

// newGitProject makes a project in a git repository on branch main with
// one commit holding the worktree team (base main), a .gitignore of
// .batty/ and shared.txt. It returns the directory and the layout.
func newGitProject(t *testing.T) (string, project.Layout) {
	t.Helper()
	dir := t.TempDir()
	writeWorktreeTeam(t, dir, "workspace:\n  base: main\n")
	gitIn(t, dir, "init", "-q", "-b", "main")
	for name, text := range map[string]string{".gitignore": ".batty/\n", "shared.txt": "base\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "initial")
	return dir, layoutOf(t, dir)
}

// A team with worktree agents in a directory that is not a git repository,
// or with a base branch that does not exist, is refused by validate and by
// start — at the line of the team file, with the fix — and start starts
// nothing; the same team in a repository with the branch is valid.
func TestValidateAndStartCheckTheRepository(t *testing.T) {
	dir := t.TempDir()
	env := gitTestEnv(dir)
	text := writeWorktreeTeam(t, dir, "")
	refused := func(what, wantLine string, want ...string) {
		t.Helper()
		out, errOut, code := runBattyIn(t, dir, env, "", "validate")
		if code != 1 || out != "" || !strings.HasPrefix(errOut, wantLine) || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("%s: validate: exit %d, stdout %q, stderr %q; want exit 1 and one line starting %q", what, code, out, errOut, wantLine)
		}
		for _, w := range want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: validate says %q, lacking %q", what, errOut, w)
			}
		}
		out, errOut, code = runBattyIn(t, dir, env, "", "start", "--no-tmux")
		if code != 1 || !strings.Contains(errOut, "team file "+filepath.Join(dir, "team.yaml")+" is invalid:\n"+filepath.Join(dir, wantLine)) {
			t.Fatalf("%s: start: exit %d\nstdout: %s\nstderr: %s", what, code, out, errOut)
		}
		for _, w := range want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: start says %q, lacking %q", what, errOut, w)
			}
		}
		// Refused before anything starts: no daemon, no log of one.
		if running, pid := project.Running(layoutOf(t, dir)); running {
			t.Fatalf("%s: a daemon runs (pid %d)", what, pid)
		}
		if _, err := os.Stat(filepath.Join(layoutOf(t, dir).Dir, "daemon.log")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: start wrote a daemon log (%v)", what, err)
		}
	}

	// Not a git repository: at the first worktree role (no workspace key).
	refused("no repository", fmt.Sprintf("team.yaml:%d: workspace: ", lineOf(t, text, "  - name: engineer")),
		"the project "+dir+" is not in a git repository", "git init", "set workspace: shared on role engineer")
	if _, err := os.Stat(filepath.Join(dir, ".batty")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("validate and start made .batty/ (%v)", err)
	}

	// A repository without the base branch: at the workspace key, naming
	// the branch and those that exist.
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "commit", "-q", "--allow-empty", "-m", "initial")
	gitIn(t, dir, "branch", "feature")
	text = writeWorktreeTeam(t, dir, "workspace:\n  base: develop\n")
	refused("unknown base", fmt.Sprintf("team.yaml:%d: workspace: ", lineOf(t, text, "workspace:")),
		`unknown base branch "develop"`, "existing branches: ", "main", "feature", "create the branch or set workspace.base")

	// The branch exists, or no base is named and main is checked out.
	for _, ws := range []string{"workspace:\n  base: feature\n", ""} {
		writeWorktreeTeam(t, dir, ws)
		out, errOut, code := runBattyIn(t, dir, env, "", "validate")
		if code != 0 || errOut != "" || out != "team.yaml: valid — team \"wt\", 3 agents: architect, engineer-1, engineer-2\n" {
			t.Fatalf("valid repository (%q): exit %d\nstdout: %s\nstderr: %s", ws, code, out, errOut)
		}
	}
}

// classifyRepoError gives the check's errors the kinds
// team.Config.WorkspaceProblems picks its fix by, and keeps the cause.
func TestClassifyRepoError(t *testing.T) {
	other := errors.New("git: exec: not found")
	notRepo := fmt.Errorf("%w: /p (git rev-parse: exit status 128)", workspaces.ErrNotRepository)
	noBase := fmt.Errorf("workspace.base: %w", fmt.Errorf("%w %q in /p: existing branches: main", workspaces.ErrUnknownBase, "dev"))
	for _, tc := range []struct {
		err  error
		kind error
		text string
	}{
		{nil, nil, ""},
		{notRepo, team.ErrNotGitRepository, "the project /p is not in a git repository"},
		{noBase, team.ErrNoBaseBranch, `unknown base branch "dev" in /p: existing branches: main`},
		{other, nil, other.Error()},
	} {
		got := classifyRepoError("/p", tc.err)
		if tc.err == nil {
			if got != nil {
				t.Errorf("nil classified as %v", got)
			}
			continue
		}
		if got.Error() != tc.text || !errors.Is(got, tc.err) || (tc.kind != nil && !errors.Is(got, tc.kind)) {
			t.Errorf("classifyRepoError(%v) = %q; want %q, matching %v and %v", tc.err, got, tc.text, tc.kind, tc.err)
		}
		if tc.kind == nil && (errors.Is(got, team.ErrNotGitRepository) || errors.Is(got, team.ErrNoBaseBranch)) {
			t.Errorf("classifyRepoError(%v) is classified: %v", tc.err, got)
		}
	}
}

// makeWorktree makes agent's worktree in the project dir with package
// workspaces, as the daemon does, and commits a file notes.txt there.
func makeWorktree(t *testing.T, dir string, l project.Layout, agent, content string) *workspaces.Repo {
	t.Helper()
	ctx := context.Background()
	repo, err := workspaces.Open(ctx, workspaces.Options{ProjectDir: dir, WorktreesDir: l.WorktreesDir(), LockFile: l.GitLock(),
		Env: append(os.Environ(), gitTestEnv(dir)...)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Ensure(ctx, agent, "main"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo.Path(agent), "notes.txt"), []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := repo.Commit(ctx, workspaces.CommitInfo{Agent: agent, Subject: "add notes", MessageID: "m1"}); err != nil || !c.Made {
		t.Fatalf("commit: %v (made %v)", err, c.Made)
	}
	return repo
}

// diff shows what the branch adds to base, --stat its summary, and says
// what is not committed; an agent in the project's checkout has no branch
// to diff. prune refuses a worktree with uncommitted or unlanded work, and
// --force keeps that work under an archive ref before removing both.
func TestDiffAndPruneOfAWorktree(t *testing.T) {
	dir, l := newGitProject(t)
	env := gitTestEnv(dir)
	repo := makeWorktree(t, dir, l, "engineer-1", "hello from engineer-1")
	wt := repo.Path("engineer-1")

	out, errOut, code := runBattyIn(t, dir, env, "", "diff", "engineer-1")
	if code != 0 || !strings.Contains(out, "diff --git a/notes.txt b/notes.txt") || !strings.Contains(out, "\n+hello from engineer-1\n") || strings.Contains(out, "note:") {
		t.Fatalf("diff: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = runBattyIn(t, dir, env, "", "diff", "--stat", "engineer-1")
	if code != 0 || !regexp.MustCompile(`notes\.txt \| +1 \+`).MatchString(out) || !strings.Contains(out, "1 file changed, 1 insertion(+)") || strings.Contains(out, "diff --git") {
		t.Fatalf("diff --stat: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(wt, "wip.txt"), []byte("half done\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = runBattyIn(t, dir, env, "", "diff", "--stat", "engineer-1")
	if code != 0 || !strings.Contains(out, "note: 1 path in "+wt+" not committed, not in this diff") {
		t.Fatalf("diff with an uncommitted file: exit %d, %q", code, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"diff", "architect"}, 1, `agent "architect" works in the project's checkout, not a worktree of its own: its role "architect" needs ` + "`workspace: worktree`"},
		{[]string{"diff", "nobody"}, 1, `unknown agent "nobody"`},
		{[]string{"diff", "engineer-2"}, 1, "engineer-2 has no branch batty/engineer-2"},
		{[]string{"workspace", "prune", "architect"}, 1, "`workspace: worktree`"},
	} {
		out, errOut, code := runBattyIn(t, dir, env, "", tc.args...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("batty %s: exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.want)
		}
	}

	// Unlanded work: refused, nothing removed.
	head := gitIn(t, dir, "rev-parse", "batty/engineer-1")
	out, errOut, code = runBattyIn(t, dir, env, "", "workspace", "prune", "engineer-1")
	if code != 1 || out != "" {
		t.Fatalf("prune of unlanded work: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, want := range []string{"unlanded work", "1 uncommitted path", "1 commit on batty/engineer-1 not on main", "`batty merge engineer-1`", "--force", "refs/batty/archive/engineer-1/"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("prune's refusal lacks %q:\n%s", want, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(wt, "wip.txt")); err != nil || gitIn(t, dir, "rev-parse", "batty/engineer-1") != head {
		t.Fatalf("the refused prune touched the worktree (%v) or the branch", err)
	}

	// --force: the uncommitted file is committed, the branch archived,
	// then both go.
	out, errOut, code = runBattyIn(t, dir, env, "", "workspace", "prune", "--force", "engineer-1")
	m := regexp.MustCompile(`^batty: removed the worktree and branch batty/engineer-1; its work is kept under (refs/batty/archive/engineer-1/\d{8}T\d{6}Z)\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("prune --force: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	ref := m[1]
	if got := gitIn(t, dir, "show", ref+":notes.txt"); got != "hello from engineer-1" {
		t.Errorf("the archive's notes.txt: %q", got)
	}
	if got := gitIn(t, dir, "show", ref+":wip.txt"); got != "half done" {
		t.Errorf("the archive's wip.txt: %q", got)
	}
	if parent := gitIn(t, dir, "rev-parse", ref+"^"); parent != head {
		t.Errorf("the archive's WIP commit has parent %s, want the branch's head %s", parent, head)
	}
	if _, err := os.Stat(wt); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the worktree is still there (%v)", err)
	}
	if refs := gitIn(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/batty/"); refs != "" {
		t.Errorf("branches left: %s", refs)
	}
	// Again: nothing left to prune.
	if out, errOut, code := runBattyIn(t, dir, env, "", "workspace", "prune", "engineer-1"); code != 0 || out != "batty: engineer-1 has no worktree or branch: nothing to prune\n" {
		t.Fatalf("prune again: exit %d, %q, %q", code, out, errOut)
	}
}

// merge writes a landing request into .batty/inboxes/landing, from the
// human or, inside an agent, from the agent, which may land only its own
// branch and those of the agents it may message.
func TestMergeQueuesALandingRequest(t *testing.T) {
	dir := t.TempDir()
	writeWorktreeTeam(t, dir, "")
	l := layoutOf(t, dir)
	queuedRE := regexp.MustCompile(`^queued the landing of batty/(\S+) \(request ([0-9a-f]+)\)(; it lands once this turn has ended and batty has committed its work)?; ` + "`batty status` shows the merge queue\n$")
	pending := func() []inbox.Message {
		t.Helper()
		msgs, errs := openBox(t, l, team.LandingBox).Pending()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		// An agent's request waits in its outbox, the one directory of
		// batty's its sandbox may write, for the daemon to take as its.
		for _, a := range []string{"engineer-2", "architect"} {
			if _, err := os.Stat(outbox.Path(l.Dir, a)); err == nil {
				msgs = append(msgs, requests(t, l, a)...)
			}
		}
		slices.SortFunc(msgs, func(a, b inbox.Message) int { return strings.Compare(a.ID, b.ID) })
		return msgs
	}
	var want []inbox.Message
	for _, tc := range []struct{ from, agent string }{
		{"", "engineer-1"},
		{"engineer-2", "engineer-2"}, // its own branch
		{"architect", "engineer-1"},  // talks_to: engineer
	} {
		var env []string
		from := team.Human
		if tc.from != "" {
			env, from = []string{agentenv.Agent + "=" + tc.from}, tc.from
		}
		out, errOut, code := runBattyIn(t, dir, env, "", "merge", tc.agent)
		m := queuedRE.FindStringSubmatch(out)
		// An agent that lands its own branch learns that what its turn
		// wrote lands once batty has committed it.
		if code != 0 || m == nil || m[1] != tc.agent || (m[3] != "") != (tc.from == tc.agent) || errOut != "batty: the team is not running; the landing waits until `batty start`\n" {
			t.Fatalf("merge %s from %s: exit %d\nstdout: %s\nstderr: %s", tc.agent, from, code, out, errOut)
		}
		want = append(want, inbox.Message{From: from, To: team.LandingBox, Body: tc.agent})
		got := pending()
		if len(got) != len(want) {
			t.Fatalf("%d landing requests, want %d: %+v", len(got), len(want), got)
		}
		last := got[len(got)-1]
		if inbox.ShortID(last.ID) != m[2] || last.From != from || last.To != team.LandingBox || last.Body != tc.agent {
			t.Fatalf("the request of merge %s from %s: %+v (printed id %s)", tc.agent, from, last, m[2])
		}
		if _, err := os.Stat(filepath.Join(l.Inboxes(), team.LandingBox, "new", last.ID+".json")); from == team.Human && err != nil {
			t.Fatalf("the request's file: %v", err)
		}
	}

	for _, tc := range []struct {
		env  []string
		args []string
		code int
		want string
	}{
		// An engineer may not land the other's branch: talks_to names only the architect.
		{[]string{agentenv.Agent + "=engineer-2"}, []string{"merge", "engineer-1"}, 1,
			`this command runs inside agent "engineer-2", which may land only its own branch or the branch of an agent it may message (talks_to)`},
		{nil, []string{"merge", "architect"}, 1, "`workspace: worktree`"},
		{nil, []string{"merge", "nobody"}, 1, `unknown agent "nobody"`},
		{nil, []string{"merge"}, 2, "Usage: batty merge"},
		{nil, []string{"merge", "engineer-1", "engineer-2"}, 2, "Usage: batty merge"},
	} {
		out, errOut, code := runBattyIn(t, dir, tc.env, "", tc.args...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("batty %s (env %q): exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), tc.env, code, out, errOut, tc.code, tc.want)
		}
	}
	if got := pending(); len(got) != len(want) {
		t.Fatalf("a refused merge queued a request: %+v", got)
	}
}

// The worktree commands exit as every command does: 2 for a command line
// that cannot be run, 1 for a runtime error, 0 for success; they are in
// the help's worktree group.
func TestWorkspaceCommandsExitCodesAndHelp(t *testing.T) {
	dir := t.TempDir()
	writeWorktreeTeam(t, dir, "")
	env := gitTestEnv(dir)
	for _, tc := range []struct {
		code int
		args []string
	}{
		{2, []string{"diff"}},
		{2, []string{"diff", "a", "b"}},
		{2, []string{"diff", "--bogus", "engineer-1"}},
		{2, []string{"workspace", "bogus"}},
		{2, []string{"workspace", "prune"}},
		{2, []string{"workspace", "prune", "a", "b"}},
		{2, []string{"workspace", "prune", "--force=maybe", "engineer-1"}},
		{1, []string{"diff", "nobody"}},
		{1, []string{"workspace", "prune", "nobody"}},
		// Not a git repository: a runtime error.
		{1, []string{"diff", "engineer-1"}},
		{1, []string{"workspace", "prune", "engineer-1"}},
		{0, []string{"workspace"}},
		{0, []string{"workspace", "--help"}},
		{0, []string{"help", "merge"}},
		{0, []string{"diff", "--help"}},
	} {
		_, errOut, code := runBattyIn(t, dir, env, "", tc.args...)
		if code != tc.code {
			t.Errorf("batty %s: exit %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), code, tc.code, errOut)
			continue
		}
		if code == 2 && !strings.Contains(errOut, "Usage: batty") {
			t.Errorf("batty %s: exit 2 without a usage line; stderr:\n%s", strings.Join(tc.args, " "), errOut)
		}
	}
	out, _, code := runBattyIn(t, dir, nil, "", "--help")
	if code != 0 || !regexp.MustCompile(`\nWorktrees and landing:\n  approve +\S.*\n  diff +\S.*\n  merge +\S.*\n  reject +\S.*\n  review +\S.*\n  workspace +\S.*\n`).MatchString(out) {
		t.Fatalf("help: exit %d, no worktree group of approve, diff, merge, reject, review, workspace:\n%s", code, out)
	}
}

// merge, diff and workspace prune complete the agents that work in
// worktrees; merge inside an agent only those whose branch it may land.
func TestCompletionOfWorktreeAgents(t *testing.T) {
	dir := t.TempDir()
	writeWorktreeTeam(t, dir, "")
	both := []string{"engineer-1", "engineer-2"}
	for _, tc := range []struct {
		env  []string
		args []string
		want []string
	}{
		{nil, []string{"merge", ""}, both},
		{nil, []string{"diff", ""}, both},
		{nil, []string{"diff", "--stat", "engineer-2"}, []string{"engineer-2"}},
		{nil, []string{"workspace", "prune", ""}, both},
		{nil, []string{"workspace", "prune", "arch"}, nil},
		{nil, []string{"merge", "engineer-1", ""}, nil},
		{[]string{agentenv.Agent + "=engineer-2"}, []string{"merge", ""}, []string{"engineer-2"}},
		{[]string{agentenv.Agent + "=architect"}, []string{"merge", ""}, both},
	} {
		if got := completions(t, dir, tc.env, tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("complete %q (env %q) = %q, want %q", tc.args, tc.env, got, tc.want)
		}
	}
}

// The worktree and landing tables fit 80 columns for the usual names: the
// path is relative to the project, a landing is its short id and its
// detail (free text, which may be longer) has a line of its own.
func TestStatusWorkspaceTables(t *testing.T) {
	root := "/home/someone/src/a-project-with-a-long-name"
	state := "/home/someone/.local/state/batty/projects/a-project-with-a-long-na-0123456789ab"
	landed := "0123456789abcdef0123456789abcdef01234567"
	st := control.Status{Team: "t", Agents: []control.AgentStatus{
		{Name: "architect", Role: "architect", State: "idle"},
		{Name: "engineer-1", Role: "engineer", State: "idle", Workspace: &control.WorkspaceStatus{Path: state + "/worktrees/engineer-1",
			Branch: "batty/engineer-1", Base: "main", Exists: true, Ahead: 3, Behind: 1, Dirty: 2}},
		{Name: "engineer-2", Role: "engineer", State: "idle", Workspace: &control.WorkspaceStatus{Path: root + "/wt/engineer-2",
			Branch: "batty/engineer-2", Base: "main"}},
		{Name: "engineer-3", Role: "engineer", State: "idle", Workspace: &control.WorkspaceStatus{Path: "/elsewhere/engineer-3",
			Branch: "batty/engineer-3", Base: "main", Exists: true}},
	}, Landings: []control.LandingStatus{
		{ID: "20261121T125100.123456789Z-1f2e3d4c", Agent: "engineer-1", State: "landed", By: "human", Commit: landed},
		{ID: "20261121T125200.123456789Z-5a6b7c8d", Agent: "engineer-10", State: "failed", By: "engineer-10",
			Detail: "conflicts: internal/parser/parser.go, internal/parser/parser_test.go, README.md\x1b[31m"},
	}}
	shown, stateRel := withProjectPaths(st, root, state)
	if !stateRel || shown.Agents[2].Workspace.Path != "wt/engineer-2" {
		t.Errorf("withProjectPaths: %v, %+v", stateRel, shown.Agents[2].Workspace)
	}
	if st.Agents[1].Workspace.Path != state+"/worktrees/engineer-1" {
		t.Fatal("withProjectPaths changed its argument")
	}
	var b strings.Builder
	printWorkspaces(&b, shown.Agents, shown.Landings)
	text := b.String()
	for _, l := range strings.Split(text, "\n") {
		// A landing's detail is free text on a line of its own.
		if n := len([]rune(l)); n > 80 && !strings.HasPrefix(l, "  conflicts:") {
			t.Errorf("a line of %d runes: %q", n, l)
		}
	}
	for _, want := range []string{
		`(?m)^BRANCH +BASE +AHEAD +BEHIND +DIRTY +PATH$`,
		`(?m)^batty/engineer-1 +main +3 +1 +2 +worktrees/engineer-1$`,
		`(?m)^batty/engineer-2 +main +- +- +- +\(not made yet\)$`,
		`(?m)^batty/engineer-3 +main +0 +0 +0 +/elsewhere/engineer-3$`,
		`(?m)^LANDING +AGENT +STATE +BY +REQUESTED +COMMIT$`,
		`(?m)^1f2e3d4c +engineer-1 +landed +human +\d\d:\d\d:\d\d +0123456789ab$`,
		`(?m)^5a6b7c8d +engineer-10 +failed +engineer-10 +\d\d:\d\d:\d\d +-\n  conflicts: internal/parser/parser\.go, internal/parser/parser_test\.go, README\.md\n`,
	} {
		if !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("the tables lack %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, "architect") || strings.Contains(text, "\x1b") {
		t.Errorf("a shared agent or an escape in the tables:\n%s", text)
	}
	// No worktree agent and no landing: nothing at all.
	b.Reset()
	printWorkspaces(&b, st.Agents[:1], nil)
	if b.Len() != 0 {
		t.Errorf("tables without worktree agents: %q", b.String())
	}
}

// The live view counts a worktree agent's commits ahead of base when the
// column fits, and leaves the column out for a team without worktrees.
func TestRenderWatchShowsAhead(t *testing.T) {
	st := control.Status{Team: "demo", Daemon: control.DaemonStatus{PID: 41230, UptimeS: 123}, Agents: watchAgents(3)}
	testNow := time.Now()
	plain := strings.Join(renderWatch(st, 80, 24, nil, testNow), "\n")
	if strings.Contains(plain, "AHEAD") {
		t.Fatalf("AHEAD without worktree agents:\n%s", plain)
	}
	st.Agents[0].Workspace = &control.WorkspaceStatus{Branch: "batty/engineer-1", Base: "main", Exists: true, Ahead: 3}
	st.Agents[1].Workspace = &control.WorkspaceStatus{Branch: "batty/engineer-2", Base: "main", Exists: true, Ahead: 12}
	for _, cols := range []int{80, 120, 200} {
		lines := renderWatch(st, cols, 24, nil, testNow)
		text := strings.Join(lines, "\n")
		for _, l := range lines {
			if n := len([]rune(l)); n > cols {
				t.Errorf("%d columns: a line of %d runes: %q", cols, n, l)
			}
		}
		for _, want := range []string{`(?m)^AGENT .* CTX +AHEAD\b`, `(?m)^engineer-1 .*% +\+3\b`, `(?m)^engineer-2 .*% +\+12\b`, `(?m)^engineer-3 .*% +-( |$)`} {
			if !regexp.MustCompile(want).MatchString(text) {
				t.Errorf("%d columns: the view lacks %s:\n%s", cols, want, text)
			}
		}
	}
	// Too narrow for it: the agents' other columns win.
	narrow := strings.Join(renderWatch(st, 50, 24, nil, testNow), "\n")
	if strings.Contains(narrow, "AHEAD") {
		t.Errorf("AHEAD at 50 columns:\n%s", narrow)
	}
}

// A running team of worktree agents through the CLI: an engineer's turn is
// a commit on its branch that status, diff and the tables show; prune is
// refused while the team runs; merge lands the branch on main (the
// project's checkout follows); restart with an unknown base is refused
// and leaves the team running; once the team stops, the landed worktree
// prunes without --force and without an archive.
func TestWorktreeTeamThroughTheCLI(t *testing.T) {
	dir, _ := newGitProject(t)
	env := gitTestEnv(dir)
	t.Cleanup(func() { runBattyIn(t, dir, nil, "", "stop", "--timeout", "1s") })
	if out, errOut, code := runBattyIn(t, dir, env, "", "start", "--no-tmux"); code != 0 {
		log, _ := os.ReadFile(filepath.Join(layoutOf(t, dir).Dir, "daemon.log"))
		t.Fatalf("start: exit %d\n%s%s\ndaemon.log:\n%s", code, out, errOut, log)
	}
	mustSend(t, dir, nil, "", "engineer-1", "scenario:write:notes.txt=from-engineer-1")
	st := waitJSONStatus(t, dir, "engineer-1's turn committed", func(st control.Status) bool {
		a := agentStatus(st, "engineer-1")
		return a.TurnsCompleted == 1 && a.Workspace != nil && a.Workspace.Ahead == 1
	})
	wt := filepath.Join(layoutOf(t, dir).WorktreesDir(), "engineer-1")
	if ws := agentStatus(st, "engineer-1").Workspace; ws.Path != wt || ws.Branch != "batty/engineer-1" || ws.Base != "main" || !ws.Exists || ws.Dirty != 0 || ws.Behind != 0 ||
		ws.Head != gitIn(t, dir, "rev-parse", "batty/engineer-1") {
		t.Fatalf("engineer-1's workspace: %+v", ws)
	}
	if ws := agentStatus(st, "architect").Workspace; ws != nil {
		t.Fatalf("the architect, in the project's checkout, has a workspace: %+v", ws)
	}
	table := mustBatty(t, dir, "status")
	if !regexp.MustCompile(`(?m)^batty/engineer-1 +main +1 +0 +0 +worktrees/engineer-1$`).MatchString(table) || !strings.Contains(table, "(worktrees/ is in the state directory "+layoutOf(t, dir).Dir+")") {
		t.Fatalf("status has no worktree row of engineer-1:\n%s", table)
	}
	if out := mustBatty(t, dir, "diff", "engineer-1"); !strings.Contains(out, "\n+from-engineer-1\n") {
		t.Fatalf("diff:\n%s", out)
	}

	out, errOut, code := runBattyIn(t, dir, env, "", "workspace", "prune", "--force", "engineer-1")
	if code != 1 || out != "" || !strings.Contains(errOut, "already running") || !strings.Contains(errOut, "stop the team first (`batty stop`), then prune") {
		t.Fatalf("prune of a running team: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(wt, "notes.txt")); err != nil {
		t.Fatalf("the refused prune touched the worktree: %v", err)
	}

	out, errOut, code = runBattyIn(t, dir, env, "", "merge", "engineer-1")
	if code != 0 || !strings.HasPrefix(out, "queued the landing of batty/engineer-1") || errOut != "" {
		t.Fatalf("merge: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	st = waitJSONStatus(t, dir, "the landing", func(st control.Status) bool {
		return len(st.Landings) == 1 && landing.State(st.Landings[0].State).Finished()
	})
	if l := st.Landings[0]; l.State != "landed" || l.Agent != "engineer-1" || l.By != team.Human || l.Commit != gitIn(t, dir, "rev-parse", "main") {
		t.Fatalf("landing %+v; main at %s", l, gitIn(t, dir, "rev-parse", "main"))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "from-engineer-1\n" {
		t.Fatalf("the project's checkout of main did not follow: %q, %v", b, err)
	}
	if table := mustBatty(t, dir, "status"); !regexp.MustCompile(`(?m)^[0-9a-f]{8} +engineer-1 +landed +human +\d\d:\d\d:\d\d +[0-9a-f]{12}$`).MatchString(table) {
		t.Fatalf("status has no landing row:\n%s", table)
	}

	// A team file naming a base that does not exist: restart refuses
	// before it stops the team.
	teamFile := filepath.Join(dir, "team.yaml")
	orig, err := os.ReadFile(teamFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(teamFile, []byte(strings.Replace(string(orig), "base: main", "base: develop", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runBattyIn(t, dir, env, "", "restart", "--no-tmux")
	if code != 1 || !strings.Contains(errOut, "is invalid:") || !strings.Contains(errOut, `unknown base branch "develop"`) {
		t.Fatalf("restart with an unknown base: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if pid := jsonStatus(t, dir).Daemon.PID; pid != st.Daemon.PID {
		t.Fatalf("the refused restart touched the team: pid %d, was %d", pid, st.Daemon.PID)
	}
	if err := os.WriteFile(teamFile, orig, 0o600); err != nil {
		t.Fatal(err)
	}

	mustBatty(t, dir, "stop")
	// A stopped team's status still shows the worktree and the queue.
	var offline control.Status
	if err := json.Unmarshal([]byte(mustBatty(t, dir, "status", "--json")), &offline); err != nil {
		t.Fatal(err)
	}
	if ws := agentStatus(offline, "engineer-1").Workspace; ws == nil || !ws.Exists || ws.Branch != "batty/engineer-1" || ws.Behind != 0 {
		t.Fatalf("the stopped team's status: workspace %+v", ws)
	}
	if n := len(offline.Landings); n == 0 || offline.Landings[n-1].State != "landed" {
		t.Fatalf("the stopped team's status: landings %+v", offline.Landings)
	}
	out, errOut, code = runBattyIn(t, dir, env, "", "workspace", "prune", "engineer-1")
	if code != 0 || out != "batty: removed the worktree and branch batty/engineer-1\n" {
		t.Fatalf("prune of landed work: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if refs := gitIn(t, dir, "for-each-ref", "--format=%(refname)", "refs/batty/", "refs/heads/batty/engineer-1"); refs != "" {
		t.Fatalf("refs left after the prune of landed work: %s", refs)
	}
}
