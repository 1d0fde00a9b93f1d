package clones

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// Client is the daemon's end of agent Agent's clone on Host: a
// workspaces.Workspace whose worktree is on the host and whose branch
// here (in Repo) follows the host's after every operation: fast-forwarded,
// never moved back (work done here is merged into the host's branch by
// the next Prepare, after which it fast-forwards again). Like every Workspace it is used by one
// goroutine at a time.
type Client struct {
	Transport *hosts.Transport
	Host      team.Host
	// Dir is the project directory on the host ("~/" is its home): the
	// clone is in its state directory there (hosts.StateDir of Dir).
	Dir string
	// Batty returns the path of batty on the host, installing it when
	// needed (it blocks for that).
	Batty func(ctx context.Context) (string, error)
	// Repo is the project's repository here; Agent's branch in it must
	// not be checked out here.
	Repo  *workspaces.Repo
	Agent string
	Base  string
	// MinFree is the free space the host keeps before checking out a
	// worktree (0: workspaces.DefaultMinFree).
	MinFree uint64
	// Timeout bounds each step on the host, the transfer of its
	// bundles included (0: none but ctx's); a preparation gets three
	// times as long, plus its setup's limit. A host that does not
	// answer within it is ErrHost.
	Timeout time.Duration
	// OldClone, when set, is called once, with the path there, the first
	// time the host answers that the agent still has a clone an earlier
	// batty kept in the project directory there (Answer.OldClone), which
	// batty no longer uses: for the caller to tell the user.
	OldClone func(path string)

	told   bool      // OldClone was called
	last   *Answer   // the last answer, for State
	lastAt time.Time // when it came
}

var _ workspaces.Workspace = (*Client)(nil)

// ErrHost is in the chain of an error of a Client when the host could
// not be asked or gave no answer (the connection, batty there), as
// opposed to an answer that says the step failed.
var ErrHost = errors.New("the host did not answer")

// Where implements workspaces.Workspace: host:path (see Where).
func (c *Client) Where() string { return Where(c.Host.Name, c.Dir, c.Agent) }

// Where is where agent's clone is on host hostName whose project
// directory is dir: "host:path", in the project's state directory there
// (hosts.WorktreesThere). It is a pure function.
func Where(hostName, dir, agent string) string {
	return hostName + ":" + path.Join(hosts.WorktreesThere(dir), agent)
}

// Prepare implements workspaces.Workspace (o.SetupSandbox as the host
// sees it: hosts.SandboxThere): the base and the agent's
// branch here go to the host first (the branch becomes the host's when
// it has none, or is merged into the host's when it has commits the
// host's lacks, as when the agent worked here meanwhile).
func (c *Client) Prepare(ctx context.Context, o workspaces.PrepareOptions) (workspaces.Prepared, error) {
	req := Request{Op: OpPrepare, Setup: o.Setup, SetupTimeout: o.SetupTimeout, SetupSandbox: o.SetupSandbox, GitTimeout: o.GitTimeout}
	ans, err := c.push(ctx, req, true)
	if err != nil {
		return workspaces.Prepared{}, err
	}
	var p workspaces.Prepared
	if ans.Prepared != nil {
		p = *ans.Prepared
	}
	if ans.Failure != nil {
		return p, ans.Failure.Err(c.Host.Name)
	}
	return p, nil
}

// Commit implements workspaces.Workspace.
func (c *Client) Commit(ctx context.Context, ci workspaces.CommitInfo) (workspaces.Committed, error) {
	ci.Agent = c.Agent
	ans, err := c.call(ctx, Request{Op: OpCommit, Commit: &ci}, nil)
	if err != nil {
		return workspaces.Committed{}, err
	}
	if ans.Failure != nil {
		return workspaces.Committed{}, ans.Failure.Err(c.Host.Name)
	}
	// The host's answer: as many paths as a commit here names.
	return workspaces.Committed{Head: ans.BranchCommit, Made: ans.Committed, Nested: ans.Nested, Files: ans.Files[:min(len(ans.Files), workspaces.MaxFiles)]}, nil
}

// MergeBase implements workspaces.Workspace: the base as it is here goes
// to the host, is merged there, and the branch comes back.
func (c *Client) MergeBase(ctx context.Context) (workspaces.SyncResult, error) {
	ans, err := c.push(ctx, Request{Op: OpMerge}, false)
	if err != nil {
		return workspaces.SyncResult{}, err
	}
	if ans.Failure != nil {
		return workspaces.SyncResult{}, ans.Failure.Err(c.Host.Name)
	}
	if ans.Merge == nil {
		return workspaces.SyncResult{}, fmt.Errorf("host %s: a merge answer without its result", c.Host.Name)
	}
	return *ans.Merge, nil
}

// State implements workspaces.Workspace: the branch against the base
// here; whether the worktree exists and its uncommitted paths as the last
// operation found them on the host (asked when none was made yet).
func (c *Client) State(ctx context.Context) (workspaces.State, error) {
	if c.last == nil {
		if _, err := c.call(ctx, Request{Op: OpState}, nil); err != nil {
			return workspaces.State{}, err
		}
	}
	st, err := c.Repo.State(ctx, c.Agent, c.Base)
	if err != nil {
		return workspaces.State{}, err
	}
	st.Path, st.Exists, st.Dirty = c.Where(), c.last.Exists, c.last.Dirty
	// The worktree's figures are the last answer's.
	st.ReadAt = c.lastAt
	return st, nil
}

// Prune removes the agent's workspace, never losing unlanded work: the
// clone's uncommitted work is committed there first with force (without,
// it is refused with ErrUnlanded), and its commits come here; then the
// branch here is pruned as Repo.Prune does (the same refusal, the same
// archive under refs/batty/archive/ with force); last the clone's
// worktree and branch on the host are removed, so that the next start
// does not bring the branch back. Removed tells whether anything was
// removed on either side.
func (c *Client) Prune(ctx context.Context, force bool, now time.Time) (workspaces.PruneResult, error) {
	if err := c.release(ctx, force); err != nil {
		return workspaces.PruneResult{}, err
	}
	res, err := c.Repo.Prune(ctx, c.Agent, c.Base, force, now)
	if err != nil {
		return res, err
	}
	pruned, err := c.removeClone(ctx)
	if err != nil {
		return res, fmt.Errorf("pruned here, but the clone on host %s still holds %s, which the next start would bring back: prune again once the host answers: %w",
			c.Host.Name, workspaces.Branch(c.Agent), err)
	}
	res.Removed = res.Removed || pruned
	return res, nil
}

// Retire ends the clone on the host, for the agent now works elsewhere:
// its uncommitted work is committed there, its commits come into the
// branch here, and only then are the clone's worktree and branch removed
// there. It returns the branch's commit here after ("" when there is no
// branch).
func (c *Client) Retire(ctx context.Context) (string, error) {
	if err := c.release(ctx, true); err != nil {
		return "", err
	}
	if _, err := c.removeClone(ctx); err != nil {
		return "", err
	}
	tips, err := c.Repo.Tips(ctx, workspaces.BranchRef(c.Agent))
	return tips[workspaces.BranchRef(c.Agent)], err
}

// release brings all of the clone's work here: its uncommitted work
// committed there first with force, refused without (ErrUnlanded). It
// errs, and nothing more may be removed there, when the branch here does
// not contain the clone's afterwards (the two have diverged).
func (c *Client) release(ctx context.Context, force bool) error {
	ans, err := c.call(ctx, Request{Op: OpRelease, Force: force}, nil)
	if err != nil {
		return err
	}
	if ans.Failure != nil {
		return ans.Failure.Err(c.Host.Name)
	}
	if ans.BranchCommit == "" {
		return nil
	}
	tips, err := c.Repo.Tips(ctx, workspaces.BranchRef(c.Agent))
	if err != nil {
		return err
	}
	here := tips[workspaces.BranchRef(c.Agent)]
	if here == ans.BranchCommit {
		return nil
	}
	holds := false
	if here != "" {
		if holds, err = c.Repo.IsAncestor(ctx, ans.BranchCommit, here); err != nil {
			return err
		}
	}
	if !holds {
		return fmt.Errorf("the clone of %s on host %s holds %s at %s, which does not contain the branch here (%s): merge them by hand before its clone can go",
			c.Agent, c.Host.Name, workspaces.Branch(c.Agent), ans.BranchCommit, here)
	}
	return nil
}

// removeClone removes the clone's worktree and branch on the host, and
// reports whether there was anything to remove.
func (c *Client) removeClone(ctx context.Context) (bool, error) {
	ans, err := c.call(ctx, Request{Op: OpPrune}, nil)
	if err == nil && ans.Failure != nil {
		err = ans.Failure.Err(c.Host.Name)
	}
	return ans.Pruned, err
}

// push runs req after the commits the host lacks: it asks the host's
// tips, then sends the base here and, with branch, the agent's branch
// here unless the host's contains it.
func (c *Client) push(ctx context.Context, req Request, branch bool) (Answer, error) {
	host, err := c.call(ctx, Request{Op: OpTips}, nil)
	if err != nil || host.Failure != nil {
		return host, err // a failure is the caller's to report
	}
	baseRef, branchRef := "refs/heads/"+c.Base, workspaces.BranchRef(c.Agent)
	here, err := c.Repo.Tips(ctx, baseRef, branchRef)
	if err != nil {
		return Answer{}, err
	}
	if here[baseRef] == "" {
		return Answer{}, fmt.Errorf("%w: %s", workspaces.ErrUnknownBase, c.Base)
	}
	req.BaseCommit = here[baseRef]
	refs := []string{baseRef}
	if branch && here[branchRef] != "" {
		send, err := c.sendBranch(ctx, here[branchRef], host.BranchCommit)
		if err != nil {
			return Answer{}, err
		}
		if send {
			req.BranchCommit = here[branchRef]
			refs = append(refs, branchRef)
		}
	}
	return c.call(ctx, req, &bundle{refs: refs, haves: []string{host.BaseCommit, host.BranchCommit}})
}

// sendBranch decides whether the branch here (mine) goes to the host,
// whose branch is theirs: unless they are the same or theirs contains
// mine.
func (c *Client) sendBranch(ctx context.Context, mine, theirs string) (bool, error) {
	if theirs == "" || theirs == mine {
		return theirs == "", nil
	}
	known, err := c.Repo.Known(ctx, theirs)
	if err != nil || len(known) == 0 {
		return true, err // theirs has commits of its own: mine is merged there
	}
	contained, err := c.Repo.IsAncestor(ctx, mine, theirs)
	return !contained, err
}

// bundle is what a request carries: the commits of refs here without
// those reachable from haves.
type bundle struct {
	refs, haves []string
}

// call runs one request on the host and applies its answer here: the
// branch's commits stored, the branch moved to the host's.
func (c *Client) call(ctx context.Context, req Request, b *bundle) (Answer, error) {
	req.Agent, req.Base, req.MinFree = c.Agent, c.Base, c.MinFree
	if c.Timeout > 0 {
		limit := c.Timeout
		if req.Op == OpPrepare {
			limit = 3*c.Timeout + req.SetupTimeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	here, err := c.Repo.Tips(ctx, "refs/heads/"+c.Base, workspaces.BranchRef(c.Agent))
	if err != nil {
		return Answer{}, err
	}
	for _, sha := range here {
		req.Haves = append(req.Haves, sha)
	}
	limit, why, err := c.answerLimit(ctx)
	if err != nil {
		return Answer{}, err
	}
	in, done, err := c.request(ctx, req, b)
	defer done()
	if err != nil {
		return Answer{}, err
	}
	out, err := c.Repo.CreateTemp("answer")
	if err != nil {
		return Answer{}, err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	batty, err := c.Batty(ctx)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrHost, err)
	}
	script := cloneHostScript(batty, c.Dir)
	cw := &capped{w: out, left: limit}
	if err := c.Transport.Stream(ctx, c.Host, script, in, cw); err != nil {
		if cw.over {
			return Answer{}, fmt.Errorf("the clone of %s: %w: host %s sent more than %d bytes (%s), %s; the rest was not read",
				c.Agent, ErrAnswerTooLarge, c.Host.Name, limit, workspaces.HumanBytes(uint64(limit)), why)
		}
		return Answer{}, fmt.Errorf("the clone of %s: %w: %w", c.Agent, ErrHost, err)
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		return Answer{}, fmt.Errorf("host %s: %w", c.Host.Name, err)
	}
	br := bufio.NewReader(out)
	ans, err := readAnswer(br)
	if err != nil {
		return Answer{}, fmt.Errorf("host %s: %w: %w", c.Host.Name, ErrHost, err)
	}
	if err := c.take(ctx, ans, br, here[workspaces.BranchRef(c.Agent)]); err != nil {
		return Answer{}, err
	}
	c.last, c.lastAt = &ans, time.Now().UTC()
	if ans.OldClone != "" && c.OldClone != nil && !c.told {
		c.told = true
		c.OldClone(ans.OldClone)
	}
	return ans, nil
}

// cloneHostScript is the host's command for one request: `batty
// clone-host` (batty the path of batty there) in the project directory
// there (dir, made when missing), its clones in the project's state
// directory there (hosts.StateDir of dir, "~/" the home there). Pure.
func cloneHostScript(batty, dir string) string {
	return "umask 077 && mkdir -p " + hosts.RemotePath(dir) + " && cd " + hosts.RemotePath(dir) +
		" && exec " + hosts.ShellCommand(batty, "clone-host", "--state-dir") + " " + hosts.RemotePath(hosts.StateDir(dir))
}

// MaxAnswer bounds what a host's answer may hold (its line and the
// bundle of the agent's new commits) whatever the repository: past it
// the answer is refused.
const MaxAnswer = 4 << 30

// MinAnswer is the least bound of an answer on a disk with room for it,
// however small the repository.
const MinAnswer = 64 << 20

// ErrAnswerTooLarge is in the chain of the error of a Client whose host
// sent an answer larger than its bound (see answerBound): the rest was
// not read, nothing of it was applied.
var ErrAnswerTooLarge = errors.New("the host's answer is too large")

// answerLimit is the bound of the next answer (answerBound) from the
// size of the repository here and the free space of its git directory,
// with the reason of the bound in words; ErrLowDisk when the disk has no
// room for an answer.
func (c *Client) answerLimit(ctx context.Context) (int64, string, error) {
	size, err := c.Repo.ObjectsSize(ctx)
	if err != nil {
		return 0, "", err
	}
	free, keep, err := c.Repo.TempSpace()
	if err != nil {
		return 0, "", err
	}
	limit, why, err := answerBound(size, free, keep)
	if err != nil {
		return 0, "", fmt.Errorf("the clone of %s on host %s: %w in %s", c.Agent, c.Host.Name, err, c.Repo.GitDir())
	}
	return limit, why, nil
}

// answerBound decides how many bytes of a host's answer are read, given
// the size of the repository's objects here and the free and kept space
// of the disk its answers are stored on. What the answer can need is its
// line and a bundle of the agent's new commits, which is not expected to
// outgrow the whole repository: twice its size, at least MinAnswer, at
// most MaxAnswer. The disk must hold the answer three times over (the
// answer, the bundle's copy ReadBundle makes, the objects unbundled)
// above what it keeps free: the bound is lowered to a third of that room,
// and with no room at all (free at or below keep) the answer is refused
// before the host is asked, with workspaces.ErrLowDisk. It returns the
// bound and its reason in words. It is a pure function.
func answerBound(repoSize, free, keep uint64) (int64, string, error) {
	if free <= keep {
		return 0, "", fmt.Errorf("%w: %d bytes (%s) free, not more than the %d bytes (%s) batty keeps free, so no room for the host's answer; free some space",
			workspaces.ErrLowDisk, free, workspaces.HumanBytes(free), keep, workspaces.HumanBytes(keep))
	}
	need, why := uint64(MinAnswer), fmt.Sprintf("the least bound of an answer, %s", workspaces.HumanBytes(MinAnswer))
	if repoSize > MinAnswer/2 {
		need, why = 2*repoSize, fmt.Sprintf("twice the size of the repository here, %s", workspaces.HumanBytes(repoSize))
	}
	if need > MaxAnswer {
		need, why = MaxAnswer, fmt.Sprintf("the most an answer may hold, %s", workspaces.HumanBytes(MaxAnswer))
	}
	if room := (free - keep) / 3; room < need {
		need, why = room, fmt.Sprintf("a third of the %s free above the %s kept free (the answer, its copy and its objects)",
			workspaces.HumanBytes(free-keep), workspaces.HumanBytes(keep))
	}
	return int64(need), why, nil
}

// capped is a writer that refuses to write past left bytes; over says it
// did.
type capped struct {
	w    io.Writer
	left int64
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if int64(len(p)) > c.left {
		c.over = true
		return 0, ErrAnswerTooLarge
	}
	c.left -= int64(len(p))
	return c.w.Write(p)
}

// request returns what call writes to the host: req's line, then its
// bundle, read from a temporary file (the line says the bundle's size,
// so the bundle is written first) that done removes. done must be
// called.
func (c *Client) request(ctx context.Context, req Request, b *bundle) (in io.Reader, done func(), err error) {
	done = func() {}
	var body io.Reader = strings.NewReader("")
	if b != nil {
		bf, err := c.Repo.CreateTemp("bundle")
		if err != nil {
			return nil, done, err
		}
		done = func() {
			bf.Close()
			os.Remove(bf.Name())
		}
		if _, err := c.Repo.WriteBundle(ctx, bf, b.refs, b.haves); err != nil {
			return nil, done, err
		}
		if req.BundleSize, err = bf.Seek(0, io.SeekCurrent); err != nil {
			return nil, done, fmt.Errorf("host %s: %w", c.Host.Name, err)
		}
		if _, err := bf.Seek(0, io.SeekStart); err != nil {
			return nil, done, fmt.Errorf("host %s: %w", c.Host.Name, err)
		}
		body = bf
	}
	var line bytes.Buffer
	if err := writeLine(&line, "", req); err != nil {
		return nil, done, err
	}
	return io.MultiReader(&line, body), done, nil
}

// take stores the answer's bundle (rest of br) and moves the agent's
// branch here, which was mine, to the host's.
func (c *Client) take(ctx context.Context, ans Answer, br *bufio.Reader, mine string) error {
	if ans.BundleSize > 0 {
		if err := c.Repo.ReadBundle(ctx, br, ans.BundleSize); err != nil {
			return fmt.Errorf("host %s: %w", c.Host.Name, err)
		}
	}
	if ans.BranchCommit == "" || ans.BranchCommit == mine {
		return nil
	}
	if _, err := c.Repo.TakeBranch(ctx, c.Agent, ans.BranchCommit); err != nil {
		return fmt.Errorf("the branch of %s from host %s: %w", c.Agent, c.Host.Name, err)
	}
	return nil
}
