package protect

import (
	"strings"
	"testing"
)

func TestDefaultsMatch(t *testing.T) {
	s, err := Compile(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{".github/workflows/x.yml", true},
		{".github/actions/setup/action.yml", true},
		{".github", true}, // a link standing in for the directory
		{".envrc", true},
		{"sub/dir/.envrc", true}, // direnv loads it on cd into sub/dir
		{"svc/AGENTS.md", true},  // Codex reads it in every directory
		{".codex/config.toml", true},
		{"pkg/.codex/config.toml", true}, // nested project config
		{".agents/skills/x/SKILL.md", true},
		{".vscode/tasks.json", true},
		{"my.code-workspace", true},
		{".devcontainer/devcontainer.json", true},
		{".husky/pre-commit", true},
		{".githooks/post-checkout", true},
		{".pre-commit-config.yaml", true},
		{"lefthook.yml", true},
		{"web/.gitattributes", true},
		{".gitmodules", true},
		{".mcp.json", true},
		{"mise.toml", true},
		{"mise.local.toml", true},
		{".batty/team.yaml", true},
		{"team.yaml", true},
		// Case, macOS's ignored code points and Windows's trailing dots.
		{".GitHub/Workflows/x.yml", true},
		{".ENVRC", true},
		{".g\u200cithub/workflows/x.yml", true},
		{".env\u200d\u200crc", true},
		{".envrc.", true},
		{".vscode ./tasks.json", true},
		{"AGENTS.MD", true},
		// Ordinary work.
		{"main.go", false},
		{"docs/github.md", false},
		{"src/.github.go", false},
		{"envrc", false},
		{"x.envrc", false},
		{"pkg/team.yaml", false}, // only the project's own
		{"agents.go", false},
		{"Makefile", false},
		{"package.json", false},
		{"README.md", false},
		{".gitignore", false},
		{"", false},
	} {
		if got := s.Match(tc.path); got != tc.want {
			t.Errorf("Match(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

func TestPatternSemantics(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"secrets/", "secrets/a", true},
		{"secrets/", "x/secrets/a", true}, // no inner slash: any depth
		{"secrets/", "secrets", true},
		{"/secrets/", "x/secrets/a", false}, // anchored
		{"/secrets/", "secrets/a/b", true},
		{"ci/deploy/", "ci/deploy/run.sh", true},
		{"ci/deploy/", "x/ci/deploy/run.sh", false}, // inner slash anchors
		{"ci/deploy/", "ci", true},                  // a link in place of ci/
		{"ci/deploy/", "ci/other.sh", false},
		{"ci/deploy", "ci/deploy", true},
		{"*.sh", "tools/run.sh", true},
		{"*.sh", "tools/run.shx", false},
		{"run-[0-9].sh", "run-7.sh", true},
		{"Deploy.SH", "deploy.sh", true},
	} {
		s, err := Compile([]string{tc.pattern})
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		if got := s.Match(tc.path); got != tc.want {
			t.Errorf("%q Match(%q) = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		{"", "empty"},
		{"  ", "empty"},
		{"/", "whole repository"},
		{"a//b", `"//"`},
		{"../x", `".."`},
		{"./x", `"."`},
		{"a/**/b", `"**"`},
		{`a\b`, `"\"`},
		{"[x", "syntax error"},
		{"a\nb", "control character"},
		{"\xff", "UTF-8"},
		{strings.Repeat("a", MaxPattern+1), "longer"},
	} {
		err := Check(tc.pattern)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%q) = %v, want an error with %q", tc.pattern, err, tc.want)
		}
	}
	if _, err := Compile([]string{"ok/", "[x"}); err == nil || !strings.Contains(err.Error(), `"[x"`) {
		t.Errorf("Compile names the bad pattern: %v", err)
	}
	var zero Set
	if zero.Match(".envrc") {
		t.Error("the zero Set matches")
	}
}

func TestDefaultsAreValid(t *testing.T) {
	for _, p := range Defaults() {
		if err := Check(p); err != nil {
			t.Errorf("default %q: %v", p, err)
		}
	}
	d := Defaults()
	d[0] = "changed"
	if Defaults()[0] == "changed" {
		t.Error("Defaults shares its slice")
	}
}
