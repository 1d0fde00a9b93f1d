package orchestrator

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/battyhq/batty/protect"
	"github.com/battyhq/batty/team"
)

func TestAnchoredIn(t *testing.T) {
	for _, tc := range []struct{ top, file, want string }{
		{"/repo", "/repo/team.yaml", "/team.yaml"},
		{"/repo", "/repo/sub/prompts/eng.md", "/sub/prompts/eng.md"},
		{"/repo", "/elsewhere/eng.md", ""},
		{"/repo", "/repo", ""},
		{"/repo", "/repo-2/x.md", ""},
		{"/repo", "/repo/prompts/[eng].md", ""},
		{"/repo", "", ""},
	} {
		if got := anchoredIn(tc.top, tc.file); got != tc.want {
			t.Errorf("anchoredIn(%q, %q) = %q, want %q", tc.top, tc.file, got, tc.want)
		}
	}
}

// The team file and the prompts in the repository are protected with the
// team's own patterns, all valid patterns.
func TestProtectedPaths(t *testing.T) {
	top := t.TempDir()
	if err := os.MkdirAll(filepath.Join(top, "team", "prompts"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := &team.Config{Path: filepath.Join(top, "team", "team.yaml"),
		Workspace: team.WorkspaceSettings{Protected: []string{"deploy/"}},
		Roles:     []team.Role{{Name: "eng", Prompt: filepath.Join(top, "team", "prompts", "eng.md")}, {Name: "x"}, {Name: "y", Prompt: "/outside/y.md"}}}
	got := protectedPaths(cfg, top)
	if want := []string{"deploy/", "/team/team.yaml", "/team/prompts/eng.md"}; !slices.Equal(got, want) {
		t.Fatalf("protectedPaths = %q, want %q", got, want)
	}
	if _, err := protect.Compile(got); err != nil {
		t.Fatal(err)
	}
}
