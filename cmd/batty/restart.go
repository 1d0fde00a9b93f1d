package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/cmd/batty/internal/iostreams"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/team"
)

func newRestartCmd(f *Factory) *cobra.Command {
	var teamFile string
	var timeout time.Duration
	var noTmux, yes bool
	cmd := &cobra.Command{
		Use:   "restart [--timeout D] [--no-tmux] [--yes]",
		Short: "Stop the team gracefully and start it again, applying a changed team.yaml",
		Long: `restart is batty stop followed by batty start: turns in flight may finish
until the timeout (default: timeouts.shutdown of the team), then are
interrupted and delivered again after the start. Every thread, inbox and
message is kept; the team file (and its prompt files) are read again, so
restart applies their changes. batty status says when they changed since
the team started.

The team file is validated first: an invalid one leaves the running team
as it is. Without a running team, restart starts it.

An agent working in the project's checkout can edit the team file. When it
changes a trusted setting since the team started — what batty runs as you
(on_alert, workspace.setup and verify, codex.bin, a host's ssh or command)
or how agents are held (codex sandbox, approval_policy, args, codex_home,
env, config other than the model's, a role's cwd, workspace or accounts) —
restart lists each change and asks before applying it; --yes accepts them
(in a script). Without a terminal on stdin and without --yes it refuses,
and the team runs on as it was. If the file changes again after that, the
new daemon refuses to start.`,
		Example: `  batty restart
  batty restart --timeout 10s
  batty restart --no-tmux
  batty restart --yes   # accept changed trusted settings without asking`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, cfg, err := f.loadStartableTeam(cmd.Context(), teamFile)
			if err != nil {
				return err
			}
			accepted, err := confirmTrusted(cmd, f.IOStreams, p, cfg, yes)
			if err != nil {
				return err
			}
			if err := runStop(cmd, f, teamFile, timeout); err != nil {
				return err
			}
			return runStart(cmd, f, teamFile, false, noTmux, accepted)
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long turns in flight may finish (default: the team's timeouts.shutdown)")
	cmd.Flags().BoolVar(&noTmux, "no-tmux", false, "start again without the tmux cockpit (watch agents with batty logs -f)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "apply changed trusted settings (commands, sandbox) without asking")
	return cmd
}

// confirmTrusted compares the trusted settings of cfg, the team file as it
// is now, with those of the team the project's daemon runs (asked over
// its socket) and, when they differ, lists the changes on stderr and asks
// on stdin whether to apply them: --yes (yes) accepts without asking; no
// terminal on stdin refuses, naming the flag. It returns the
// team.TrustedFingerprint of cfg's settings for runStart to hold the new
// daemon to, "" when no daemon runs (restart is a start: there is nothing
// to compare with); an error when the change is not accepted.
func confirmTrusted(cmd *cobra.Command, ios *iostreams.IOStreams, p project.Project, cfg *team.Config, yes bool) (string, error) {
	now := team.TrustedSettings(cfg)
	fp := team.TrustedFingerprint(now)
	if running, _ := project.Running(p.Layout); !running {
		return "", nil
	}
	resp, err := control.Call(p.Layout, control.Request{Op: control.OpTrusted}, 5*time.Second)
	if err != nil {
		return "", fmt.Errorf("ask the running team what it started with: %w", err)
	}
	errw := cmd.ErrOrStderr()
	if resp.Error != "" || len(resp.Trusted) == 0 {
		// A daemon of an older batty does not say.
		fmt.Fprintf(errw, "batty: the running daemon cannot say what team file it started with (%s); restart applies %s as it is now\n",
			safetext.Line(resp.Error, 200), cfg.Path)
	} else {
		changes := team.TrustedChanges(resp.Trusted, now)
		if len(changes) == 0 {
			return fp, nil
		}
		fmt.Fprintf(errw, "batty: %s changes what batty runs as you or how agents are held since the team started (an agent may have edited it):\n%s",
			cfg.Path, trustedChangesText(changes))
	}
	if yes {
		fmt.Fprintln(errw, "batty: applying them (--yes)")
		return fp, nil
	}
	in := cmd.InOrStdin()
	if !ios.IsStdinTTY() {
		return "", errors.New("not restarted, the team runs on as it was: no terminal to ask on; check the changes and run `batty restart --yes` to apply them")
	}
	fmt.Fprint(errw, "Apply them and restart? [y/N] ")
	answer, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the answer: %w", err)
	}
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return "", errors.New("not restarted, the team runs on as it was")
	}
	return fp, nil
}

// trustedChangesText shows changes one a line, indented: "  key: old →
// new", an unset side as "(unset)", every value cleaned to one line (the
// file may be an agent's). It is a pure function.
func trustedChangesText(changes []team.SettingChange) string {
	show := func(v string) string {
		if v == "" {
			return "(unset)"
		}
		return safetext.Line(v, 300)
	}
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "  %s: %s → %s\n", safetext.Line(c.Key, 200), show(c.Old), show(c.New))
	}
	return b.String()
}

// checkAccepted returns an error unless accepted is "" or the
// team.TrustedFingerprint of cfg's trusted settings: the team file changed
// again after `batty restart` showed its changes and they were accepted.
func checkAccepted(cfg *team.Config, accepted string) error {
	if accepted == "" || team.TrustedFingerprint(team.TrustedSettings(cfg)) == accepted {
		return nil
	}
	return fmt.Errorf("%s changed again after restart showed its trusted settings (commands, sandbox) and they were accepted: not started; check it and run `batty start`", cfg.Path)
}

// teamChangedNotice is what status and validate say while the running
// team's files differ from what its daemon started with.
const teamChangedNotice = "team.yaml changed since the team started: `batty restart` applies it"

// printTeamChanged prints teamChangedNotice on a line of its own when st
// says the team's files changed since its daemon started, nothing
// otherwise.
func printTeamChanged(w io.Writer, st control.Status) {
	if st.TeamFileChanged {
		fmt.Fprintln(w, teamChangedNotice)
	}
}

// noteRunningTeamChanged prints teamChangedNotice when a daemon runs the
// team of the team file at path and its files changed since it started;
// nothing when none runs (it creates nothing).
func noteRunningTeamChanged(w io.Writer, path string) {
	l, err := project.LayoutFor(path)
	if err != nil {
		return
	}
	resp, err := control.Call(l, control.Request{Op: control.OpStatus}, 5*time.Second)
	if err != nil || resp.Status == nil {
		return
	}
	printTeamChanged(w, *resp.Status)
}
