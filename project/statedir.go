package project

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// StateDirOf returns the project's own directory of batty's (a directory
// named DirName) that path lies inside, "" when none: the outermost one,
// so that its parent is the project whose agents may have written what is
// there (an earlier batty kept an agent's worktree in
// .batty/worktrees/<agent>, a host kept its clones under .batty). The project's own team file kept
// in its state directory, <project>/.batty/team.yaml (a file directly in
// the outermost .batty), is not inside. path is made absolute by the
// caller; it is cleaned here, so ".." is taken as written (resolve
// symbolic links first, filepath.EvalSymlinks, to judge where a file
// really is). It is a pure function.
func StateDirOf(path string) string {
	path = filepath.Clean(path)
	dir := filepath.Dir(path)
	state := ""
	for d := dir; ; {
		if filepath.Base(d) == DirName {
			state = d // the outermost wins: keep going up
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if state == "" || state == dir {
		return ""
	}
	return state
}

// StateDirIn returns the state directory (<home>/projects/<key>) that path
// lies inside, for the first of homes (state homes, see StateHomes) that
// holds path: an agent's worktree is <state>/worktrees/<agent>, so a file
// there may be the agent's. A path inside a home but in no project's state
// directory returns the home. "" when path is in none of homes. path is
// made absolute by the caller and cleaned here, as StateDirOf does. Pure.
func StateDirIn(path string, homes []string) string {
	path = filepath.Clean(path)
	for _, home := range homes {
		if home == "" || !filepath.IsAbs(home) {
			continue
		}
		home = filepath.Clean(home)
		rel, err := filepath.Rel(home, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		parts := strings.Split(rel, string(filepath.Separator))
		if len(parts) > 2 && parts[0] == ProjectsDir {
			return filepath.Join(home, ProjectsDir, parts[1])
		}
		return home
	}
	return ""
}

// StateHomes are the state homes a path is checked against before a file
// found there is trusted (StateDirIn): StateHome, and the default one under
// the home directory (HomeStateDir, where another host keeps its state)
// when the environment names another. Those that cannot be told are left
// out.
func StateHomes() []string {
	var homes []string
	if h, err := StateHome(); err == nil {
		homes = append(homes, h)
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		if d := filepath.Join(home, HomeStateDir); len(homes) == 0 || homes[0] != d {
			homes = append(homes, d)
		}
	}
	return homes
}

// RealPath is path with the symbolic links of its longest existing
// ancestor resolved and the rest joined as written (a state directory
// may not exist yet), to judge where it really is; an error when nothing
// of it exists.
func RealPath(path string) (string, error) {
	var rest []string
	for p := path; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if filepath.Dir(p) == p {
			return "", fmt.Errorf("resolve %s: nothing of it exists", path)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}
