package landing

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/sandbox"
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
// worktree: `/bin/sh -c <verify>`, inside Codex's sandbox unless
// Options.Sandbox is nil, in its own process group, its environment the
// daemon's plus BATTY_LANDING_AGENT, BATTY_LANDING_BRANCH and
// BATTY_LANDING_BASE. At the time limit the whole group is killed and
// verify is red; when ctx ends it is killed too, and the error is ctx's.
// A sandbox that cannot be set up (no codex) makes verify red, saying
// why; a red verify whose output shows the sandbox refusing something
// names the team file's setting to change. It returns once the command
// is reaped. An empty command passes.
func (q *Queue) verify(ctx context.Context, r Request) (verifyResult, error) {
	if q.opt.Verify == "" {
		return verifyResult{Passed: true}, nil
	}
	env := append(append([]string(nil), q.env...),
		"BATTY_LANDING_AGENT="+r.Agent, "BATTY_LANDING_BRANCH="+r.Branch, "BATTY_LANDING_BASE="+q.opt.Base)
	cmd, done, err := q.opt.Sandbox.Command(q.integ, q.opt.Verify, env)
	if err != nil {
		return verifyResult{Reason: fmt.Sprintf("verify could not run in Codex's sandbox: %v (make codex.bin a working codex, or set %s in the team file)", err, sandbox.KeyOff)}, nil
	}
	defer done()
	out := &textclip.TailWriter{Max: verifyKeep}
	cmd.Stdout, cmd.Stderr = out, out
	vctx, cancel := context.WithTimeout(ctx, q.opt.VerifyTimeout)
	defer cancel()
	err = reap.RunGroup(vctx, cmd, q.opt.Starter)
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
		reason := fmt.Sprintf("verify failed (%s)", ee.ProcessState)
		if sb := q.opt.Sandbox; sb != nil {
			if hint := sandbox.Hint("verify", out.String(), sb.Network); hint != "" {
				reason += "; " + hint
			}
		}
		return verifyResult{Reason: reason, Tail: outTail()}, nil
	}
	return verifyResult{}, fmt.Errorf("verify: %w", err)
}
