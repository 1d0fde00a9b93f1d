package workspaces

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/textclip"
)

// SetupMarker is the file, in a worktree's private git dir, that records a
// setup command that succeeded there (its content is the command).
const SetupMarker = "batty-setup.done"

// MaxSetupOutput is how much of the end of a setup command's output Setup
// returns.
const MaxSetupOutput = 4 << 10

// SetupOptions are what Setup runs and how.
type SetupOptions struct {
	// Command is the team's setup command, run by `/bin/sh -c`; "" for
	// none.
	Command string
	// Timeout bounds one run (0: none but ctx's).
	Timeout time.Duration
	// Sandbox is how it runs inside Codex's sandbox, writing only the
	// worktree and what the policy lists; nil runs it without a sandbox.
	Sandbox *sandbox.Policy
}

// Setup runs `/bin/sh -c o.Command` in agent's worktree (inside Codex's
// sandbox unless o.Sandbox is nil), once: when it succeeds
// the command is recorded in the worktree's private git dir (SetupMarker),
// and later calls with the same command return "" and nil at once, until
// the worktree is checked out anew (Prune, or Ensure restoring it) or the
// command changes. A failure records nothing, so the next call runs it
// again. An empty command does nothing.
//
// The command runs with the repo's environment, stdin /dev/null, in its
// own process group, killed whole when o.Timeout (if > 0) passes or ctx
// ends; what it leaves running in its group when it exits is killed. It
// blocks until the command is over. output is the end of what it wrote to
// stdout and stderr (at most MaxSetupOutput bytes, raw: sanitise it before
// showing it); err says how it failed (exit status, time limit, a sandbox
// that could not be set up) and, when its output shows the sandbox
// refusing something, which setting of the team file to change.
//
// The command runs without the repository lock (it may take minutes);
// only recording its success takes it. Calls for one agent are serialised
// within the Repo.
func (r *Repo) Setup(ctx context.Context, agent string, o SetupOptions) (output string, err error) {
	command := o.Command
	if err := checkAgent(agent); err != nil {
		return "", err
	}
	if command == "" {
		return "", nil
	}
	release, err := r.setupSlot(ctx, agent)
	if err != nil {
		return "", err
	}
	defer release()
	wt, exists, err := r.lookup(agent)
	if err != nil {
		return "", fmt.Errorf("setup: %w", err)
	}
	if !exists {
		return "", fmt.Errorf("setup: %s has no worktree at %s", agent, r.Path(agent))
	}
	if done, err := setupDone(wt, command); err != nil || done {
		return "", err
	}
	output, err = r.runSetup(ctx, wt, o)
	if err != nil {
		return output, err
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return output, fmt.Errorf("setup of %s succeeded but was not recorded: %w", agent, err)
	}
	defer unlock()
	now, exists, err := r.lookup(agent)
	if err == nil && (!exists || now.admin != wt.admin) {
		err = errors.New("the worktree was removed or replaced meanwhile")
	}
	if err == nil {
		err = writeMarker(wt.admin, command)
	}
	if err != nil {
		return output, fmt.Errorf("setup of %s succeeded but was not recorded: %w", agent, err)
	}
	return output, nil
}

// setupSlot waits until no other Setup of agent runs in this Repo and
// takes its place; the returned func gives it up.
func (r *Repo) setupSlot(ctx context.Context, agent string) (func(), error) {
	for {
		r.setupMu.Lock()
		busy, ok := r.setups[agent]
		if !ok {
			mine := make(chan struct{})
			r.setups[agent] = mine
			r.setupMu.Unlock()
			return func() {
				r.setupMu.Lock()
				delete(r.setups, agent)
				r.setupMu.Unlock()
				close(mine)
			}, nil
		}
		r.setupMu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, fmt.Errorf("setup of %s: wait for the one running: %w", agent, ctx.Err())
		}
	}
}

// setupDone reports whether wt's marker records command.
func setupDone(wt worktree, command string) (bool, error) {
	d, err := atomicfile.OpenDir(wt.admin)
	if err != nil {
		return false, fmt.Errorf("setup: %w", err)
	}
	defer d.Close()
	f, err := d.OpenFile(SetupMarker, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("setup: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(len(command))+1))
	if err != nil {
		return false, fmt.Errorf("setup: read %s: %w", f.Name(), err)
	}
	return bytes.Equal(b, []byte(command)), nil
}

// writeMarker records command in admin's marker, atomically.
func writeMarker(admin, command string) error {
	d, err := atomicfile.OpenDir(admin)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(SetupMarker, []byte(command), 0o600)
}

// runSetup runs the command and returns the tail of its output.
func (r *Repo) runSetup(ctx context.Context, wt worktree, o SetupOptions) (string, error) {
	what := fmt.Sprintf("setup of %s (sh -c %q)", wt.agent, textclip.Runes(o.Command, 60, textclip.Ellipsis))
	timeout := o.Timeout
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd, done, err := o.Sandbox.Command(wt.path, o.Command, CleanEnv(r.env))
	if err != nil {
		return "", fmt.Errorf("%s could not run in Codex's sandbox: %w (make codex.bin a working codex, or set %s in the team file)", what, err, sandbox.KeyOff)
	}
	defer done()
	out := &textclip.TailWriter{Max: MaxSetupOutput, Mark: textclip.Ellipsis + " "}
	cmd.Stdout, cmd.Stderr = out, out
	werr := reap.RunGroup(ctx, cmd, r.starter)
	switch {
	case ctx.Err() != nil && timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return out.String(), fmt.Errorf("%s: killed after the time limit of %s: %w", what, timeout, ctx.Err())
	case ctx.Err() != nil:
		return out.String(), fmt.Errorf("%s: %w", what, ctx.Err())
	case werr != nil:
		if o.Sandbox != nil {
			if hint := sandbox.Hint("setup", out.String(), o.Sandbox.Network); hint != "" {
				return out.String(), fmt.Errorf("%s: %w; %s", what, werr, hint)
			}
		}
		return out.String(), fmt.Errorf("%s: %w", what, werr)
	}
	return out.String(), nil
}
