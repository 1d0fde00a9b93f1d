package workspaces

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ErrUnresolved is wrapped by Commit's error while a merge MergeBase left
// in the worktree still has conflict markers: nothing is committed (the
// files stay as they are, the merge in progress) until the agent has
// resolved them. The error is an *UnresolvedError (see Unresolved).
var ErrUnresolved = errors.New("unresolved merge conflicts")

// MaxUnresolved bounds the files an UnresolvedError names.
const MaxUnresolved = 100

// UnresolvedError is Commit's refusal of a worktree whose merge in
// progress still has conflict markers. It wraps ErrUnresolved.
type UnresolvedError struct {
	// Files are the conflicted paths that still hold a marker line, in
	// the worktree, at most MaxUnresolved of them (Total counts them all).
	// They are named by the agent's files: hostile text.
	Files []string
	Total int
}

func (e *UnresolvedError) Error() string {
	s := ErrUnresolved.Error() + ": conflict markers left in " + strings.Join(e.Files, ", ")
	if more := e.Total - len(e.Files); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

func (e *UnresolvedError) Unwrap() error { return ErrUnresolved }

// Unresolved returns the files of err when it is a commit refused for a
// merge left with conflict markers (an *UnresolvedError in its chain),
// nil for any other error or none. It decides, for every commit batty
// makes of a worktree (after a turn, of what an earlier run left), that
// such a refusal is no failure: the merge stays in progress for the agent
// to finish, and the agent is reminded of these files. It is a pure
// function.
func Unresolved(err error) []string {
	var ue *UnresolvedError
	if errors.As(err, &ue) && len(ue.Files) > 0 {
		return ue.Files
	}
	return nil
}

// maxMarkerScan bounds how much of a conflicted file is searched for
// markers.
const maxMarkerScan = 8 << 20

// unresolved returns the conflicted paths of the merge in progress in wt
// that still hold a conflict marker line.
func (r *Repo) unresolved(ctx context.Context, g Git, wt worktree) ([]string, error) {
	out, err := g.Run(ctx, "diff", "--name-only", "-z", "--diff-filter=U", "--no-ext-diff")
	if err != nil {
		return nil, fmt.Errorf("list the conflicts: %w", err)
	}
	var left []string
	for _, p := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
		if p == "" {
			continue
		}
		marked, err := hasMarkers(filepath.Join(wt.path, p))
		if err != nil {
			return nil, err
		}
		if marked {
			left = append(left, p)
		}
	}
	return left, nil
}

// hasMarkers reports whether the regular file at path holds a line that is
// a conflict marker (<<<<<<< , =======, >>>>>>> ). A file that is gone or
// not a regular file holds none.
func hasMarkers(path string) (bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return markerIn(io.LimitReader(f, maxMarkerScan)), nil
}

// markerIn reports whether r holds a conflict marker line. It is pure on
// its input.
func markerIn(r io.Reader) bool {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		l := bytes.TrimRight(sc.Bytes(), "\r")
		if bytes.HasPrefix(l, []byte("<<<<<<< ")) || bytes.HasPrefix(l, []byte(">>>>>>> ")) || bytes.Equal(l, []byte("=======")) {
			return true
		}
	}
	return false
}
