package landing

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/textclip"
)

// verifyKeep is how much of verify's output is held while it runs (the
// end of it); MaxOutputTail of that is kept in the request.
const verifyKeep = 64 << 10

// verifyResult is the outcome of a verify run that ran to its end (or to
// its time limit).
type verifyResult struct {
	Passed bool
	Reason string // why it is red
	Tail   string // the end of its output, at most MaxOutputTail bytes
}

// verify runs the team's verify command for r in the integration
// worktree: `sh -c <verify>`, in its own process group, its environment
// the daemon's plus BATTY_LANDING_AGENT, BATTY_LANDING_BRANCH and
// BATTY_LANDING_BASE. At the time limit the whole group is killed and
// verify is red; when ctx ends it is killed too, and the error is ctx's.
// It returns once the command is reaped. An empty command passes.
func (q *Queue) verify(ctx context.Context, r Request) (verifyResult, error) {
	if q.opt.Verify == "" {
		return verifyResult{Passed: true}, nil
	}
	cmd := exec.Command("sh", "-c", q.opt.Verify)
	cmd.Dir = q.integ
	cmd.Env = append(append([]string(nil), q.env...),
		"BATTY_LANDING_AGENT="+r.Agent, "BATTY_LANDING_BRANCH="+r.Branch, "BATTY_LANDING_BASE="+q.opt.Base)
	out := &textclip.TailWriter{Max: verifyKeep}
	cmd.Stdout, cmd.Stderr = out, out
	vctx, cancel := context.WithTimeout(ctx, q.opt.VerifyTimeout)
	defer cancel()
	err := reap.RunGroup(vctx, cmd, q.opt.Starter)
	outTail := func() string {
		return textclip.Tail(strings.ToValidUTF8(out.String(), "\uFFFD"), MaxOutputTail, textclip.Truncated+"\n")
	}
	switch {
	case ctx.Err() != nil:
		return verifyResult{}, fmt.Errorf("verify: %w", ctx.Err())
	case vctx.Err() != nil:
		return verifyResult{Reason: fmt.Sprintf("verify did not finish within %s: killed", q.opt.VerifyTimeout), Tail: outTail()}, nil
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return verifyResult{Passed: true}, nil
	case errors.As(err, &ee):
		return verifyResult{Reason: fmt.Sprintf("verify failed (%s)", ee.ProcessState), Tail: outTail()}, nil
	}
	return verifyResult{}, fmt.Errorf("verify: %w", err)
}
