package writable

import (
	"slices"
	"testing"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

func TestRoots(t *testing.T) {
	l := project.Layout{Dir: "/state/projects/p-1", Project: "/src/p"}
	ww := func(c team.CodexSettings) team.CodexSettings {
		if c.Sandbox == "" {
			c.Sandbox = "workspace-write"
		}
		return c
	}
	base := []string{"/src/p", "/state/projects/p-1/worktrees"}
	for _, tc := range []struct {
		name  string
		roles []team.Role
		ws    team.WorkspaceSettings
		env   Env
		want  []string
	}{
		{"workspace-write: cwd, /tmp and $TMPDIR", []team.Role{{Name: "a", Cwd: "/src/p", Codex: ww(team.CodexSettings{})}},
			team.WorkspaceSettings{}, Env{TmpDir: "/var/tmp/u"}, append(base, "/tmp", "/var/tmp/u")},
		{"no $TMPDIR", []team.Role{{Name: "a", Cwd: "/src/p/svc", Codex: ww(team.CodexSettings{})}},
			team.WorkspaceSettings{}, Env{}, append(base, "/src/p/svc", "/tmp")},
		{"/tmp and $TMPDIR excluded", []team.Role{{Name: "a", Cwd: "/src/p", Codex: ww(team.CodexSettings{Config: map[string]string{
			"sandbox_workspace_write.exclude_slash_tmp": "true", "sandbox_workspace_write.exclude_tmpdir_env_var": "true"}})}},
			team.WorkspaceSettings{}, Env{TmpDir: "/var/tmp/u"}, base},
		{"excluded through -c", []team.Role{{Name: "a", Cwd: "/src/p", Codex: ww(team.CodexSettings{Args: []string{
			"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "--config=sandbox_workspace_write.exclude_tmpdir_env_var=true"}})}},
			team.WorkspaceSettings{}, Env{TmpDir: "/var/tmp/u"}, base},
		{"excluded through an inline table", []team.Role{{Name: "a", Cwd: "/src/p", Codex: ww(team.CodexSettings{Args: []string{
			"-c", `sandbox_workspace_write={exclude_slash_tmp = true, writable_roots = ["/data", 'rel'], exclude_tmpdir_env_var=true}`}})}},
			team.WorkspaceSettings{}, Env{TmpDir: "/var/tmp/u"}, append(base, "/data", "/src/p/rel")},
		{"writable roots and --add-dir", []team.Role{{Name: "a", Cwd: "/src/p", Codex: ww(team.CodexSettings{Args: []string{
			"-c", `sandbox_workspace_write.writable_roots=["/home/u/.cache", "/home/u/bin",]`, "--add-dir", "/opt/x", "--add-dir=../sib"}})}},
			team.WorkspaceSettings{}, Env{}, append(base, "/home/u/.cache", "/home/u/bin", "/opt/x", "/src/sib", "/tmp")},
		{"single-quoted roots and a comment, as TOML reads them", []team.Role{{Name: "a", Cwd: "/src/p", Codex: ww(team.CodexSettings{
			Config: map[string]string{"sandbox_workspace_write.exclude_slash_tmp": "true # no /tmp"},
			Args:   []string{"-c", `sandbox_workspace_write.writable_roots=['/lit\x'] # cache`}})}},
			team.WorkspaceSettings{}, Env{}, append(base, `/lit\x`)},
		{"one string in codex.config is one root", []team.Role{{Name: "a", Cwd: "/src/p", Codex: ww(team.CodexSettings{
			Config: map[string]string{"sandbox_workspace_write.writable_roots": `"/one"`, "sandbox_workspace_write.exclude_slash_tmp": "true"}})}},
			team.WorkspaceSettings{}, Env{}, append(base, "/one")},
		{"an unreadable exclusion leaves /tmp writable", []team.Role{{Name: "a", Cwd: "/src/p", Codex: ww(team.CodexSettings{
			Config: map[string]string{"sandbox_workspace_write.exclude_slash_tmp": `"true"`}})}},
			team.WorkspaceSettings{}, Env{}, append(base, "/tmp")},
		{"codex.env's TMPDIR is codex's", []team.Role{{Name: "a", Cwd: "/src/p", Codex: ww(team.CodexSettings{Env: map[string]string{"TMPDIR": "/home/u/tmp"}})}},
			team.WorkspaceSettings{}, Env{TmpDir: "/var/tmp/u"}, append(base, "/tmp", "/home/u/tmp")},
		{"read-only and full access add no sandbox roots", []team.Role{
			{Name: "ro", Cwd: "/src/p", Codex: team.CodexSettings{Sandbox: "read-only", Args: []string{"--add-dir", "/ro"}}},
			{Name: "full", Cwd: "/src/q", Codex: team.CodexSettings{Sandbox: "danger-full-access", Args: []string{"--add-dir", "/full"}}}},
			team.WorkspaceSettings{}, Env{TmpDir: "/var/tmp/u"}, append(base, "/src/q")},
		{"-s in args decides", []team.Role{
			{Name: "ro", Cwd: "/src/p", Codex: team.CodexSettings{Sandbox: "read-only", Args: []string{"-s", "workspace-write"}}},
			{Name: "yolo", Cwd: "/src/p", Codex: ww(team.CodexSettings{Args: []string{"--dangerously-bypass-approvals-and-sandbox", "--add-dir", "/y"}})}},
			team.WorkspaceSettings{}, Env{}, append(base, "/tmp")},
		{"verify's and setup's caches", []team.Role{{Name: "a", Cwd: "/src/p", Codex: team.CodexSettings{Sandbox: "read-only"}}},
			team.WorkspaceSettings{Sandbox: team.WorkspaceSandbox{Writable: []string{"/home/u/.cache/go-build"}}}, Env{}, append(base, "/home/u/.cache/go-build")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &team.Config{Roles: tc.roles, Workspace: tc.ws}
			got := Dirs(Roots(cfg, l, tc.env))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Roots = %q\nwant    %q", got, tc.want)
			}
		})
	}
}

func TestRootsOfWorktreesMovedOut(t *testing.T) {
	// A host's layout keeps the worktrees in its state directory's parent.
	l := project.Layout{Dir: "/h/.batty"}
	got := Dirs(Roots(&team.Config{}, l, Env{}))
	if want := []string{"/h", "/h/.batty/worktrees"}; !slices.Equal(got, want) {
		t.Errorf("Roots = %q, want %q", got, want)
	}
}

func TestWithin(t *testing.T) {
	roots := []Root{{Dir: "/src/p"}, {Dir: "/tmp"}}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/src/p", true},
		{"/src/p/alert.sh", true},
		{"/src/p/../p/x", true},
		{"/src/p2/alert.sh", false},
		{"/src/alert.sh", false},
		{"/tmp/x/y", true},
		{"/tmpx", false},
		{"/home/u/.config/batty/alert.sh", false},
	} {
		if _, got := Within(tc.path, roots); got != tc.want {
			t.Errorf("Within(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
