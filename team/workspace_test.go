package team

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// branchNames are names CheckBranchName accepts (ok) or refuses, with the
// reason it gives; stricter marks the names git itself accepts but batty
// refuses.
var branchNames = []struct {
	name     string
	ok       bool
	why      string
	stricter bool
}{
	{"main", true, "", false},
	{"feature/login", true, "", false},
	{"release-1.2", true, "", false},
	{"a@b", true, "", false},
	{"é-branch", true, "", false},
	{"a.b/c_d", true, "", false},
	{"x.locked", true, "", false},
	{"", false, "it is empty", false},
	{"@", false, `"@" is not a branch name to git`, true},
	{"HEAD", false, `"HEAD" is not a branch name to git`, false},
	{"-x", false, `it starts with "-"`, false},
	{"/a", false, `it starts with "/"`, false},
	{"a/", false, `it ends with "/"`, false},
	{"a.", false, `it ends with "."`, false},
	{"a..b", false, `it contains ".."`, false},
	{"a//b", false, `it contains "//"`, false},
	{"a@{b", false, `it contains "@{"`, false},
	{"@{-1}", false, `it contains "@{"`, false},
	{"a b", false, "it contains a space", false},
	{"a\tb", false, "it contains a control character", false},
	{"a\x7fb", false, "it contains a control character", false},
	{"a~1", false, `it contains '~'`, false},
	{"a^", false, `it contains '^'`, false},
	{"a:b", false, `it contains ':'`, false},
	{"a?", false, `it contains '?'`, false},
	{"a*", false, `it contains '*'`, false},
	{"a[b", false, `it contains '['`, false},
	{`a\b`, false, `it contains '\\'`, false},
	{".a", false, `its part ".a" starts with "."`, false},
	{"a/.b", false, `its part ".b" starts with "."`, false},
	{"a.lock", false, `its part "a.lock" ends with ".lock"`, false},
	{"a.lock/b", false, `its part "a.lock" ends with ".lock"`, false},
	{"x/.lock", false, `its part ".lock" starts with "."`, false},
}

func TestCheckBranchName(t *testing.T) {
	for _, tt := range branchNames {
		err := CheckBranchName(tt.name)
		switch {
		case tt.ok && err != nil:
			t.Errorf("CheckBranchName(%q) = %v, want nil", tt.name, err)
		case !tt.ok && err == nil:
			t.Errorf("CheckBranchName(%q) = nil, want %q", tt.name, tt.why)
		case !tt.ok && err.Error() != tt.why:
			t.Errorf("CheckBranchName(%q) = %q, want %q", tt.name, err, tt.why)
		}
	}
}

// TestCheckBranchNameAgreesWithGit runs `git check-ref-format --branch` on
// every name of the table: the pure check must say what git says, except
// where it is stricter on purpose.
func TestCheckBranchNameAgreesWithGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	for _, tt := range branchNames {
		if tt.name == "" {
			continue
		}
		cmd := exec.Command(git, "-C", dir, "check-ref-format", "--branch", tt.name)
		cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
		out, err := cmd.CombinedOutput()
		gitOK := err == nil
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("git check-ref-format %q: %v", tt.name, err)
		}
		if want := tt.ok || tt.stricter; gitOK != want {
			t.Errorf("git check-ref-format --branch %q: ok=%v (%s), table says ok=%v", tt.name, gitOK, strings.TrimSpace(string(out)), want)
		}
	}
}

func TestParseWorkspaceErrors(t *testing.T) {
	const roles = "roles: [{name: a}]\n"
	tests := []struct {
		name string
		src  string
		want string // one full line of the error
	}{
		{"team workspace not a mapping", "name: t\nworkspace: worktree\n" + roles,
			"team.yaml:2:12: workspace must be a mapping, not a string (the team's workspace is a mapping of base, verify, setup, verify_timeout, setup_timeout, sandbox, review and protected; `workspace: worktree` goes on a role)"},
		{"team workspace a list", "name: t\nworkspace: [main]\n" + roles,
			"team.yaml:2:12: workspace must be a mapping, not a list ("},
		{"unknown workspace key", "name: t\nworkspace:\n  bse: main\n" + roles,
			`team.yaml:3:3: unknown key "bse" in workspace (did you mean "base"?)`},
		{"unknown workspace key without suggestion", "name: t\nworkspace:\n  zzz: 1\n" + roles,
			`team.yaml:3:3: unknown key "zzz" in workspace (valid keys: base, verify, setup, verify_timeout, setup_timeout, sandbox, review, protected)`},
		{"duplicate workspace key", "name: t\nworkspace:\n  base: main\n  base: dev\n" + roles,
			`team.yaml:4:3: duplicate key "base" in workspace (first defined at line 3)`},
		{"base with ..", "name: t\nworkspace:\n  base: main..dev\n" + roles,
			`team.yaml:3:9: invalid workspace.base "main..dev": it contains ".." (name a branch, e.g. "main", or leave base out for the branch checked out when batty starts)`},
		{"base starting with -", "name: t\nworkspace: {base: -main}\n" + roles,
			`team.yaml:2:19: invalid workspace.base "-main": it starts with "-" (`},
		{"base ending with .lock", "name: t\nworkspace: {base: main.lock}\n" + roles,
			`team.yaml:2:19: invalid workspace.base "main.lock": its part "main.lock" ends with ".lock" (`},
		{"base with a space", "name: t\nworkspace: {base: \"my branch\"}\n" + roles,
			`team.yaml:2:19: invalid workspace.base "my branch": it contains a space (`},
		{"base not a string", "name: t\nworkspace: {base: 5}\n" + roles,
			`team.yaml:2:19: workspace.base must be a string, not an integer (quote it: "5")`},
		{"verify not a string", "name: t\nworkspace: {verify: [make, test]}\n" + roles,
			`team.yaml:2:21: workspace.verify must be a string, not a list (write the command as one string, run by the shell, e.g. "npm ci && npm run build")`},
		{"setup a mapping", "name: t\nworkspace: {setup: {run: x}}\n" + roles,
			`team.yaml:2:20: workspace.setup must be a string, not a mapping`},
		{"blank verify", "name: t\nworkspace: {verify: \"  \"}\n" + roles,
			`team.yaml:2:21: workspace.verify is blank (write a shell command, or leave the key out)`},
		{"blank setup", "name: t\nworkspace: {setup: \"\\t\"}\n" + roles,
			`team.yaml:2:20: workspace.setup is blank (write a shell command, or leave the key out)`},
		{"verify timeout above 24h", "name: t\nworkspace: {verify_timeout: 25h}\n" + roles,
			`team.yaml:2:29: workspace.verify_timeout must be at most 24h, got 25h (lower it to 24h or less)`},
		{"setup timeout zero", "name: t\nworkspace: {setup_timeout: 0s}\n" + roles,
			`team.yaml:2:28: workspace.setup_timeout must be positive, got 0s`},
		{"verify timeout without unit", "name: t\nworkspace: {verify_timeout: 30}\n" + roles,
			`team.yaml:2:29: workspace.verify_timeout must be a duration with a unit, not a bare number (add a unit, e.g. 30s or 30m)`},
		{"setup timeout bad", "name: t\nworkspace: {setup_timeout: soon}\n" + roles,
			`team.yaml:2:28: workspace.setup_timeout: invalid duration "soon" (use Go duration syntax, e.g. 90s, 10m or 1h30m)`},
		{"role workspace misspelt", "name: t\nroles:\n  - name: a\n    workspace: worktrees\n",
			`team.yaml:4:16: invalid role workspace "worktrees" (did you mean "worktree"? one of: shared (the project checkout), worktree (a git worktree per agent))`},
		{"role workspace unknown", "name: t\nroles:\n  - name: a\n    workspace: git\n",
			`team.yaml:4:16: invalid role workspace "git" (one of: shared (the project checkout), worktree (a git worktree per agent))`},
		{"role workspace empty", "name: t\nroles:\n  - name: a\n    workspace: \"\"\n",
			`team.yaml:4:16: invalid role workspace "" (one of: shared (the project checkout), worktree (a git worktree per agent))`},
		{"role workspace not a string", "name: t\nroles:\n  - name: a\n    workspace: true\n",
			`team.yaml:4:16: role workspace must be a string, not a boolean (quote it: "true")`},
		{"role workspace a mapping", "name: t\nroles:\n  - name: a\n    workspace: {base: main}\n",
			`team.yaml:4:16: role workspace must be a string, not a mapping (a role's workspace is shared or worktree; base, verify and setup go in the top-level workspace mapping)`},
		{"sandbox a word", "name: t\nworkspace: {sandbox: none}\n" + roles,
			"team.yaml:2:22: invalid workspace.sandbox \"none\" (write `sandbox: off` to run verify and setup without a sandbox, or a mapping of writable, verify_network and setup_network)"},
		{"sandbox a boolean", "name: t\nworkspace: {sandbox: false}\n" + roles,
			"team.yaml:2:22: invalid workspace.sandbox \"false\" (write `sandbox: off`"},
		{"sandbox a list", "name: t\nworkspace: {sandbox: [/tmp]}\n" + roles,
			"team.yaml:2:22: workspace.sandbox must be off or a mapping, not a list (write `sandbox: off`"},
		{"sandbox key misspelt", "name: t\nworkspace:\n  sandbox:\n    writeable: [/x]\n" + roles,
			`team.yaml:4:5: unknown key "writeable" in workspace.sandbox (did you mean "writable"?)`},
		{"writable not a list", "name: t\nworkspace:\n  sandbox: {writable: /var/cache/x}\n" + roles,
			`team.yaml:3:23: workspace.sandbox.writable must be a list, not a string (write a list: [/var/cache/x])`},
		{"writable relative", "name: t\nworkspace:\n  sandbox:\n    writable: [cache]\n" + roles,
			`team.yaml:4:16: workspace.sandbox.writable element "cache" is not an absolute path (write an absolute path or one from your home directory, e.g. "~/.cache/go-build")`},
		{"writable the root", "name: t\nworkspace:\n  sandbox:\n    writable: [/var/cache, /]\n" + roles,
			`team.yaml:4:28: workspace.sandbox.writable element "/" holds the project `},
		{"network not a boolean", "name: t\nworkspace:\n  sandbox: {verify_network: yes}\n" + roles,
			`team.yaml:3:29: workspace.sandbox.verify_network must be true or false, not a string (write true or false, without quotes)`},
		{"review misspelt", "name: t\nworkspace:\n  review: humans\n" + roles,
			`team.yaml:3:11: invalid workspace.review "humans" (did you mean "human"? one of: none (a landing lands once verify passes), human (an agent's landing waits for batty approve))`},
		{"review unknown", "name: t\nworkspace: {review: boss}\n" + roles,
			`team.yaml:2:21: invalid workspace.review "boss" (one of: none`},
		{"review a boolean", "name: t\nworkspace: {review: true}\n" + roles,
			`team.yaml:2:21: workspace.review must be a string, not a boolean (quote it: "true")`},
		{"review a list", "name: t\nworkspace: {review: [human]}\n" + roles,
			`team.yaml:2:21: workspace.review must be a string, not a list`},
		{"protected not a list", "name: t\nworkspace: {protected: deploy/}\n" + roles,
			`team.yaml:2:24: workspace.protected must be a list, not a string (write a list: [deploy/])`},
		{"protected with **", "name: t\nworkspace:\n  protected: [deploy/, \"ci/**/run\"]\n" + roles,
			`team.yaml:3:24: invalid workspace.protected element "ci/**/run": "**" is not supported: a pattern without "/" (but a trailing one) matches at any depth (write a path from the repository's top level as in .gitignore, e.g. "deploy/" or "/scripts/release.sh")`},
		{"protected with ..", "name: t\nworkspace:\n  protected:\n    - ../x\n" + roles,
			`team.yaml:4:7: invalid workspace.protected element "../x": it contains ".." (`},
		{"protected empty", "name: t\nworkspace:\n  protected: [\"\"]\n" + roles,
			`team.yaml:3:15: invalid workspace.protected element "": it is empty (`},
		{"protected bad class", "name: t\nworkspace:\n  protected: [\"[x\"]\n" + roles,
			`team.yaml:3:15: invalid workspace.protected element "[x": component "[x": syntax error in pattern (`},
		{"role key misspelt", "name: t\nroles:\n  - name: a\n    worktree: true\n",
			`team.yaml:4:5: unknown key "worktree" in role (valid keys: name, instances, prompt, talks_to, cwd, workspace, hosts, codex, accounts)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, msg, _ := loadString(t, tt.src)
			if cfg != nil || msg == "" {
				t.Fatalf("Load succeeded, want error containing %q", tt.want)
			}
			lines := strings.Split(msg, "\n")
			if len(lines) != 1 {
				t.Errorf("got %d problems, want 1:\n%s", len(lines), msg)
			}
			if !strings.HasPrefix(lines[0], tt.want) {
				t.Errorf("error:\n%s\nwant a line starting with:\n%s", msg, tt.want)
			}
		})
	}
}

func TestParseWorkspace(t *testing.T) {
	src := `name: t
workspace:
  base: release/2.0
  verify: |
    go vet ./...
    go test ./...
  setup: npm ci
  verify_timeout: 1h
  setup_timeout: 24h
  review: human
  protected: [deploy/, /scripts/release.sh, deploy/]
roles:
  - name: lead
  - name: eng
    instances: 2
    workspace: worktree
  - name: rev
    workspace: shared
`
	cfg, msg, _ := loadString(t, src)
	if msg != "" {
		t.Fatal(msg)
	}
	want := WorkspaceSettings{
		Base: "release/2.0", Verify: "go vet ./...\ngo test ./...\n", Setup: "npm ci",
		VerifyTimeout: time.Hour, SetupTimeout: 24 * time.Hour, Line: 2,
		Sandbox: WorkspaceSandbox{SetupNetwork: true}, Review: ReviewHuman,
		Protected: []string{"deploy/", "/scripts/release.sh"},
	}
	if !reflect.DeepEqual(cfg.Workspace, want) {
		t.Errorf("Workspace = %+v, want %+v", cfg.Workspace, want)
	}
	var got []string
	for _, r := range cfg.Roles {
		got = append(got, r.Name+"="+r.Workspace)
	}
	if w := []string{"lead=shared", "eng=worktree", "rev=shared"}; !reflect.DeepEqual(got, w) {
		t.Errorf("role workspaces = %q, want %q", got, w)
	}
	got = nil
	for _, a := range cfg.Agents() {
		got = append(got, a.Name+"="+a.Workspace)
		if b, ok := cfg.Agent(a.Name); !ok || b.Workspace != a.Workspace {
			t.Errorf("Agent(%q).Workspace = %q, Agents() says %q", a.Name, b.Workspace, a.Workspace)
		}
	}
	if w := []string{"lead=shared", "eng-1=worktree", "eng-2=worktree", "rev=shared"}; !reflect.DeepEqual(got, w) {
		t.Errorf("agent workspaces = %q, want %q", got, w)
	}
	if !cfg.UsesWorktrees() {
		t.Error("UsesWorktrees() = false with a worktree role")
	}
	if !cfg.Workspace.ReviewsAgents() {
		t.Error("ReviewsAgents() = false with review: human")
	}
}

func TestParseWorkspaceDefaults(t *testing.T) {
	want := WorkspaceSettings{VerifyTimeout: 30 * time.Minute, SetupTimeout: 10 * time.Minute, Sandbox: WorkspaceSandbox{SetupNetwork: true}}
	tests := []struct {
		name, src string
		line      int
	}{
		{"absent", "name: t\nroles: [{name: a, workspace: worktree}]\n", 0},
		{"null", "name: t\nworkspace:\nroles: [{name: a, workspace: worktree}]\n", 0},
		{"empty", "name: t\nworkspace: {}\nroles: [{name: a, workspace: worktree}]\n", 2},
		{"null values", "name: t\nworkspace:\n  base:\n  verify: ~\n  setup:\n  verify_timeout:\n  setup_timeout:\n  sandbox:\n  review:\nroles: [{name: a, workspace: worktree}]\n", 2},
		{"empty strings", "name: t\nworkspace: {base: \"\", verify: \"\", setup: \"\"}\nroles: [{name: a, workspace: worktree}]\n", 2},
		{"review none", "name: t\nworkspace: {review: none}\nroles: [{name: a, workspace: worktree}]\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, msg, _ := loadString(t, tt.src)
			if msg != "" {
				t.Fatal(msg)
			}
			w := want
			w.Line = tt.line
			if !reflect.DeepEqual(cfg.Workspace, w) {
				t.Errorf("Workspace = %+v, want %+v", cfg.Workspace, w)
			}
		})
	}
	// A role without the key works in the shared checkout.
	cfg, msg, _ := loadString(t, "name: t\nroles:\n  - name: a\n    workspace:\n  - name: b\n")
	if msg != "" {
		t.Fatal(msg)
	}
	for _, a := range cfg.Agents() {
		if a.Workspace != WorkspaceShared {
			t.Errorf("agent %s: Workspace = %q, want %q", a.Name, a.Workspace, WorkspaceShared)
		}
	}
	if cfg.UsesWorktrees() {
		t.Error("UsesWorktrees() = true without a worktree role")
	}
}

func TestUsesWorktreesHandBuilt(t *testing.T) {
	c := &Config{Roles: []Role{{Name: "a"}, {Name: "b", Workspace: WorkspaceShared}}}
	if c.UsesWorktrees() {
		t.Error("an empty or shared Workspace counts as worktree")
	}
	c.Roles[0].Workspace = WorkspaceWorktree
	if !c.UsesWorktrees() {
		t.Error("a worktree role is not seen")
	}
}

func TestWorkspaceProblems(t *testing.T) {
	notRepo := fmt.Errorf("%w: /p", ErrNotGitRepository)
	noBase := fmt.Errorf("branch %q: %w", "dev", ErrNoBaseBranch)
	tests := []struct {
		name  string
		src   string
		err   error
		calls int    // how often check must be called
		base  string // what it must be called with
		want  string // the problem, "" for none
	}{
		{"no worktree role", "name: t\nworkspace: {base: dev}\nroles: [{name: a}]\n", notRepo, 0, "", ""},
		{"check passes", "name: t\nworkspace: {base: dev}\nroles: [{name: a, workspace: worktree}]\n", nil, 1, "dev", ""},
		{"not a repository, at the workspace key", "name: t\nroles:\n  - name: a\n    workspace: worktree\nworkspace:\n  verify: make\n", notRepo, 1, "",
			"team.yaml:5: workspace: not a git repository: /p (run batty in a git repository (git init) or set workspace: shared on role a)"},
		{"not a repository, at the first worktree role", "name: t\nroles:\n  - name: a\n  - name: b\n    workspace: worktree\n  - name: c\n    workspace: worktree\n", notRepo, 1, "",
			"team.yaml:4: workspace: not a git repository: /p (run batty in a git repository (git init) or set workspace: shared on roles b, c)"},
		{"no base branch", "name: t\nworkspace:\n  base: dev\nroles: [{name: a, workspace: worktree}]\n", noBase, 1, "dev",
			`team.yaml:2: workspace: branch "dev": base branch not found (create the branch or set workspace.base)`},
		{"another error", "name: t\nworkspace: {}\nroles: [{name: a, workspace: worktree}]\n", errors.New("git: exec: not found"), 1, "",
			"team.yaml:2: workspace: git: exec: not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, msg, dir := loadString(t, tt.src)
			if msg != "" {
				t.Fatal(msg)
			}
			calls := 0
			ps := cfg.WorkspaceProblems(func(base string) error {
				calls++
				if base != tt.base {
					t.Errorf("check(%q), want check(%q)", base, tt.base)
				}
				return tt.err
			})
			if calls != tt.calls {
				t.Errorf("check called %d times, want %d", calls, tt.calls)
			}
			if tt.want == "" {
				if ps != nil {
					t.Errorf("problems %v, want none", ps)
				}
				return
			}
			if len(ps) != 1 {
				t.Fatalf("problems %v, want one", ps)
			}
			got := (&ValidationError{Problems: ps}).Error()
			if got = strings.ReplaceAll(got, dir+string(filepath.Separator), ""); got != tt.want {
				t.Errorf("problem\n %s\nwant\n %s", got, tt.want)
			}
		})
	}
}

// TestWorkspaceProblemsFile: problems name the team file as it was given
// to Parse, and a Config built by hand falls back to its Path.
func TestWorkspaceProblemsFile(t *testing.T) {
	dir := newTeamDir(t)
	t.Chdir(dir)
	cfg, err := Parse("team.yaml", []byte("name: t\nroles: [{name: a, workspace: worktree}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	fail := func(string) error { return ErrNotGitRepository }
	if ps := cfg.WorkspaceProblems(fail); len(ps) != 1 || ps[0].File != "team.yaml" || ps[0].Line != 2 {
		t.Errorf("problems %+v, want one at team.yaml:2", ps)
	}
	hand := &Config{Path: "/p/team.yaml", Roles: []Role{{Name: "a", Workspace: WorkspaceWorktree, Line: 7}}}
	if ps := hand.WorkspaceProblems(fail); len(ps) != 1 || ps[0].String() != "/p/team.yaml:7: workspace: not a git repository (run batty in a git repository (git init) or set workspace: shared on role a)" {
		t.Errorf("problems %+v", ps)
	}
}

func TestParseWorkspaceSandbox(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip(err)
	}
	const roles = "roles: [{name: a, workspace: worktree}]\n"
	tests := []struct {
		name, src string
		want      WorkspaceSandbox
	}{
		{"absent", "name: t\n" + roles, WorkspaceSandbox{SetupNetwork: true}},
		{"off", "name: t\nworkspace:\n  sandbox: off\n" + roles, WorkspaceSandbox{Off: true, SetupNetwork: true, Line: 3}},
		{"settings", "name: t\nworkspace:\n  sandbox:\n    writable: [~/.cache/go-build, /var/cache/x/../y/]\n    verify_network: true\n    setup_network: false\n" + roles,
			WorkspaceSandbox{Writable: []string{filepath.Join(home, ".cache/go-build"), "/var/cache/y"}, VerifyNetwork: true, Line: 3}},
		{"empty mapping", "name: t\nworkspace:\n  sandbox: {}\n" + roles, WorkspaceSandbox{SetupNetwork: true, Line: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, msg, _ := loadString(t, tt.src)
			if msg != "" {
				t.Fatal(msg)
			}
			if !reflect.DeepEqual(cfg.Workspace.Sandbox, tt.want) {
				t.Errorf("Sandbox = %+v, want %+v", cfg.Workspace.Sandbox, tt.want)
			}
		})
	}
}

// A writable directory that holds the project, or lies in its .batty,
// would hand the commands the checkout or the team's state.
func TestParseWorkspaceSandboxRefusesTheProject(t *testing.T) {
	for _, w := range []string{"%s", "%s/..", "%s/.batty", "%s/.batty/state/x"} {
		t.Run(w, func(t *testing.T) {
			dir := newTeamDir(t)
			path := filepath.Join(dir, "team.yaml")
			src := fmt.Sprintf("name: t\nworkspace:\n  sandbox:\n    writable: [%q]\nroles: [{name: a}]\n", fmt.Sprintf(w, dir))
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), "team.yaml:4:16: workspace.sandbox.writable element") {
				t.Fatalf("Load: %v, want the writable element refused", err)
			}
		})
	}
}
