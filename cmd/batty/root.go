package main

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/cmd/batty/internal/iostreams"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/shim"
	"github.com/battyhq/batty/shim/shimconfig"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// exitError carries a process exit code through cobra.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Help groups of the top-level commands.
const (
	groupTeam     = "team"
	groupMessages = "messages"
	groupInspect  = "inspect"
	groupWork     = "work"
	groupAgent    = "agent"
	groupSetup    = "setup"
)

// commandGroups places each top-level command in a help group by name. A
// command missing here would be listed under "Additional Commands";
// TestEveryCommandHasAGroupAndExamples catches that.
var commandGroups = map[string]string{
	"start": groupTeam, "stop": groupTeam, "attach": groupTeam,
	"pause": groupTeam, "resume": groupTeam, "reset": groupTeam, "restart": groupTeam,
	"send": groupMessages, "inbox": groupMessages, "cancel": groupMessages,
	"merge": groupWork, "diff": groupWork, "workspace": groupWork,
	"review": groupWork, "approve": groupWork, "reject": groupWork,
	"status": groupInspect, "logs": groupInspect, "usage": groupInspect, "web": groupInspect,
	"threads": groupInspect, "search": groupInspect, "blame": groupInspect, "show": groupInspect,
	"chat": groupAgent, "fanout": groupAgent,
	"init": groupSetup, "validate": groupSetup, "demo": groupSetup, "doctor": groupSetup,
	"version": groupSetup, "completion": groupSetup, "help": groupSetup,
}

// guidePages names, per top-level command, the page of the user guide
// (docs/guide/ in batty's repository) that explains it; a subcommand
// shares its parent's. TestEveryCommandNamesAGuidePage checks that every
// command has one and that it exists.
var guidePages = map[string]string{
	"init": "team.md", "validate": "team.md", "doctor": "team.md", "start": "team.md", "stop": "team.md",
	"restart": "team.md", "pause": "team.md", "resume": "team.md", "reset": "team.md",
	"send": "team.md", "inbox": "team.md", "cancel": "team.md", "version": "team.md",
	"completion": "team.md", "help": "team.md", "daemon": "team.md",
	"status": "watch.md", "logs": "watch.md", "usage": "usage-and-review.md", "review": "usage-and-review.md", "approve": "usage-and-review.md", "reject": "usage-and-review.md", "attach": "watch.md", "feed": "watch.md",
	"merge": "worktrees.md", "diff": "worktrees.md", "workspace": "worktrees.md",
	"chat": "schedules-and-fanout.md", "fanout": "schedules-and-fanout.md",
	"shim": "hosts.md", "preflight": "hosts.md", "clone-host": "hosts.md",
	"demo": "demo.md", "threads": "memory.md", "search": "memory.md", "blame": "memory.md", "show": "memory.md",
}

// guideDir is where the user guide lives, relative to the repository.
const guideDir = "docs/guide/"

// withGuide returns the long help long (short when long is empty) ended by
// a line naming the guide page page; the root's names the guide's index.
// Pure.
func withGuide(long, short, page string) string {
	if long == "" {
		long = short
	}
	return strings.TrimRight(long, "\n") + "\n\nSee " + guideDir + page + " for the whole story."
}

// newRoot builds the whole command tree on the streams ios: cobra's
// InOrStdin, OutOrStdout and ErrOrStderr of every command are ios's, and
// a command that asks whether a stream is a terminal asks ios. Every
// command of it exits with exitUsage (2) for a command line that cannot be
// run — an unknown command or flag, a bad flag value, a wrong number of
// arguments — and with 1 for a runtime error (see execute).
func newRoot(ios *iostreams.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "batty",
		Short: "Run a team of Codex agents as one crew",
		Long: `batty runs a team of Codex CLI agents as one crew: a daemon keeps one
Codex conversation per agent, messages travel through durable inboxes, and
transcripts show what every agent does.

The team file is the team of $` + agentenv.Dir + ` when it is set, else team.yaml
(or .batty/team.yaml) in this directory or the nearest parent that has one,
as git finds its repository; never one found inside batty's state (an
agent's worktree, worktrees/<agent> in the state directory). The commands that work on
a team take another with --team FILE, and all of them but logs (where -f
is --follow) with -f FILE too; init, demo and chat take none.

Exit status: 0 ok, 1 error, 2 usage (unknown command or flag, bad flag value,
wrong arguments).`,
		Example: `  batty init && batty start
  batty send architect "design a CLI that converts CSV to JSON"
  batty status
  batty logs -f architect`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	root.SetVersionTemplate(fmt.Sprintf("batty {{.Version}} (protocol %d)\n", protocol.Version))
	// --version only: -v stays free, as in gh.
	root.Flags().Bool("version", false, "print batty's version and protocol version")
	root.AddGroup(
		&cobra.Group{ID: groupTeam, Title: "Team:"},
		&cobra.Group{ID: groupMessages, Title: "Messages:"},
		&cobra.Group{ID: groupInspect, Title: "Inspect:"},
		&cobra.Group{ID: groupWork, Title: "Worktrees and landing:"},
		&cobra.Group{ID: groupAgent, Title: "Without the daemon:"},
		&cobra.Group{ID: groupSetup, Title: "Setup:"},
	)
	f := newFactory(ios)
	root.AddCommand(newVersionCmd(f), newShimCmd(f), newPreflightCmd(f), newCloneHostCmd(f), newChatCmd(f), newFanoutCmd(f),
		newStartCmd(f), newDaemonCmd(ios), newStopCmd(f), newStatusCmd(f), newPauseCmd(f, true), newPauseCmd(f, false), newResetCmd(f))
	root.AddCommand(newSendCmd(f), newInboxCmd(f), newLogsCmd(f), newUsageCmd(f), newInitCmd(f), newValidateCmd(f))
	root.AddCommand(newDemoCmd(f), newDoctorCmd(f))
	root.AddCommand(newCancelCmd(f), newRestartCmd(f))
	root.AddCommand(newAttachCmd(f), newFeedCmd(f))
	root.AddCommand(newMergeCmd(f), newDiffCmd(f), newWorkspaceCmd(f))
	root.AddCommand(newReviewCmd(f), newApproveCmd(f), newRejectCmd(f))
	root.AddCommand(newWebCmd(f))
	root.AddCommand(newThreadsCmd(f), newSearchCmd(f), newBlameCmd(f), newShowCmd(f))
	root.SetHelpCommand(newHelpCmd(f))
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	finishTree(root)
	return root
}

// finishTree gives every command of the tree its help group, usage exit
// codes and, for a command that only groups others (completion), an error
// for an unknown subcommand instead of a silent help text.
func finishTree(root *cobra.Command) {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError(c, "%v", err)
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		// A mistyped subcommand within two edits of a real one (or a
		// prefix of one) is offered as "did you mean"; cobra's own
		// default of 0 suggests prefixes only.
		c.SuggestionsMinimumDistance = suggestDistance
		if c.Parent() == root && c.GroupID == "" {
			c.GroupID = commandGroups[c.Name()]
		}
		if page := guidePageOf(root, c); page != "" {
			c.Long = withGuide(c.Long, c.Short, page)
		}
		if c.Name() == "completion" && c.Parent() == root {
			c.Example = `  source <(batty completion bash)
  batty completion zsh > "${fpath[1]}/_batty"
  batty completion fish > ~/.config/fish/completions/batty.fish`
			for _, sh := range c.Commands() {
				sh.Example = map[string]string{
					"bash":       "  source <(batty completion bash)",
					"zsh":        `  batty completion zsh > "${fpath[1]}/_batty"`,
					"fish":       "  batty completion fish | source",
					"powershell": "  batty completion powershell | Out-String | Invoke-Expression",
				}[sh.Name()]
			}
		}
		if c != root && !c.Runnable() && c.HasSubCommands() {
			c.Args = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return unknownCommand(cmd, args[0])
				}
				return nil
			}
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
		if c.Args != nil {
			c.Args = usageArgs(c.Args)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// guidePageOf returns the guide page of c: the guide's index for the
// root, else its top-level command's page ("" when it has none).
func guidePageOf(root, c *cobra.Command) string {
	if c == root {
		return "README.md"
	}
	for c.Parent() != root {
		c = c.Parent()
	}
	return guidePages[c.Name()]
}

// suggestDistance is the largest number of edits (Levenshtein distance)
// between a mistyped subcommand and a real one that "did you mean" offers.
const suggestDistance = 2

// unknownCommand is the usage error for a subcommand name cmd does not have.
func unknownCommand(cmd *cobra.Command, name string) error {
	return usageError(cmd, "unknown command %q%s", name, didYouMean(cmd, name))
}

// didYouMean is the hint for a subcommand name cmd does not have: "; did
// you mean X?" naming cmd's subcommands close to name (see
// suggestDistance), or "" when none is.
func didYouMean(cmd *cobra.Command, name string) string {
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		return "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return ""
}

// newHelpCmd returns `batty help [command]`: cobra's help command, except
// that an unknown topic is a usage error (exit 2).
func newHelpCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "help prints the help of a command: its usage, flags and examples.",
		Example: `  batty help send
  batty send --help`,
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, sub := range target.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil {
				return usageError(c, "%v", err)
			}
			if len(rest) > 0 && target.HasSubCommands() {
				return usageError(c, "unknown help topic %q%s (run 'batty --help' for the commands)", strings.Join(args, " "), didYouMean(target, rest[0]))
			}
			target.InitDefaultHelpFlag()
			target.InitDefaultVersionFlag()
			return target.Help()
		},
	}
}

// execute runs the CLI with args on the streams ios and returns the exit
// code: 0 ok, 1 error, 2 usage. It blocks until the command ends.
func execute(ios *iostreams.IOStreams, args []string) int {
	root := newRoot(ios)
	root.SetArgs(args)
	err := root.Execute()
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		// An error may quote what batty read (codex's output, a file, the
		// daemon's answer): made safe for the terminal, lines kept.
		fmt.Fprintln(ios.ErrOut, "batty:", safetext.Text(err.Error()))
		return 1
	}
}

func versionString() string {
	v := version
	if v == "" {
		v = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	return v
}

func newVersionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print batty's version and protocol version",
		Long:  "version prints batty's version and the version of the protocol between batty and its shims; batty --version prints the same.",
		Example: `  batty version
  batty --version`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "batty %s (protocol %d)\n", versionString(), protocol.Version)
			return nil
		},
	}
}

func newShimCmd(f *Factory) *cobra.Command {
	var cfg shimconfig.Config
	cmd := &cobra.Command{
		Use:                "shim",
		Short:              "Run one agent (started by batty with its control socket on fd 3)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := shim.Main(args); code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	cmd.Flags().AddFlagSet(cfg.FlagSet())
	return cmd
}
