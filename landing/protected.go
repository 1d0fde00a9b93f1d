package landing

import (
	"bytes"
	"context"
	"fmt"

	"github.com/battyhq/batty/protect"
)

// Protected paths (package protect): a landing whose merge changes a path
// that tools run or obey by themselves once it reaches a checkout (.codex/,
// .github/, .envrc, hook directories …: protect.Defaults and the team's
// workspace.protected) waits for the human's review once verified, as if
// it had asked for review, whatever workspace.review says; the human's own
// `batty merge` too, since the human has not read what the agent wrote.
// What counts is exactly what the landing would bring to base: the paths
// whose entry differs between base's tip and the merge commit (a file's
// content or mode, a link, a submodule's commit; added or deleted), listed
// by git's plumbing, which no diff configuration changes.

// MaxProtected bounds the protected paths a request records (its
// ProtectedTotal counts them all).
const MaxProtected = 20

// maxScanPath bounds a path the scan keeps in memory; a longer one (git
// prints no such path for a checkout that exists, but a tree may hold
// one) counts as protected, its name clipped.
const maxScanPath = 16 << 10

// protectedChanges lists the protected paths whose entry differs between
// commits base and merged (at most MaxProtected of them, cleaned and
// clipped) and counts them all.
func (q *Queue) protectedChanges(ctx context.Context, base, merged string) ([]string, int, error) {
	scan := &protectedScan{set: q.protected}
	// diff-tree is plumbing: neither diff.* configuration nor .gitmodules
	// hides an entry from it; -z prints names as they are.
	err := q.gitIn(q.opt.TopLevel).RunTo(ctx, scan, "diff-tree", "-r", "-z", "--name-only", "--no-renames", "--no-commit-id", base, merged)
	if err != nil {
		return nil, 0, fmt.Errorf("list the paths %s changes: %w", short(merged), err)
	}
	scan.end()
	return scan.paths, scan.total, nil
}

// protectedScan reads NUL-separated paths as git writes them and keeps the
// protected ones; it holds at most one path (maxScanPath) in memory.
type protectedScan struct {
	set   protect.Set
	buf   []byte
	long  bool // the path being read is longer than maxScanPath
	paths []string
	total int
}

// Write takes the next part of git's output; it never fails.
func (s *protectedScan) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, 0)
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if room := maxScanPath - len(s.buf); len(part) > room {
			s.buf, s.long = append(s.buf, part[:max(room, 0)]...), true
		} else {
			s.buf = append(s.buf, part...)
		}
		if i < 0 {
			break
		}
		s.path()
		p = p[i+1:]
	}
	return n, nil
}

// end takes a last path not ended by a NUL.
func (s *protectedScan) end() {
	if len(s.buf) > 0 || s.long {
		s.path()
	}
}

// path decides the path read into s.buf.
func (s *protectedScan) path() {
	p := string(s.buf)
	if s.long || s.set.Match(p) {
		s.total++
		if len(s.paths) < MaxProtected {
			s.paths = append(s.paths, clipText(p, maxPathLen))
		}
	}
	s.buf, s.long = s.buf[:0], false
}
