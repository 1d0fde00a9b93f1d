package teamstatus

import (
	"strings"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/workspaces"
)

// Workspace is what status shows of a worktree agent's workspace st
// against base. It is a pure function.
func Workspace(base string, st workspaces.State) *control.WorkspaceStatus {
	return &control.WorkspaceStatus{Path: st.Path, Branch: st.Branch, Base: base, Head: st.Head,
		Exists: st.Exists, Ahead: st.Ahead, Behind: st.Behind, Dirty: st.Dirty, DirtyAt: st.ReadAt}
}

// Landings is what status shows of the merge queue's requests. It is a
// pure function.
func Landings(reqs []landing.Request) []control.LandingStatus {
	out := []control.LandingStatus{}
	for _, r := range reqs {
		detail := r.Error
		if len(r.Conflicts) > 0 {
			detail = "conflicts: " + strings.Join(r.Conflicts, ", ")
		}
		if r.State == landing.Review {
			detail = ReviewDetail(r.Agent)
		}
		out = append(out, control.LandingStatus{ID: r.ID, Agent: r.Agent, State: string(r.State), RequestedAt: r.RequestedAt,
			By: r.RequestedBy, Commit: r.LandedCommit, Detail: detail, Review: r.Review, Tip: r.Tip, Onto: r.BaseBefore, Approved: r.Approved})
	}
	return out
}

// ReviewDetail is what status says of agent's landing waiting for review.
// It is a pure function.
func ReviewDetail(agent string) string {
	return "verified; waits for your review: batty review, then batty approve " + agent + " or batty reject " + agent + ` --reason "..."`
}
