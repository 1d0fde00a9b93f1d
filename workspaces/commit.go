package workspaces

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/battyhq/batty/textclip"
)

// MaxSubject is the length, in characters, a commit subject is clipped to
// (the "WIP: " prefix included).
const MaxSubject = 72

// TrailerKey is the trailer that names the message a commit answers.
const TrailerKey = "Batty-Message"

// maxMessageID bounds the message id kept in the trailer.
const maxMessageID = 200

// CommitInfo describes the commit of one turn.
type CommitInfo struct {
	Agent     string // whose worktree and branch
	Subject   string // the subject, made one line and clipped (see Commit)
	MessageID string // the message the turn answered: the Batty-Message trailer ("" leaves it out)
	WIP       bool   // work in progress: the subject starts with "WIP: "
	// Archive commits whatever is there, for an archive (Prune with
	// force): a merge left with conflict markers is committed with its
	// markers (as a merge, the subject naming the files), and a
	// cherry-pick or revert in progress is not waited for.
	Archive bool
}

// Committed is what Commit did.
type Committed struct {
	// Head is the branch's head: the new commit, or the one it was when
	// nothing was committed.
	Head string
	// Made: a commit was made.
	Made bool
	// Nested are the repositories nested in the worktree that were left
	// out (paths in the worktree, at most maxNested of them), whether or
	// not a commit was made.
	Nested []string
	// Files are the paths the commit changed (added, modified, deleted;
	// at most MaxFiles of them, in git's order), none when none was made.
	Files []string
}

// MaxFiles bounds how many paths Committed.Files names.
const MaxFiles = 1000

// Commit commits everything that changed in the agent's worktree (git add
// -A, untracked files included, ignored ones not) on its branch, and
// returns the branch's head (Committed). Made is false, and no commit is
// made, when nothing changed. It holds the repository lock.
//
// A repository nested in the worktree (a directory holding a .git
// directory or file, at any depth below the worktree's root, however made)
// is left out, never recorded as a gitlink: git would enter it in every
// later status and diff and run what its configuration says (core.fsmonitor,
// filters) outside the agent's sandbox. Committed.Nested names them, for
// the agent to be told. A gitlink the branch already has (a submodule of
// the project) is kept as it is: what is checked out there is not
// recorded.
//
// The author is "<agent> <agent@batty.invalid>", the committer
// Options.Committer; no user.name needs to be configured. The subject is
// one line: whitespace runs become one space, control characters are
// removed, it is clipped to MaxSubject characters, "WIP: " starts it when
// WIP. The message ends with the trailer "Batty-Message: <id>". No hook
// runs and nothing is signed (Git).
//
// The commit is made with plumbing (ls-files, add, write-tree,
// commit-tree, update-ref from the head it started from): the worktree is
// walked twice (once for nested repositories, once by add); the index is
// left matching the new commit.
//
// It refuses, with an error saying what to do: a worktree that is missing,
// a symbolic link or whose .git file points elsewhere than its
// registration in this repository; a worktree whose HEAD is not the
// agent's branch; a worktree in the middle of a cherry-pick, revert or
// rebase; a worktree in the middle of a merge whose conflicted files
// still hold conflict markers (an *UnresolvedError, the merge and the
// files left as they are); a worktree whose git dir holds an index.lock
// (which it never removes: it cannot tell a running git from a killed
// one).
func (r *Repo) Commit(ctx context.Context, ci CommitInfo) (Committed, error) {
	if err := checkAgent(ci.Agent); err != nil {
		return Committed{}, err
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return Committed{}, err
	}
	defer unlock()
	return r.commitLocked(ctx, ci)
}

// commitLocked is Commit with the repository lock held.
func (r *Repo) commitLocked(ctx context.Context, ci CommitInfo) (Committed, error) {
	wt, exists, err := r.lookup(ci.Agent)
	if err != nil {
		return Committed{}, fmt.Errorf("commit: %w", err)
	}
	if !exists {
		return Committed{}, fmt.Errorf("commit: %s has no worktree at %s", ci.Agent, r.Path(ci.Agent))
	}
	if err := checkHead(wt); err != nil {
		return Committed{}, fmt.Errorf("commit: %w", err)
	}
	if err := checkIndexLock(wt); err != nil {
		return Committed{}, fmt.Errorf("commit: %w", err)
	}
	if !ci.Archive {
		if err := checkNoOperation(wt); err != nil {
			return Committed{}, fmt.Errorf("commit: %w", err)
		}
	}
	g := r.wtGit(wt,
		"GIT_AUTHOR_NAME="+ci.Agent, "GIT_AUTHOR_EMAIL="+ci.Agent+"@batty.invalid",
		"GIT_COMMITTER_NAME="+r.committer.name, "GIT_COMMITTER_EMAIL="+r.committer.email)
	fail := func(err error) (Committed, error) {
		return Committed{}, fmt.Errorf("commit the work of %s: %w", ci.Agent, err)
	}
	// Plumbing, so that the worktree is scanned once (by add): the index
	// add leaves is the tree to commit.
	out, err := g.Run(ctx, "rev-parse", "HEAD^{commit}", "HEAD^{tree}")
	if err != nil {
		return fail(err)
	}
	head, headTree, _ := strings.Cut(strings.TrimSpace(out), "\n")
	// A merge of the base that MergeBase left for the agent is completed
	// by this commit once no conflict marker is left, never before.
	merging, err := mergeHead(wt)
	if err != nil {
		return fail(err)
	}
	if merging != "" {
		left, err := r.unresolved(ctx, g, wt)
		if err != nil {
			return fail(err)
		}
		switch {
		case len(left) > 0 && ci.Archive:
			ci.Subject += ", conflict markers in " + strings.Join(clipList(left, maxNested), ", ")
		case len(left) > 0:
			return Committed{}, fmt.Errorf("commit the work of %s: %w", ci.Agent, &UnresolvedError{Files: clipList(left, MaxUnresolved), Total: len(left)})
		}
	}
	nested, gitlinks, err := nestedRepos(ctx, g)
	if err != nil {
		return fail(err)
	}
	if _, err := g.RunInput(ctx, addPathspecs(nested, gitlinks), "add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
		return fail(err)
	}
	if out, err = g.Run(ctx, "write-tree"); err != nil {
		return fail(err)
	}
	tree := strings.TrimSpace(out)
	if tree == headTree && merging == "" {
		return Committed{Head: head, Nested: clipList(nested, maxNested)}, nil
	}
	msg := commitMessage(ci.Subject, ci.Agent, ci.MessageID, ci.WIP)
	parents := []string{"-p", head}
	if merging != "" {
		parents = append(parents, "-p", merging)
	}
	args := append(append([]string{"commit-tree", "--no-gpg-sign"}, parents...), "-F", "-", tree)
	if out, err = g.RunInput(ctx, msg, args...); err != nil {
		return fail(err)
	}
	sha := strings.TrimSpace(out)
	// What it changed, tree against tree: no walk of the worktree.
	files, err := changedFiles(ctx, g, headTree, tree)
	if err != nil {
		return fail(err)
	}
	// Only from head: a branch that moved meanwhile is not overwritten.
	subject, _, _ := strings.Cut(msg, "\n")
	if _, err := g.Run(ctx, "update-ref", "-m", "commit: "+subject, branchRef(ci.Agent), sha, head); err != nil {
		return fail(err)
	}
	if merging != "" {
		// The merge is committed: git forgets it, the files as they are.
		if _, err := g.Run(ctx, "merge", "--quit"); err != nil {
			return fail(err)
		}
	}
	return Committed{Head: sha, Made: true, Nested: clipList(nested, maxNested), Files: files}, nil
}

// changedFiles lists the paths that differ between trees from and to (at
// most MaxFiles), as git diff-tree names them, without rename detection.
func changedFiles(ctx context.Context, g Git, from, to string) ([]string, error) {
	out, err := g.Run(ctx, "diff-tree", "-r", "--name-only", "--no-renames", "-z", from, to)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f == "" {
			continue
		}
		if len(files) == MaxFiles {
			break
		}
		files = append(files, f)
	}
	return files, nil
}

// maxNested bounds how many nested repositories Committed.Nested names.
const maxNested = 100

// nestedRepos lists, in the worktree g runs in, the repositories nested
// in it that git would record as gitlinks: untracked directories holding
// a .git directory or file (at any depth, however their .git is made),
// and the gitlinks the index already has (a submodule of the project).
// Their paths are relative to the worktree. It is one git ls-files (one
// walk of the tree), its output streamed, the files in it dropped.
func nestedRepos(ctx context.Context, g Git) (nested, gitlinks []string, err error) {
	l := &nulList{each: func(entry string) {
		switch kind, path := lsEntry(entry); kind {
		case entryNested:
			nested = append(nested, path)
		case entryGitlink:
			gitlinks = append(gitlinks, path)
		}
	}}
	if err := g.RunTo(ctx, l, "ls-files", "-z", "--stage", "--others", "--exclude-standard"); err != nil {
		return nil, nil, fmt.Errorf("look for nested repositories: %w", err)
	}
	if err := l.err(); err != nil {
		return nil, nil, fmt.Errorf("look for nested repositories: %w", err)
	}
	return nested, gitlinks, nil
}

// The kinds of lsEntry.
const (
	entryOther   = iota // a file, tracked or not
	entryNested         // an untracked nested repository
	entryGitlink        // a gitlink of the index
)

// lsEntry says what an entry of git ls-files -z --stage --others is, and
// its path: "<path>/" is an untracked nested repository (with --others
// and no --directory, only a nested repository is listed as a directory,
// and no index entry ends with a slash); "160000 <object> <stage>\t<path>"
// a gitlink of the index; anything else a file. It is a pure function.
func lsEntry(entry string) (kind int, path string) {
	if p, ok := strings.CutSuffix(entry, "/"); ok {
		return entryNested, p
	}
	info, path, ok := strings.Cut(entry, "\t")
	f := strings.Fields(info)
	if ok && len(f) == 3 && f[0] == "160000" && validCommit(f[1]) && len(f[2]) == 1 && path != "" {
		return entryGitlink, path
	}
	return entryOther, ""
}

// clipList returns the first max of list.
func clipList(list []string, max int) []string {
	if len(list) > max {
		return list[:max]
	}
	return list
}

// addPathspecs is the input of Commit's git add --pathspec-from-file
// --pathspec-file-nul: the whole worktree but the nested repositories and
// the gitlinks, each excluded as a literal path. It is a pure function.
func addPathspecs(nested, gitlinks []string) string {
	var b strings.Builder
	b.WriteString(".\x00")
	for _, p := range append(append([]string(nil), nested...), gitlinks...) {
		b.WriteString(":(exclude,literal)" + p + "\x00")
	}
	return b.String()
}

// nulList is an io.Writer that reads NUL-terminated entries and hands
// each to each. What does not end with a NUL when the writing is over is
// an error (err).
type nulList struct {
	each func(entry string)
	rest []byte
}

func (l *nulList) Write(b []byte) (int, error) {
	n := len(b)
	for {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			l.rest = append(l.rest, b...)
			return n, nil
		}
		entry := string(append(l.rest, b[:i]...))
		l.rest, b = l.rest[:0], b[i+1:]
		l.each(entry)
	}
}

// err reports an unterminated last entry.
func (l *nulList) err() error {
	if len(l.rest) > 0 {
		return fmt.Errorf("unterminated entry %q", textclip.Bytes(string(l.rest), 200, "…"))
	}
	return nil
}

// checkNoOperation refuses a worktree in the middle of a cherry-pick,
// revert or rebase the agent started: a commit of it would not be what
// that operation makes. A merge is committed as one (see mergeHead).
func checkNoOperation(wt worktree) error {
	for _, name := range []string{"CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply"} {
		p := filepath.Join(wt.admin, name)
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("the worktree %s is in the middle of a git operation (%s exists): finish or abort it there first", wt.path, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("check %s: %w", p, err)
		}
	}
	return nil
}

// mergeHead returns the commit being merged into the worktree (its
// MERGE_HEAD: one commit, as MergeBase leaves), "" when no merge is in
// progress.
func mergeHead(wt worktree) (string, error) {
	b, err := readSmall(filepath.Join(wt.admin, "MERGE_HEAD"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the merge in progress: %w", err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != 1 || !validCommit(fields[0]) {
		return "", fmt.Errorf("the worktree %s is merging %d commits (%s): finish or abort that merge there first", wt.path, len(fields), filepath.Join(wt.admin, "MERGE_HEAD"))
	}
	return fields[0], nil
}

// validCommit reports whether s looks like a full commit id (SHA-1 or
// SHA-256, lower-case hex).
func validCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// commitMessage returns the message of a commit batty makes for agent:
// the subject (oneLine, "WIP: " first when wip, clipped to MaxSubject
// characters; "Turn of <agent>" when empty) and, when id is not empty
// after cleaning, a blank line and the trailer "Batty-Message: <id>".
func commitMessage(subject, agent, id string, wip bool) string {
	s := oneLine(subject)
	if s == "" {
		s = "Turn of " + agent
	}
	if wip {
		s = "WIP: " + s
	}
	s = textclip.Runes(s, MaxSubject, textclip.Ellipsis)
	if id = textclip.Bytes(oneLine(id), maxMessageID, ""); id != "" {
		s += "\n\n" + TrailerKey + ": " + id
	}
	return s + "\n"
}

// oneLine makes s one line of text: invalid UTF-8 becomes U+FFFD, each run
// of white space (line breaks included) one space, control characters and
// invisible format characters (bidirectional controls, zero-width ones)
// are removed, and the ends are trimmed.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, string(utf8.RuneError)) {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
