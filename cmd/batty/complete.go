package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/agentenv"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/workspaces"
)

// teamFlagUsage describes the team file flags.
const teamFlagUsage = "team file (default ./team.yaml, else ./.batty/team.yaml, or the team of $" + agentenv.Dir + ")"

// addTeamFlags registers the flags that name the team file: --team FILE on
// every command, and -f/--file FILE as well when short is set (every command
// but logs, where -f means --follow as in kubectl). Both set *teamFile and
// complete YAML files.
func addTeamFlags(cmd *cobra.Command, teamFile *string, short bool) {
	cmd.Flags().StringVar(teamFile, "team", "", teamFlagUsage)
	names := []string{"team"}
	if short {
		cmd.Flags().StringVarP(teamFile, "file", "f", "", teamFlagUsage+"; the same as --team")
		names = append(names, "file")
	}
	for _, n := range names {
		_ = cmd.RegisterFlagCompletionFunc(n, func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return []cobra.Completion{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
		})
	}
}

// nameSet selects which names of a team complete an argument.
type nameSet uint8

const (
	namesAgents nameSet = 1 << iota // every agent
	namesQueues                     // roles with several instances (their shared queue)
	namesHuman                      // "human"
)

// completeNames returns a completion function for the first argument of a
// command: the names in set of the team that *teamFile (or the default
// lookup) names. Later arguments complete nothing. A team file that cannot
// be loaded completes nothing.
func (f *Factory) completeNames(teamFile *string, set nameSet) cobra.CompletionFunc {
	return f.completeFirstArg(teamFile, func(cfg *team.Config, toComplete string) ([]cobra.Completion, bool) {
		return teamNames(cfg, set, "", toComplete), true
	})
}

// completeFirstArg completes the first argument of a command with what
// names returns for the team that *teamFile (or the default lookup)
// names; later arguments, a team file that cannot be loaded, or names
// returning false complete nothing.
func (f *Factory) completeFirstArg(teamFile *string, names func(cfg *team.Config, toComplete string) ([]cobra.Completion, bool)) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		_, cfg, err := f.Team(*teamFile)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		out, ok := names(cfg, toComplete)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeRecipients completes the recipient of `batty send`: whom the
// sender (see currentSender) may message.
func (f *Factory) completeRecipients(teamFile, from *string) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		_, cfg, err := f.Team(*teamFile)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		sender, err := currentSender(*from)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		set := namesAgents | namesQueues
		if sender != team.Human {
			set |= namesHuman
		}
		return teamNames(cfg, set, sender, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// teamNames lists, with a description each, the names in set of cfg that
// start with prefix. With a sender other than "" or the human, only the
// names the sender may message are listed (talks_to). It is a pure
// function.
func teamNames(cfg *team.Config, set nameSet, sender, prefix string) []cobra.Completion {
	var out []cobra.Completion
	add := func(name, desc string) {
		if strings.HasPrefix(name, prefix) {
			out = append(out, cobra.CompletionWithDesc(name, desc))
		}
	}
	restricted := sender != "" && sender != team.Human
	mayReach := func(to string) bool {
		if !restricted {
			return true
		}
		_, err := recipientBox(cfg, sender, to)
		return err == nil
	}
	if set&namesHuman != 0 {
		add(team.Human, "you")
	}
	if set&namesAgents != 0 {
		for _, a := range cfg.Agents() {
			if a.Name != sender && mayReach(a.Name) {
				add(a.Name, "agent, role "+a.Role)
			}
		}
	}
	if set&namesQueues != 0 {
		for _, r := range cfg.Roles {
			if r.Instances > 1 && mayReach(r.Name) {
				add(r.Name, "role: the first free of its instances")
			}
		}
	}
	return out
}

// completeWorktreeAgents completes the agent of merge, diff and workspace
// prune: the agents of the team that work in a worktree of their own. With
// landing (merge) run inside an agent, only those whose branch it may land
// (team.MayLand).
func (f *Factory) completeWorktreeAgents(teamFile *string, landing bool) cobra.CompletionFunc {
	return f.completeFirstArg(teamFile, func(cfg *team.Config, toComplete string) ([]cobra.Completion, bool) {
		sender := ""
		if landing {
			var err error
			if sender, err = currentSender(""); err != nil {
				return nil, false
			}
		}
		return worktreeNames(cfg, sender, toComplete), true
	})
}

// worktreeNames lists, with a description each, the agents of cfg that
// work in a worktree of their own and whose names start with prefix; with
// a sender other than "", only those whose branch sender may land
// (team.MayLand). It is a pure function.
func worktreeNames(cfg *team.Config, sender, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, a := range cfg.Agents() {
		if a.Workspace != team.WorkspaceWorktree || !strings.HasPrefix(a.Name, prefix) {
			continue
		}
		if sender != "" && !team.MayLand(cfg, sender, a.Name) {
			continue
		}
		out = append(out, cobra.CompletionWithDesc(a.Name, "agent, role "+a.Role+", branch "+workspaces.Branch(a.Name)))
	}
	return out
}
