package workspaces

import (
	"context"
	"fmt"
)

// ResolveBase returns the team's base branch: configured (team.yaml's
// workspace.base) when set, else the branch checked out in the user's
// checkout; either must exist (ErrUnknownBase). The daemon and the CLI
// resolve it alike with it.
func (r *Repo) ResolveBase(ctx context.Context, configured string) (string, error) {
	base := configured
	if base == "" {
		b, err := r.DefaultBase(ctx)
		if err != nil {
			return "", fmt.Errorf("the base branch of the worktrees: %w (or set workspace.base)", err)
		}
		base = b
	}
	if err := r.CheckBase(ctx, base); err != nil {
		return "", fmt.Errorf("workspace.base: %w", err)
	}
	return base, nil
}
