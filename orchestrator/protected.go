package orchestrator

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/battyhq/batty/team"
)

// protectedPaths are the path patterns the merge queue protects besides
// protect.Defaults: the team's workspace.protected, and the team file and
// the roles' prompt files where they are in the repository whose top
// level is top (an agent's branch that changed them would change what the
// whole team is told, or runs, at its next start). A path is taken with
// its links resolved when it can be.
func protectedPaths(cfg *team.Config, top string) []string {
	out := slices.Clone(cfg.Workspace.Protected)
	files := []string{cfg.Path}
	for _, r := range cfg.Roles {
		files = append(files, r.Prompt)
	}
	top = resolved(top)
	for _, f := range files {
		if p := anchoredIn(top, resolved(f)); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// anchoredIn is file as an anchored protected pattern of the repository
// whose top level is top ("/dir/file"), "" when file is not below top or
// its name holds a character patterns give a meaning to. It is a pure
// function.
func anchoredIn(top, file string) string {
	if file == "" || top == "" {
		return ""
	}
	rel, err := filepath.Rel(top, file)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return ""
	}
	rel = filepath.ToSlash(rel)
	if strings.ContainsAny(rel, `*?[\`) {
		// Such a name would be read as a pattern; the file is left to
		// workspace.protected.
		return ""
	}
	return "/" + rel
}

// resolved is p with its links resolved, p itself when that fails.
func resolved(p string) string {
	if p == "" {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
