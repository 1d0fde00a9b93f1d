// Package clones keeps a worktree agent's workspace on another host: a
// clone of the project's repository there (a worktree of one repository
// per host and project), whose commits come
// back into the agent's branch here, so that the merge queue lands them as
// it lands local work. The repository and its worktrees live in the
// project's state directory there (hosts.StateDir), out of the project
// directory there, which an agent working in the project there may
// write. Nothing relies on a shared filesystem: each
// operation is one run of `batty clone-host` on the host over the host's
// transport (the same connection as the agent's shim), a request and an
// answer, each a JSON line followed by a git bundle when there are commits
// to carry.
//
// Client is the daemon's end, a workspaces.Workspace; Serve is the host's.
package clones

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/workspaces"
)

// Operations a Request asks for.
const (
	OpTips    = "tips"    // nothing but the answer's tips
	OpPrepare = "prepare" // workspaces.Workspace.Prepare
	OpCommit  = "commit"
	OpMerge   = "merge" // merge the base into the branch
	OpState   = "state"
	// OpRelease commits the clone's uncommitted work (Force) or refuses
	// it (ErrUnlanded); OpPrune removes the clone's worktree and branch.
	OpRelease = "release"
	OpPrune   = "prune"
)

// maxHeader bounds a request's or answer's JSON line.
const maxHeader = 1 << 20

// answerMark starts the answer's line, so that what a login shell prints
// on the host before it is skipped.
const answerMark = "batty-clone "

// Request is what the daemon asks the host, then BundleSize bytes of a
// git bundle.
type Request struct {
	Op    string `json:"op"`
	Agent string `json:"agent"`
	Base  string `json:"base"`
	// Base and Branch are the commits of the base branch and of the
	// agent's branch here ("" when none): set on the host (the base
	// always; the branch when the host has none, else merged into it).
	// Their objects are in the bundle, or on the host already.
	BaseCommit   string `json:"base_commit,omitempty"`
	BranchCommit string `json:"branch_commit,omitempty"`
	BundleSize   int64  `json:"bundle_size,omitempty"`
	// Haves are commits here: the answer's bundle leaves them out.
	Haves []string `json:"haves,omitempty"`

	Commit       *workspaces.CommitInfo `json:"commit,omitempty"`
	Setup        string                 `json:"setup,omitempty"`
	SetupTimeout time.Duration          `json:"setup_timeout,omitempty"`
	// SetupSandbox is how Setup runs in Codex's sandbox on the host, as
	// the host sees it (hosts.SandboxThere; its Homes chosen there); nil
	// runs it without one (workspace.sandbox: off).
	SetupSandbox *sandbox.Policy `json:"setup_sandbox,omitempty"`
	GitTimeout   time.Duration   `json:"git_timeout,omitempty"`
	MinFree      uint64          `json:"min_free,omitempty"`
	Force        bool            `json:"force,omitempty"`
}

// Answer is the host's answer, then BundleSize bytes of a git bundle of
// the agent's branch there.
type Answer struct {
	// BaseCommit and BranchCommit are the host's after the operation.
	BaseCommit   string `json:"base_commit,omitempty"`
	BranchCommit string `json:"branch_commit,omitempty"`
	BundleSize   int64  `json:"bundle_size,omitempty"`

	Exists bool   `json:"exists"` // the worktree exists there
	Dirty  int    `json:"dirty"`  // its uncommitted paths
	Path   string `json:"path,omitempty"`

	Prepared  *workspaces.Prepared `json:"prepared,omitempty"`
	Committed bool                 `json:"committed,omitempty"`
	// Nested are the repositories nested in the worktree that the commit
	// left out (workspaces.Committed.Nested).
	Nested []string `json:"nested,omitempty"`
	// Files are the paths the commit changed (workspaces.Committed.Files).
	Files []string               `json:"files,omitempty"`
	Merge *workspaces.SyncResult `json:"merge,omitempty"`
	// Merged is the merge of the branch here into the host's (prepare).
	Merged *workspaces.SyncResult `json:"merged,omitempty"`
	// Pruned: the clone's worktree or branch was removed (prune).
	Pruned bool `json:"pruned,omitempty"`
	// OldClone is the agent's clone an earlier batty kept in the project
	// directory there (<project>/.batty/worktrees/<agent>), when it is
	// still there: no longer used or read (see Serve).
	OldClone string `json:"old_clone,omitempty"`

	Failure *Failure `json:"failure,omitempty"`
}

// Failure is an operation that failed on the host.
type Failure struct {
	Kind    string `json:"kind"` // "setup", "low_disk", "unlanded", "no_git", "unresolved" or "" for another
	Message string `json:"message"`
	Output  string `json:"output,omitempty"` // a setup's output
	// Files are an unresolved merge's files (workspaces.UnresolvedError).
	Files []string `json:"files,omitempty"`
	Total int      `json:"total,omitempty"`
}

// Failure kinds.
const (
	FailSetup    = "setup"
	FailLowDisk  = "low_disk"
	FailUnlanded = "unlanded"
	FailNoGit    = "no_git"
	// FailUnresolved: a commit refused for a merge left with conflict
	// markers (workspaces.Unresolved).
	FailUnresolved = "unresolved"
)

// failureOf is err as an Answer carries it. Pure.
func failureOf(err error) *Failure {
	var se *workspaces.SetupError
	switch {
	case errors.As(err, &se):
		return &Failure{Kind: FailSetup, Message: se.Err.Error(), Output: se.Output}
	case errors.Is(err, workspaces.ErrLowDisk):
		return &Failure{Kind: FailLowDisk, Message: err.Error()}
	case errors.Is(err, workspaces.ErrUnlanded):
		return &Failure{Kind: FailUnlanded, Message: err.Error()}
	case workspaces.Unresolved(err) != nil:
		var ue *workspaces.UnresolvedError
		errors.As(err, &ue)
		return &Failure{Kind: FailUnresolved, Message: err.Error(), Files: ue.Files, Total: ue.Total}
	}
	return &Failure{Message: err.Error()}
}

// Err is the failure as the error the host's workspace returned: a
// *workspaces.SetupError, ErrLowDisk, ErrUnlanded, ErrNoGit, a
// *workspaces.UnresolvedError (its files at most
// workspaces.MaxUnresolved), or another error; hostName names the host.
func (f *Failure) Err(hostName string) error {
	switch f.Kind {
	case FailUnresolved:
		files := f.Files
		if len(files) > workspaces.MaxUnresolved {
			files = files[:workspaces.MaxUnresolved]
		}
		return fmt.Errorf("on host %s: %w", hostName, &workspaces.UnresolvedError{Files: files, Total: max(f.Total, len(files))})
	case FailSetup:
		return &workspaces.SetupError{Err: fmt.Errorf("on host %s: %s", hostName, f.Message), Output: f.Output}
	case FailLowDisk:
		return fmt.Errorf("%w: on host %s: %s", workspaces.ErrLowDisk, hostName, f.Message)
	case FailUnlanded:
		return fmt.Errorf("%w: on host %s: %s", workspaces.ErrUnlanded, hostName, f.Message)
	case FailNoGit:
		return fmt.Errorf("%w: on host %s: %s", ErrNoGit, hostName, f.Message)
	}
	return fmt.Errorf("on host %s: %s", hostName, f.Message)
}

// ErrNoGit is in the chain of an error of a host without git.
var ErrNoGit = errors.New("no git on the host")

// writeLine writes v as one JSON line after prefix.
func writeLine(w io.Writer, prefix string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(append([]byte(prefix), b...), '\n'))
	return err
}

// readLine reads one line of at most maxHeader bytes (its newline
// dropped) from br.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxHeader {
			return nil, fmt.Errorf("a line longer than %d bytes", maxHeader)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, fmt.Errorf("the stream ended inside a line: %w", io.ErrUnexpectedEOF)
		}
		return nil, err
	}
}

// readRequest reads a request's line from br. It never panics on bad
// input.
func readRequest(br *bufio.Reader) (Request, error) {
	line, err := readLine(br)
	if err != nil {
		return Request{}, fmt.Errorf("read the request: %w", err)
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Request{}, fmt.Errorf("read the request: %w", err)
	}
	if dec.More() {
		return Request{}, errors.New("read the request: more than one JSON value on its line")
	}
	if req.BundleSize < 0 {
		return Request{}, fmt.Errorf("read the request: bundle size %d", req.BundleSize)
	}
	return req, nil
}

// readAnswer skips the lines before the answer's (a login shell's) and
// reads it. It never panics on bad input.
func readAnswer(br *bufio.Reader) (Answer, error) {
	for {
		line, err := readLine(br)
		if err != nil {
			return Answer{}, fmt.Errorf("read the answer: %w", err)
		}
		body, ok := bytes.CutPrefix(line, []byte(answerMark))
		if !ok {
			continue
		}
		var a Answer
		if err := json.Unmarshal(body, &a); err != nil {
			return Answer{}, fmt.Errorf("read the answer: %w", err)
		}
		if a.BundleSize < 0 {
			return Answer{}, fmt.Errorf("read the answer: bundle size %d", a.BundleSize)
		}
		return a, nil
	}
}
