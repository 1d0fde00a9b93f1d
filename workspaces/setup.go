package workspaces

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/textclip"
)

// SetupMarker is the file, in a worktree's private git dir, that records a
// setup command that succeeded there (its content is the command).
const SetupMarker = "batty-setup.done"

// MaxSetupOutput is how much of the end of a setup command's output Setup
// returns.
const MaxSetupOutput = 4 << 10

// Setup runs `sh -c command` in agent's worktree, once: when it succeeds
// the command is recorded in the worktree's private git dir (SetupMarker),
// and later calls with the same command return "" and nil at once, until
// the worktree is checked out anew (Prune, or Ensure restoring it) or the
// command changes. A failure records nothing, so the next call runs it
// again. An empty command does nothing.
//
// The command runs with the repo's environment, stdin /dev/null, in its
// own process group, killed whole when timeout (if > 0) passes or ctx
// ends; what it leaves running in its group when it exits is killed. It
// blocks until the command is over. output is the end of what it wrote to
// stdout and stderr (at most MaxSetupOutput bytes, raw: sanitise it before
// showing it); err says how it failed (exit status, time limit).
//
// The command runs without the repository lock (it may take minutes);
// only recording its success takes it. Calls for one agent are serialised
// within the Repo.
func (r *Repo) Setup(ctx context.Context, agent, command string, timeout time.Duration) (output string, err error) {
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
	output, err = r.runSetup(ctx, wt, command, timeout)
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
func (r *Repo) runSetup(ctx context.Context, wt worktree, command string, timeout time.Duration) (string, error) {
	what := fmt.Sprintf("setup of %s (sh -c %q)", wt.agent, textclip.Runes(command, 60, textclip.Ellipsis))
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = wt.path
	cmd.Env = CleanEnv(r.env)
	out := &textclip.TailWriter{Max: MaxSetupOutput, Mark: textclip.Ellipsis + " "}
	cmd.Stdout, cmd.Stderr = out, out
	werr := reap.RunGroup(ctx, cmd, r.starter)
	switch {
	case ctx.Err() != nil && timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return out.String(), fmt.Errorf("%s: killed after the time limit of %s: %w", what, timeout, ctx.Err())
	case ctx.Err() != nil:
		return out.String(), fmt.Errorf("%s: %w", what, ctx.Err())
	case werr != nil:
		return out.String(), fmt.Errorf("%s: %w", what, werr)
	}
	return out.String(), nil
}
