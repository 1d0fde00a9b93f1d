// Package landing is batty's merge queue: it lands agents' branches
// (batty/<agent>, each checked out in the agent's own worktree) onto the
// team's base branch, one landing at a time, and only when the result
// passes the team's verify command.
//
// # One landing
//
// A landing happens in an integration worktree of its own,
// <worktrees>/.landing, a detached worktree of the project's repository
// that is scratch: it is created when missing (after `git worktree prune`
// forgets stale registrations), anything else found at that path is
// removed, and it is reset hard to the base tip before each attempt. There
// the branch tip is merged onto the base tip (`git merge --no-ff`, message
// "Land batty/<agent> (<n> commits)", batty's committer, hooks off, no
// signing), verify runs (`sh -c <verify>`, its own process group, killed
// whole at its time limit or when the landing's context ends), and only
// when it passes does base advance, by compare-and-swap: `git update-ref
// refs/heads/<base> <merged> <old tip>`. When base moved meanwhile (someone
// committed), the landing is redone on the new tip, a bounded number of
// times. A conflict or a red verify leaves base unchanged and the request
// failed, with the conflicting files or the tail of verify's output.
//
// # Merge, not rebase
//
// The branch is merged, never rebased. The agent's branch is checked out
// live in the agent's worktree: rewriting it would pull the commits from
// under an agent that may be working on it right now. A merge commit keeps
// each of the agent's turn commits as they are, with their Batty-Message
// trailers, so a change can still be traced to the message that asked for
// it; and advancing base to one merge commit is a single atomic step that
// the compare-and-swap can guard.
//
// # The user's checkout
//
// Base may be the branch checked out in a work tree (normally the user's
// own checkout of the repository). Moving the ref alone would leave that
// checkout's index and files behind, so then the advance is `git merge
// --ff-only <merged>` run in that checkout, which moves the ref and the
// files together and refuses when base has moved (the merged commit is then
// no fast-forward of it). Unlike update-ref it checks only that the merged
// commit descends from base's tip, not that the tip is the one the landing
// started from; a tip set back to an older commit in between would be moved
// forward again. A checkout with uncommitted changes is never touched: the
// landing waits (state waiting) and is tried again later.
//
// # Review
//
// A request that asks for review (workspace.review: human for the agents'
// requests, `batty merge --review` for the human's) is merged and
// verified as any other, then waits in state review, base unchanged, for
// the human's approval (Queue.Approve) or rejection (Queue.Reject), while
// the queue goes on with the others. An approval is of the branch's
// commit the request verified (Request.Tip): a branch that moved since is
// verified and reviewed again. An approved request is merged onto base's
// tip again and verified again when it lands (base may have moved while
// it waited); see review.go.
//
// # Durability
//
// The queue lives in state/landing.json (atomic writes, mode 0600, never
// through a link). The merge commit is recorded before base is advanced,
// so a daemon killed at any point finds each request either finished, or
// unfinished and tried again from scratch; a request whose recorded merge
// commit is already in base (killed after the advance, before recording it)
// is recorded landed without merging again. A request waiting for review,
// the tip approved and a rejection are in the state file too: a restart
// keeps the request waiting, and lands an approved one.
package landing
