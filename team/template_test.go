package team

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestWriteTemplate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	paths, err := WriteTemplate(dir, false, false)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range templateFiles {
		want = append(want, filepath.Join(dir, filepath.FromSlash(f)))
	}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("WriteTemplate returned %q, want %q", paths, want)
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("%s mode = %v, want 0644", p, st.Mode().Perm())
		}
	}
	for _, d := range []string{dir, filepath.Join(dir, "prompts")} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v, mode %v, want 0755", d, err, st.Mode().Perm())
		}
	}

	cfg, err := Load(filepath.Join(dir, "team.yaml"))
	if err != nil {
		t.Fatalf("template does not load: %v", err)
	}
	if got := agentNames(cfg.Agents()); !reflect.DeepEqual(got, []string{"architect", "manager", "engineer-1", "engineer-2"}) {
		t.Errorf("template agents = %q", got)
	}
	pairs := []struct {
		from, to string
		want     bool
	}{
		{"architect", "manager", true},
		{"manager", "architect", true},
		{"manager", "engineer-1", true},
		{"engineer-2", "manager", true},
		{"engineer-1", "engineer-2", false},
		{"architect", "engineer-1", false},
	}
	for _, p := range pairs {
		if got := cfg.MayTalk(p.from, p.to); got != p.want {
			t.Errorf("template MayTalk(%s, %s) = %v, want %v", p.from, p.to, got, p.want)
		}
	}

	// Without force nothing is overwritten, and every existing file is named.
	if err := os.WriteFile(paths[1], []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = WriteTemplate(dir, false, false)
	if err == nil || !strings.Contains(err.Error(), paths[0]) || !strings.Contains(err.Error(), paths[1]) {
		t.Fatalf("WriteTemplate over existing files: err = %v", err)
	}
	if data, _ := os.ReadFile(paths[1]); string(data) != "mine\n" {
		t.Errorf("existing file was modified without force")
	}

	// With force everything is rewritten.
	if _, err := WriteTemplate(dir, true, false); err != nil {
		t.Fatal(err)
	}
	want0, _ := templates.ReadFile("templates/prompts/architect.md")
	if data, _ := os.ReadFile(paths[1]); !bytes.Equal(data, want0) {
		t.Errorf("force did not overwrite %s", paths[1])
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "prompts")); len(entries) != 3 {
		t.Errorf("prompts/ holds %d entries, want 3 (temporary files left behind?)", len(entries))
	}
}

func TestWriteTemplatePartialConflict(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteTemplate(dir, false, false); err == nil {
		t.Fatal("WriteTemplate overwrote team.yaml")
	}
	if _, err := os.Stat(filepath.Join(dir, "prompts")); !os.IsNotExist(err) {
		t.Errorf("WriteTemplate wrote prompts/ despite refusing: %v", err)
	}
}

// TestRepositoryExampleMatchesTemplate keeps the repository's top-level
// example team in sync with the embedded `batty init` template.
func TestRepositoryExampleMatchesTemplate(t *testing.T) {
	for _, f := range templateFiles {
		embedded, err := templates.ReadFile("templates/" + f)
		if err != nil {
			t.Fatal(err)
		}
		top, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(embedded, top) {
			t.Errorf("../%s differs from team/templates/%s; copy one over the other", f, f)
		}
	}
	all, err := templates.ReadDir("templates/prompts")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(templateFiles)-1 {
		t.Errorf("templates/prompts holds %d files, templateFiles lists %d prompts", len(all), len(templateFiles)-1)
	}
}

func TestRepositoryExampleLoads(t *testing.T) {
	cfg, err := Load(filepath.Join("..", "team.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "demo" || len(cfg.Roles) != 3 {
		t.Errorf("unexpected example team: %+v", cfg)
	}
	for _, r := range cfg.Roles {
		if r.Prompt == "" {
			t.Errorf("role %s has no prompt", r.Name)
		}
	}
}

// TestTemplateWorkspaceExample: the example team uses no worktrees as
// written (it works outside a git repository), and its commented-out
// workspace block and engineer's workspace key, uncommented, load.
func TestTemplateWorkspaceExample(t *testing.T) {
	dir := t.TempDir()
	paths, err := WriteTemplate(dir, false, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if cfg.UsesWorktrees() || cfg.Workspace.Line != 0 {
		t.Fatalf("the example uses worktrees as written: %+v", cfg.Workspace)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(\s*)# ((?:workspace:|  (?:base|verify|setup|verify_timeout|setup_timeout|sandbox):).*)$`)
	on := re.ReplaceAll(data, []byte("$1$2"))
	if n := len(re.FindAll(data, -1)); n != 8 {
		t.Fatalf("found %d commented workspace lines, want 8 (the block and the engineer's key)", n)
	}
	cfg, err = Parse(paths[0], on)
	if err != nil {
		t.Fatalf("uncommented workspace example does not load: %v\n%s", err, on)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	want := WorkspaceSettings{Base: "main", Verify: "go test ./...", Setup: "npm ci", VerifyTimeout: 30 * time.Minute, SetupTimeout: 10 * time.Minute, Line: cfg.Workspace.Line,
		Sandbox: WorkspaceSandbox{Writable: []string{filepath.Join(home, ".cache/go-build"), filepath.Join(home, "go/pkg/mod")}, SetupNetwork: true, Line: cfg.Workspace.Sandbox.Line}}
	if !reflect.DeepEqual(cfg.Workspace, want) || want.Line == 0 || want.Sandbox.Line == 0 {
		t.Errorf("Workspace = %+v, want %+v", cfg.Workspace, want)
	}
	var got []string
	for _, a := range cfg.Agents() {
		got = append(got, a.Name+"="+a.Workspace)
	}
	if w := []string{"architect=shared", "manager=shared", "engineer-1=worktree", "engineer-2=worktree"}; !reflect.DeepEqual(got, w) {
		t.Errorf("agent workspaces = %q, want %q", got, w)
	}
}

// With worktrees, the example gives the engineers (and only them) a git
// worktree each; nothing else in it changes. The roles that plan are
// read-only, the engineers write.
func TestWriteTemplateWithWorktrees(t *testing.T) {
	dir := t.TempDir()
	paths, err := WriteTemplate(dir, false, true)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range cfg.Agents() {
		got = append(got, a.Name+"="+a.Workspace+","+a.Codex.Sandbox)
	}
	if w := []string{"architect=shared,read-only", "manager=shared,read-only", "engineer-1=worktree,workspace-write", "engineer-2=worktree,workspace-write"}; !reflect.DeepEqual(got, w) {
		t.Errorf("agent workspaces and sandboxes = %q, want %q", got, w)
	}
	with, _ := os.ReadFile(paths[0])
	plain, _ := templates.ReadFile("templates/team.yaml")
	if d := len(with) - len(plain); d != 0 || strings.Count(string(with), "workspace: worktree ") != 1 {
		t.Errorf("the file differs by more than the engineer's key (%d bytes)", d)
	}
}
