package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/demo"
)

// newDemoCmd returns `batty demo`: a small team working offline against a
// scripted stand-in for the model.
func newDemoCmd(f *Factory) *cobra.Command {
	var noTmux, keep bool
	var timeout, pace time.Duration
	var codexBin string
	cmd := &cobra.Command{
		Use:   "demo [--no-tmux] [--keep]",
		Short: "Watch a small team work, offline, with a scripted stand-in for the model",
		Long: `demo runs an architect and two engineers on this machine with no OpenAI
account: the model is a scripted stand-in (a local server playing a fixed
script), while batty, the Codex CLI, git and the commands are real. The
architect gets a goal and hands a task to each engineer with batty send; each
engineer writes a file in a git worktree of its own, runs a command on it and
reports back; the architect then lands both engineers' branches on main with
batty merge (the merge queue checks each with the team's verify) and answers
you.

The demo writes a scratch project, a git repository, into a temporary
directory, prints what happens, ends by itself once the answer is in your
inbox and both branches landed (or after --timeout), shows main's history,
and stops and removes everything it started, also on Ctrl-C. In a terminal
with tmux it shows the team in the tmux cockpit; --no-tmux prints a plain
feed instead.

It needs git and the Codex CLI: the pinned install of scripts/demo.sh
(~/.cache/batty-codex), else codex on PATH, or --codex-bin.`,
		Example: `  scripts/demo.sh            # from a checkout: installs what is missing, then runs this
  batty demo
  batty demo --no-tmux --keep`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the batty binary: %w", err)
			}
			// Caught for the whole run, cleanup included: a second Ctrl-C
			// does not cut the cleanup short.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			// A reader that goes away (batty demo | head) must not kill the
			// demo before it cleaned up: with SIGPIPE caught, writes to a
			// broken stdout fail instead, and the demo plays on. (Caught,
			// not ignored: an ignored signal would stay ignored in the
			// team's processes.)
			pipe := make(chan os.Signal, 1)
			signal.Notify(pipe, syscall.SIGPIPE)
			defer signal.Stop(pipe)
			out := cmd.OutOrStdout()
			cockpit := false
			if !noTmux && f.IOStreams.IsStdinTTY() && f.IOStreams.IsStdoutTTY() {
				cockpit = cockpitNote(cmd.Root(), out)
			}
			_, err = demo.Run(ctx, demo.Options{
				Batty: exe, CodexBin: codexBin, Cockpit: cockpit, Keep: keep, Timeout: timeout, Pace: pace,
				Out: out, Stdin: fileOf(f.IOStreams.In), Stdout: fileOf(f.IOStreams.Out), Stderr: fileOf(f.IOStreams.ErrOut),
			})
			if errors.Is(err, demo.ErrInterrupted) {
				fmt.Fprintln(cmd.ErrOrStderr(), "batty demo: interrupted; everything it started is stopped")
				return exitError{1}
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&noTmux, "no-tmux", false, "print a plain feed instead of opening the tmux cockpit")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the scratch project (team.yaml, the worktrees, the engineers' files) and its state directory afterwards")
	cmd.Flags().DurationVar(&timeout, "timeout", demo.DefaultTimeout, "give up when the team has not finished by then")
	cmd.Flags().DurationVar(&pace, "pace", demo.DefaultPace, "how long each step of the stand-in model takes (0: as fast as it goes)")
	cmd.Flags().StringVar(&codexBin, "codex-bin", "", "the Codex CLI to run (default: the pinned install, else codex on PATH)")
	return withUsageExit(cmd)
}

// cockpitNote reports whether the tmux cockpit can open (batty has
// `attach` and tmux is installed), and says why not when it cannot.
func cockpitNote(root *cobra.Command, out io.Writer) bool {
	if c, _, err := root.Find([]string{"attach"}); err != nil || c == root {
		return false
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		fmt.Fprintln(out, "tmux is not installed, so the demo prints a plain feed (scripts/demo.sh installs tmux).")
		return false
	}
	return true
}

// fileOf is the file behind a stream, nil when it is none (a test's
// buffer).
func fileOf(stream any) *os.File {
	f, _ := stream.(*os.File)
	return f
}
