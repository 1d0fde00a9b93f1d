package project

import "path/filepath"

// StateDirOf returns the state directory (a directory named DirName) that
// path lies inside, "" when none: the outermost one, so that its parent is
// the project whose agents may have written what is there (an agent's
// worktree is .batty/worktrees/<agent>). The project's own team file kept
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
