package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/offline"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/workspaces"
)

// reviewWait bounds the git commands `batty review` runs.
const reviewWait = 30 * time.Second

func newReviewCmd(f *Factory) *cobra.Command {
	var teamFile string
	cmd := &cobra.Command{
		Use:   "review",
		Short: "List the landings that wait for your review",
		Long: `review lists the landings that passed verify and wait for the human's
approval before they land: those an agent asked for when the team file sets
workspace.review: human, those asked with batty merge --review, and anyone's
whose merge changes a protected path (.codex/, .github/, .envrc, hook
directories …: docs/config.md, workspace.protected). For each:
the agent, its branch and the commit verified (the one an approval is of),
the commits and files it brings to the base branch, and verify's result.
Then batty approve lands it (merged again onto the latest base and verified
again first), batty reject --reason tells the agent why it does not.

A request waiting for review holds no other landing up. It works with the
team running or stopped (it then reads the state files). Commit subjects
and file names are the agent's: shown cleaned, one line each.`,
		Example: `  batty review
  batty approve engineer-1
  batty reject engineer-1 --reason "keep the old flag as an alias"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, cfg, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			client := f.Daemon(p)
			resp, _, err := client.callOr(control.Request{Op: control.OpStatus}, 10*time.Second, func() (control.Response, error) {
				st, err := offline.Status(cfg, p.Layout)
				return control.Response{Status: &st}, err
			})
			if err != nil {
				return err
			}
			if resp.Status == nil {
				return errors.New("the daemon's answer to status has no status")
			}
			var waiting []control.LandingStatus
			for _, l := range resp.Status.Landings {
				if l.State == string(landing.Review) {
					waiting = append(waiting, l)
				}
			}
			out := cmd.OutOrStdout()
			if len(waiting) == 0 {
				fmt.Fprintln(out, "no landing waits for review")
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), reviewWait)
			defer cancel()
			repo, base, err := openTeamRepo(ctx, p, cfg)
			if err != nil {
				return err
			}
			g := workspaces.Git{Dir: repo.TopLevel()}
			for i, l := range waiting {
				if i > 0 {
					fmt.Fprintln(out)
				}
				r := landing.Request{ID: l.ID, Agent: l.Agent, Branch: landing.BranchOf(l.Agent), Tip: l.Tip, BaseBefore: l.Onto}
				sum, serr := landing.Summarize(ctx, g, r)
				now, terr := g.Run(ctx, "rev-parse", "-q", "--verify", "refs/heads/"+r.Branch+"^{commit}")
				if terr != nil {
					now = ""
				}
				printReview(out, l, base, cfg.Workspace.Verify, strings.TrimSpace(now), sum, serr)
			}
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	return withUsageExit(cmd)
}

// printReview writes one landing waiting for review: who and what, verify's
// result, its commits and files (or why they cannot be listed: sumErr),
// whether the branch moved since (tipNow, "" when unknown), and the
// commands that decide. Every text of the agent's is one clean line.
func printReview(w io.Writer, l control.LandingStatus, base, verify, tipNow string, sum landing.Summary, sumErr error) {
	agent := safetext.Line(l.Agent, 0)
	branch := landing.BranchOf(agent)
	fmt.Fprintf(w, "%s  %s at %s  (request %s, asked by %s at %s)\n", agent, branch, shortCommit(l.Tip),
		safetext.Line(inbox.ShortID(l.ID), 20), or(safetext.Line(l.By, 0), "-"), l.RequestedAt.Local().Format("2006-01-02 15:04:05"))
	if verify == "" {
		fmt.Fprintf(w, "  verify: none set (workspace.verify): merged onto %s at %s, nothing checked\n", base, shortCommit(l.Onto))
	} else {
		fmt.Fprintf(w, "  verify: passed on it merged onto %s at %s: %s\n", base, shortCommit(l.Onto), safetext.Line(verify, 200))
	}
	if len(l.Protected) > 0 {
		// Held whatever workspace.review says: the human sees why.
		fmt.Fprintf(w, "  changes protected paths (%d), which land only once you approve:\n", max(l.ProtectedTotal, len(l.Protected)))
		for _, p := range l.Protected {
			fmt.Fprintf(w, "    %s\n", safetext.Line(p, 300))
		}
		if more := l.ProtectedTotal - len(l.Protected); more > 0 {
			fmt.Fprintf(w, "    … and %d more\n", more)
		}
	}
	if tipNow != "" && tipNow != l.Tip {
		fmt.Fprintf(w, "  %s moved since, to %s: an approval has the new commits verified and reviewed again\n", branch, shortCommit(tipNow))
	}
	if sumErr != nil {
		fmt.Fprintf(w, "  (its commits and files cannot be listed: %s)\n", safetext.Line(sumErr.Error(), 300))
	} else {
		fmt.Fprintf(w, "  commits (%d):\n", len(sum.Commits)+sum.MoreCommits)
		for _, c := range sum.Commits {
			fmt.Fprintf(w, "    %s\n", safetext.Line(c, 200))
		}
		if sum.MoreCommits > 0 {
			fmt.Fprintf(w, "    … and %d more\n", sum.MoreCommits)
		}
		fmt.Fprintf(w, "  files (%d):\n", len(sum.Files)+sum.MoreFiles)
		for _, f := range sum.Files {
			fmt.Fprintf(w, "    %s\n", safetext.Line(strings.Replace(f, "\t", "  ", 1), 300))
		}
		if sum.MoreFiles > 0 {
			fmt.Fprintf(w, "    … and %d more\n", sum.MoreFiles)
		}
	}
	fmt.Fprintf(w, "  batty diff %s shows the branch; batty approve %s lands it, batty reject %s --reason \"...\" tells %s why not\n",
		agent, agent, agent, agent)
}

// shortCommit abbreviates a commit id for the terminal
// (statusview.ShortCommit), "-" for none. It is a pure function.
func shortCommit(c string) string { return or(statusview.ShortCommit(c), "-") }

// notRunningReview is the error of approve and reject for a stopped team:
// they go through the daemon, which lands the request or tells the agent.
func notRunningReview(verb string, err error) error {
	if errors.Is(err, control.ErrNotRunning) {
		return fmt.Errorf("the team is not running: batty %s goes through its daemon (which lands the request, or tells the agent why not); "+
			"start it with `batty start`: the request keeps waiting for review meanwhile", verb)
	}
	return err
}

func newApproveCmd(f *Factory) *cobra.Command {
	var teamFile string
	cmd := &cobra.Command{
		Use:   "approve <agent|request>",
		Short: "Approve a landing that waits for your review: it lands",
		Long: `approve approves the landing that waits for review (batty review lists
them) of an agent, or the request named by its id (the short form batty
status shows will do). The approval is of the commit batty review showed
(the branch's tip that was verified): when the agent's branch moved since,
nothing is approved: its new commits are verified and wait for your review
again (exit status 1, saying so). An approved request lands as any other:
merged onto the base branch as it is then and verified again, since base may
have moved while it waited.

The team must be running (batty start): the daemon lands it. Only the
human may approve: the command refuses to run inside an agent's Codex.

Exit status: 0 approved, 1 not approved (named, moved since, or an error).`,
		Example: `  batty approve engineer-1
  batty approve 1f2e3d4c`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, _, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			resp, err := callReview(f, p, control.Request{Op: control.OpApprove, Landing: args[0]})
			if err != nil {
				return notRunningReview("approve", err)
			}
			l := resp.Landing
			if resp.Requeued != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "batty: not approved: %s\n", safetext.Line(resp.Requeued, 0))
				return exitError{1}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "approved the landing of %s at %s (request %s): it lands once verified on the latest base; `batty status` follows it\n",
				landing.BranchOf(safetext.Line(l.Agent, 0)), shortCommit(l.Approved), safetext.Line(inbox.ShortID(l.ID), 20))
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.ValidArgsFunction = f.completeWorktreeAgents(&teamFile, false)
	return withUsageExit(cmd)
}

func newRejectCmd(f *Factory) *cobra.Command {
	var teamFile, reason string
	cmd := &cobra.Command{
		Use:   "reject <agent|request> --reason TEXT",
		Short: "Reject a landing that waits for your review, telling the agent why",
		Long: `reject rejects the landing that waits for review of an agent (or the
request named by its id): the request fails, the base branch is unchanged,
and the agent gets a message with your reason, to act on it and ask again
with batty merge. --reason is required.

The team must be running (batty start): the daemon tells the agent. Only
the human may reject: the command refuses to run inside an agent's Codex.`,
		Example: `  batty reject engineer-1 --reason "keep the old flag as an alias"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return usageError(cmd, "--reason is required: the agent is told why, to act on it")
			}
			p, _, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			resp, err := callReview(f, p, control.Request{Op: control.OpReject, Landing: args[0], Reason: reason})
			if err != nil {
				return notRunningReview("reject", err)
			}
			l := resp.Landing
			fmt.Fprintf(cmd.OutOrStdout(), "rejected the landing of %s (request %s); %s is told why\n",
				landing.BranchOf(safetext.Line(l.Agent, 0)), safetext.Line(inbox.ShortID(l.ID), 20), safetext.Line(l.Agent, 0))
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().StringVar(&reason, "reason", "", "why: the agent is told, to act on it (required)")
	cmd.ValidArgsFunction = f.completeWorktreeAgents(&teamFile, false)
	return withUsageExit(cmd)
}

// callReview sends an approve or reject request to the project's daemon;
// an answer without the request is an error.
func callReview(f *Factory, p project.Project, req control.Request) (control.Response, error) {
	resp, err := f.Daemon(p).call(req, 60*time.Second)
	if err != nil {
		return resp, err
	}
	if resp.Landing == nil {
		return resp, fmt.Errorf("the daemon's answer to %s has no landing request", req.Op)
	}
	return resp, nil
}
