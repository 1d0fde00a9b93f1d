package workspaces

import (
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
}

// Commit commits everything that changed in the agent's worktree (git add
// -A, untracked files included, ignored ones not) on its branch, and
// returns the branch's head. committed is false, and no commit is made,
// when nothing changed. It holds the repository lock.
//
// The author is "<agent> <agent@batty.invalid>", the committer
// Options.Committer; no user.name needs to be configured. The subject is
// one line: whitespace runs become one space, control characters are
// removed, it is clipped to MaxSubject characters, "WIP: " starts it when
// WIP. The message ends with the trailer "Batty-Message: <id>". No hook
// runs (core.hooksPath=/dev/null, --no-verify) and nothing is signed.
//
// The commit is made with plumbing (add, write-tree, commit-tree,
// update-ref from the head it started from), so the worktree is scanned
// once; the index is left matching the new commit.
//
// It refuses, with an error saying what to do: a worktree that is missing,
// a symbolic link or whose .git file points elsewhere than its
// registration in this repository; a worktree whose HEAD is not the
// agent's branch; a worktree in the middle of a merge, cherry-pick, revert
// or rebase; a worktree whose git dir holds an index.lock (which it never
// removes: it cannot tell a running git from a killed one).
func (r *Repo) Commit(ctx context.Context, ci CommitInfo) (sha string, committed bool, err error) {
	if err := checkAgent(ci.Agent); err != nil {
		return "", false, err
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return "", false, err
	}
	defer unlock()
	return r.commitLocked(ctx, ci)
}

// commitLocked is Commit with the repository lock held.
func (r *Repo) commitLocked(ctx context.Context, ci CommitInfo) (string, bool, error) {
	wt, exists, err := r.lookup(ci.Agent)
	if err != nil {
		return "", false, fmt.Errorf("commit: %w", err)
	}
	if !exists {
		return "", false, fmt.Errorf("commit: %s has no worktree at %s", ci.Agent, r.Path(ci.Agent))
	}
	if err := checkHead(wt); err != nil {
		return "", false, fmt.Errorf("commit: %w", err)
	}
	if err := checkIndexLock(wt); err != nil {
		return "", false, fmt.Errorf("commit: %w", err)
	}
	if err := checkNoOperation(wt); err != nil {
		return "", false, fmt.Errorf("commit: %w", err)
	}
	g := r.wtGit(wt,
		"GIT_AUTHOR_NAME="+ci.Agent, "GIT_AUTHOR_EMAIL="+ci.Agent+"@batty.invalid",
		"GIT_COMMITTER_NAME="+r.committer.name, "GIT_COMMITTER_EMAIL="+r.committer.email)
	fail := func(err error) (string, bool, error) {
		return "", false, fmt.Errorf("commit the work of %s: %w", ci.Agent, err)
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
		if len(left) > 0 {
			return "", false, fmt.Errorf("commit the work of %s: %w: conflict markers left in %s", ci.Agent, ErrUnresolved, strings.Join(left, ", "))
		}
	}
	if _, err := g.Run(ctx, withNoHooks("add", "--all")...); err != nil {
		return fail(err)
	}
	if out, err = g.Run(ctx, "write-tree"); err != nil {
		return fail(err)
	}
	tree := strings.TrimSpace(out)
	if tree == headTree && merging == "" {
		return head, false, nil
	}
	msg := commitMessage(ci.Subject, ci.Agent, ci.MessageID, ci.WIP)
	parents := []string{"-p", head}
	if merging != "" {
		parents = append(parents, "-p", merging)
	}
	args := append(append([]string{"commit-tree", "--no-gpg-sign"}, parents...), "-F", "-", tree)
	if out, err = g.RunInput(ctx, msg, withNoHooks(args...)...); err != nil {
		return fail(err)
	}
	sha := strings.TrimSpace(out)
	// Only from head: a branch that moved meanwhile is not overwritten.
	subject, _, _ := strings.Cut(msg, "\n")
	if _, err := g.Run(ctx, withNoHooks("update-ref", "-m", "commit: "+subject, branchRef(ci.Agent), sha, head)...); err != nil {
		return fail(err)
	}
	if merging != "" {
		// The merge is committed: git forgets it, the files as they are.
		if _, err := g.Run(ctx, withNoHooks("merge", "--quit")...); err != nil {
			return fail(err)
		}
	}
	return sha, true, nil
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
