package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/shellword"
	"github.com/battyhq/batty/team"
)

// startWait bounds how long `batty start` waits for the daemon to accept
// messages.
const startWait = 60 * time.Second

func newStartCmd(f *Factory) *cobra.Command {
	var teamFile string
	var foreground, noTmux bool
	cmd := &cobra.Command{
		Use:   "start [-f team.yaml] [--foreground] [--no-tmux]",
		Short: "Start the team's daemon (in the background unless --foreground)",
		Long: `start validates the team file, then runs the daemon — in the background, returning
once it accepts messages, or in the foreground with --foreground. One daemon runs
per project; its state, inboxes and logs live in the project's state directory,
~/.local/state/batty/projects/<name>-<hash> ($BATTY_STATE_HOME, else
$XDG_STATE_HOME/batty, else ~/.local/state/batty), which start prints.
The team file defaults to ./team.yaml, else ./.batty/team.yaml.

In the foreground the team's feed (one line per event, as the cockpit shows it)
goes to stdout and the daemon's warnings and errors to stderr. Ctrl-C stops the
team at once: turns in flight are interrupted and their messages go back to the
queue; a second Ctrl-C kills the team's processes.

Unless --no-tmux, it also opens the cockpit: a detached tmux session on the
project's private tmux server, with the orchestrator's feed and one pane per
agent; ` + "`batty attach`" + ` shows it. start never attaches by itself.`,
		Example: `  batty start
  batty start --team ~/src/demo/team.yaml
  batty start --foreground
  batty start --no-tmux`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStart(cmd, f, teamFile, foreground, noTmux, "")
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().BoolVar(&foreground, "foreground", false, "run the daemon in this terminal, printing the team's feed, until Ctrl-C")
	cmd.Flags().BoolVar(&noTmux, "no-tmux", false, "run without the tmux cockpit (watch agents with batty logs -f)")
	return cmd
}

// warnLegacyState tells, at each start, of the state an earlier batty kept
// in the project's .batty (where agents could write it), which this one
// neither reads nor takes over.
func warnLegacyState(w io.Writer, l project.Layout) {
	old := l.LegacyState()
	if len(old) == 0 {
		return
	}
	fmt.Fprintf(w, "batty: warning: %s holds the state of an earlier batty (%s); it is not read: a team's state now lives in %s, out of the agents' reach, so this team starts with fresh threads and inboxes. Look through it (an agent could have written it), then remove it: rm -r %s\n",
		filepath.Join(l.Project, project.DirName), strings.Join(baseNames(old), ", "), l.Dir, strings.Join(quoteAll(old), " "))
	if slices.ContainsFunc(old, func(p string) bool { return filepath.Base(p) == project.SocketName }) {
		fmt.Fprintf(w, "batty: warning: an earlier batty's daemon may still run this team (%s is there): stop it with that batty's `batty stop` first\n",
			filepath.Join(l.Project, project.DirName, project.SocketName))
	}
}

// baseNames are the last elements of paths.
func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

// quoteAll is each path as one shell word.
func quoteAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = shellword.Quote(p)
	}
	return out
}

// runStart is `batty start`: the daemon of the team of teamFile starts, in
// the background (returning once it accepts messages) unless foreground,
// with its cockpit unless noTmux. `batty restart` runs it after runStop,
// with accepted, the team.TrustedFingerprint of the trusted settings it
// accepted: a team whose settings are not those (the file changed again
// meanwhile) is refused, here and by the daemon, which reads the file
// again. "" accepts any.
func runStart(cmd *cobra.Command, f *Factory, teamFile string, foreground, noTmux bool, accepted string) error {
	ios := f.IOStreams
	p, cfg, err := f.loadStartableTeam(cmd.Context(), teamFile)
	if err != nil {
		return err
	}
	if err := checkAccepted(cfg, accepted); err != nil {
		return err
	}
	if running, pid := project.RunningSettled(p.Layout); running {
		return project.AlreadyRunningError(pid, p.Layout.Socket())
	}
	warnLegacyState(cmd.ErrOrStderr(), p.Layout)
	warnConsole(cmd.ErrOrStderr(), p.TeamFile, cfg)
	withCockpit := !noTmux
	if withCockpit {
		// Before the daemon: its tmux server must not be a child
		// of the daemon's subreaper.
		if _, err := createCockpit(cmd.Context(), p, cfg); err != nil {
			if !isNoTmux(err) {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "batty: no cockpit: %v\nbatty: starting without it; watch an agent with `batty logs -f <agent>`\n", err)
			withCockpit = false
		}
	}
	if foreground {
		if withCockpit {
			announceCockpit(cmd.ErrOrStderr(), p, cfg)
		}
		return runDaemon(cmd.Context(), ios, p, cfg, nil, true, withCockpit)
	}
	if err := startBackground(cmd.OutOrStdout(), p, cfg, withCockpit, accepted); err != nil {
		// The cockpit goes with the failed daemon, unless another
		// start won the race for the lock: that team keeps it.
		if running, _ := project.Running(p.Layout); withCockpit && !running {
			if kerr := stopCockpit(p); kerr != nil {
				err = errors.Join(err, kerr)
			}
		}
		return err
	}
	if withCockpit {
		announceCockpit(cmd.OutOrStdout(), p, cfg)
	}
	warnParked(cmd.ErrOrStderr(), p.Layout)
	return nil
}

// startBackground runs `batty daemon` detached and waits until it reports
// that it accepts messages (over a pipe, no polling), or fails. A
// non-empty accepted is passed on (see runStart).
func startBackground(out io.Writer, p project.Project, cfg *team.Config, withCockpit bool, accepted string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the batty binary: %w", err)
	}
	logf, err := openDaemonLog(p.Layout)
	if err != nil {
		return err
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("ready pipe: %w", err)
	}
	defer pr.Close()
	cmd := exec.Command(exe, "daemon", "-f", p.TeamFile, "--ready-fd", "3")
	if withCockpit {
		cmd.Args = append(cmd.Args, "--cockpit")
	}
	if accepted != "" {
		cmd.Args = append(cmd.Args, "--accepted", accepted)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("start daemon: %w", err)
	}
	pw.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(pr).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		if s == "ok" {
			fmt.Fprintf(out, "batty: team %q running (pid %d, %d agents); logs in %s\n", cfg.Name, cmd.Process.Pid, len(cfg.Agents()), p.Layout.Dir)
			sayConsole(out, p.Layout)
			return nil
		}
		if s == "" {
			err := <-exited
			return fmt.Errorf("daemon exited (%v) before it was ready; see %s", err, p.Layout.DaemonLog())
		}
		return errors.New(strings.TrimPrefix(s, "error: "))
	case <-time.After(startWait):
		cmd.Process.Signal(syscall.SIGTERM)
		return fmt.Errorf("daemon not ready after %s; see %s", startWait, p.Layout.DaemonLog())
	}
}
