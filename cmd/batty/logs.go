package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/logtail"
	"github.com/battyhq/batty/ptylog"
)

// newLogsCmd returns `batty logs`: print or follow an agent's transcript.
func newLogsCmd(f *Factory) *cobra.Command {
	var (
		teamFile string
		lines    int
		follow   bool
		all      bool
		rescan   time.Duration
		color    = colorMode(colorAuto)
	)
	cmd := &cobra.Command{
		Use:   "logs (<agent> | --all) [-f] [-n N] [--color WHEN] [--team TEAMFILE]",
		Short: "Print an agent's transcript, or every agent's (--all); -f follows",
		Long: `logs prints the last lines of an agent's transcript (logs/<agent>.log
of the team's state directory),
reading only the end of the file. With -f (--follow) it keeps printing new
lines as they are written, like ` + "`tail -F`" + `: it follows the transcript across
rotations (the file renamed to <agent>.log.1 and recreated) and truncation,
and waits for a transcript that does not exist yet. It runs until
interrupted.

With --all it prints every agent's transcript, interleaved in time order
(the last N lines of them all), each line prefixed with the agent's name
in a colour of its own, as ` + "`docker compose logs`" + ` does; with -f it follows them
all at once, including the transcripts of agents that have not started
yet. The names are plain when the transcripts' colours are stripped.

Transcripts are coloured. --color=auto (the default) keeps the colours when
stdout is a terminal and NO_COLOR is not set (https://no-color.org), and
strips them otherwise (a pipe, a file); --color=always and --color=never
decide regardless. Either way only the transcript's colours reach the
terminal: any other escape sequence is dropped and control or bidi
characters are shown escaped (\x07, \u202e).

Note: as in kubectl, -f means --follow here; name the team file with --team.`,
		Example: `  batty logs engineer-1
  batty logs -f -n 200 manager
  batty logs --all -f
  batty logs --team ~/proj/team.yaml -f architect
  batty logs -n 1000 engineer-2 | grep -i error`,
		Args: func(cmd *cobra.Command, args []string) error {
			if all {
				if len(args) > 0 {
					return usageError(cmd, "--all prints every agent's transcript: name no agent (got %s)", strings.Join(args, " "))
				}
				return nil
			}
			if len(args) != 1 {
				for _, a := range args {
					if looksLikeTeamFile(a, isRegularFile) {
						return teamFileHint(cmd, a, args)
					}
				}
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		ValidArgsFunction: f.completeNames(&teamFile, namesAgents),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lines < 0 {
				return usageError(cmd, "-n must not be negative, got %d", lines)
			}
			if rescan <= 0 {
				return usageError(cmd, "--rescan must be positive, got %s", rescan)
			}
			p, cfg, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			keepColour := !stripColor(color, f.IOStreams.IsStdoutTTY(), f.IOStreams.NoColor())
			dim := f.IOStreams.IsStderrTTY() && !stripColor(color, true, f.IOStreams.NoColor())
			if all {
				names := teamAgentNames(cfg)
				a := &allLogs{
					layout: p.Layout,
					agents: names,
					lines:  lines,
					out:    cmd.OutOrStdout(),
					notice: cmd.ErrOrStderr(),
					dim:    dim,
					form:   allFormatter{width: maxLen(names), colour: keepColour},
					rescan: rescan,
				}
				if !follow {
					return a.print()
				}
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return a.follow(ctx)
			}
			agent := args[0]
			if _, ok := cfg.Agent(agent); !ok {
				if looksLikeTeamFile(agent, isRegularFile) {
					return teamFileHint(cmd, agent, args)
				}
				return unknownAgentError(cfg, agent)
			}
			// What the transcript holds was cleaned as it was written,
			// but an agent may write into the file: it is cleaned again,
			// keeping only its colours (or none).
			clean := ptylog.NewCleanWriter(cmd.OutOrStdout(), keepColour)
			t := &logtail.Tail{
				Path:   p.Layout.Transcript(agent),
				Label:  "transcript for " + agent,
				Out:    clean,
				Notice: cmd.ErrOrStderr(),
				// Asides, dim on a terminal (the cockpit's panes).
				DimNotices: dim,
			}
			if follow {
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				err = t.Follow(ctx, lines, rescan)
			} else {
				err = t.PrintLast(lines)
				if errors.Is(err, logtail.ErrNoFile) {
					fmt.Fprintf(cmd.ErrOrStderr(), "batty: no transcript for %s yet (%s)\n", agent, t.Path)
					err = nil
				}
			}
			return errors.Join(err, clean.Flush())
		},
	}
	addTeamFlags(cmd, &teamFile, false)
	cmd.Flags().IntVarP(&lines, "lines", "n", 50, "print the last N lines")
	cmd.Flags().BoolVar(&all, "all", false, "every agent's transcript, interleaved in time order, each line prefixed with the agent's name")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until interrupted (the team file is --team)")
	cmd.Flags().Var(&color, "color", "colours: auto (when stdout is a terminal and NO_COLOR is unset), always or never")
	_ = cmd.RegisterFlagCompletionFunc("color", cobra.FixedCompletions([]cobra.Completion{colorAuto, colorAlways, colorNever}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().DurationVar(&rescan, "rescan", logtail.DefaultRescan, "with -f, check the transcript this often even without file system events")
	_ = cmd.Flags().MarkHidden("rescan")
	return withUsageExit(cmd)
}

// maxLen returns the length of the longest of names.
func maxLen(names []string) int {
	n := 0
	for _, s := range names {
		n = max(n, len(s))
	}
	return n
}

// looksLikeTeamFile reports whether a `batty logs` argument is probably a
// team file given where an agent was expected (as in `batty logs -f
// team.yaml`, with -f meaning --follow here): it ends in .yaml or .yml, or
// names an existing file. It is a pure function of arg and isFile.
func looksLikeTeamFile(arg string, isFile func(string) bool) bool {
	lower := strings.ToLower(arg)
	return strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml") || isFile(arg)
}

// isRegularFile reports whether path names an existing regular file.
func isRegularFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// teamFileHint is the usage error for a team file given as an argument of
// `batty logs`.
func teamFileHint(cmd *cobra.Command, file string, args []string) error {
	agent := "<agent>"
	for _, a := range args {
		if a != file {
			agent = a
			break
		}
	}
	return usageError(cmd, "%q looks like a team file: in batty logs, -f means --follow (as in kubectl); name the team file with --team: batty logs --team %s -f %s",
		file, file, agent)
}

// The values of --color.
const (
	colorAuto   = "auto"
	colorAlways = "always"
	colorNever  = "never"
)

// colorMode is the value of a --color flag: auto, always or never.
type colorMode string

func (c *colorMode) String() string { return string(*c) }
func (c *colorMode) Type() string   { return "when" }

// Set accepts auto, always or never.
func (c *colorMode) Set(s string) error {
	switch s {
	case colorAuto, colorAlways, colorNever:
		*c = colorMode(s)
		return nil
	}
	return fmt.Errorf("want auto, always or never, not %q", s)
}

// stripColor decides whether `batty logs` strips the transcript's colours:
// never with --color=always, always with --color=never, and with
// --color=auto when stdout is not a terminal or NO_COLOR is set
// (IOStreams.NoColor). It is a pure function.
func stripColor(mode colorMode, terminal, noColor bool) bool {
	switch mode {
	case colorAlways:
		return false
	case colorNever:
		return true
	}
	return !terminal || noColor
}
