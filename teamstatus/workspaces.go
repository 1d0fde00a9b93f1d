package teamstatus

import (
	"fmt"
	"slices"
	"strings"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/safetext"
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
			detail = ProtectedDetail(r.Protected, r.ProtectedTotal) + ReviewDetail(r.Agent)
		}
		out = append(out, control.LandingStatus{ID: r.ID, Agent: r.Agent, State: string(r.State), RequestedAt: r.RequestedAt,
			By: r.RequestedBy, Commit: r.LandedCommit, Detail: detail, Review: r.Review, Tip: r.Tip, Onto: r.BaseBefore, Approved: r.Approved,
			Protected: slices.Clone(r.Protected), ProtectedTotal: r.ProtectedTotal})
	}
	return out
}

// maxDetailPaths bounds the protected paths ProtectedDetail names.
const maxDetailPaths = 5

// ProtectedDetail says which protected paths a landing's merge changes
// (paths, total of them), the reason it waits for review: "changes
// protected paths a, b (and 3 more); ", each name cleaned to one line and
// clipped, at most maxDetailPaths of them; "" when none. It is a pure
// function.
func ProtectedDetail(paths []string, total int) string {
	if len(paths) == 0 {
		return ""
	}
	shown := paths[:min(len(paths), maxDetailPaths)]
	names := make([]string, len(shown))
	for i, p := range shown {
		names[i] = safetext.Line(p, 120)
	}
	s := "changes protected paths " + strings.Join(names, ", ")
	if more := max(total, len(paths)) - len(shown); more > 0 {
		s += fmt.Sprintf(" (and %d more)", more)
	}
	return s + "; "
}

// ReviewDetail is what status says of agent's landing waiting for review.
// It is a pure function.
func ReviewDetail(agent string) string {
	return "verified; waits for your review: batty review, then batty approve " + agent + " or batty reject " + agent + ` --reason "..."`
}
