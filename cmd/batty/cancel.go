package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/offline"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

func newCancelCmd(f *Factory) *cobra.Command {
	var teamFile string
	var interrupt bool
	cmd := &cobra.Command{
		Use:   "cancel <id>... [--interrupt]",
		Short: "Withdraw queued messages (one in flight only with --interrupt)",
		Long: `cancel withdraws messages that wait in an agent's inbox or a role's queue:
each is recorded with the outcome "cancelled" (shown by batty inbox and the
feed) and never runs. An agent that sent one is told that no answer comes.

A message in flight is refused unless --interrupt: then its turn is
interrupted, and the message is recorded as cancelled when the turn ends,
never delivered again. A cancel that reaches an agent in a git or ssh step (a turn's
commit, a merge of the base) is pending: applied once the step ends. An id
may be abbreviated to any unique prefix, or to
the short form the feed shows. It works with the daemon running or stopped.

Exit status: 0 when every message is cancelled (or pending), 1 when one is not found or
refused (each is named).`,
		Example: `  batty cancel 1f2e3d4c
  batty cancel 20261121T125100.123456789Z-1f2e3d4c 9a8b7c6d
  batty cancel --interrupt 1f2e3d4c`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, cfg, err := f.Team(teamFile)
			if err != nil {
				return err
			}
			ids, results := resolveCancelIDs(p.Layout, cfg, args)
			if len(ids) > 0 {
				client := f.Daemon(p)
				req := control.Request{Op: control.OpCancel, IDs: ids, Interrupt: interrupt}
				resp, _, err := client.callOr(req, 60*time.Second, func() (control.Response, error) {
					res, err := offline.Cancel(cfg, p.Layout, ids)
					return control.Response{Cancels: res}, err
				})
				if err != nil {
					return err
				}
				results = append(results, resp.Cancels...)
			}
			if !reportCancels(cmd.OutOrStdout(), cmd.ErrOrStderr(), results) {
				return exitError{1}
			}
			return nil
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().BoolVar(&interrupt, "interrupt", false, "also cancel a message in flight, interrupting its turn")
	return cmd
}

// reportCancels prints one line per result: what was cancelled on out,
// what was not on errOut. It reports whether every message was cancelled.
func reportCancels(out, errOut io.Writer, results []control.CancelResult) bool {
	all := true
	for _, r := range results {
		where := ""
		if r.Box != "" {
			where = " (" + r.Box + ")"
		}
		switch r.Result {
		case control.CancelDone:
			fmt.Fprintf(out, "batty: cancelled %s%s\n", r.ID, where)
		case control.CancelInterrupting:
			fmt.Fprintf(out, "batty: cancelling %s%s: its turn is interrupted; recorded as cancelled when it ends\n", r.ID, where)
		case control.CancelPending:
			fmt.Fprintf(out, "batty: cancelling %s%s: its agent is in a git or ssh step; cancelled once the step ends (batty status shows it pending, the feed a warning if it cannot be)\n", r.ID, where)
		case control.CancelNotFound:
			all = false
			fmt.Fprintf(errOut, "batty: %s: not found: %s\n", r.ID, r.Detail)
		default:
			all = false
			fmt.Fprintf(errOut, "batty: %s%s: not cancelled: %s\n", r.ID, where, r.Detail)
		}
	}
	return all
}

// resolveCancelIDs expands each argument to the full id of a message
// waiting or in flight in the team's queues, else of one finished there
// (see expandMessageID; the daemon's answer then says so). It
// returns the ids to cancel, and a not-found result for each argument
// that names no message or several.
func resolveCancelIDs(l project.Layout, cfg *team.Config, args []string) ([]string, []control.CancelResult) {
	var live, done []string
	for _, box := range offline.QueueBoxes(cfg) {
		dir := filepath.Join(l.Inboxes(), box)
		live = append(live, messageIDsIn(filepath.Join(dir, inbox.StateNew))...)
		live = append(live, messageIDsIn(filepath.Join(dir, inbox.StateCur))...)
		done = append(done, messageIDsIn(filepath.Join(dir, inbox.StateDone))...)
	}
	var ids []string
	var bad []control.CancelResult
	for _, a := range args {
		// The messages that may still be cancelled first: an abbreviation
		// is not made ambiguous by the history.
		id, err := expandMessageID(a, live)
		if err == nil && id == a {
			id, err = expandMessageID(a, done)
		}
		if err != nil {
			bad = append(bad, control.CancelResult{ID: a, Result: control.CancelNotFound, Detail: err.Error()})
			continue
		}
		ids = append(ids, id)
	}
	return ids, bad
}

// messageIDsIn lists the ids of the message files in dir, none when it
// cannot be read. It only reads names.
func messageIDsIn(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && inbox.ValidID(id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// expandMessageID returns the id among known that arg names, as every
// command resolves an id (inbox.ResolveID: the id itself, its short form,
// or the only one it abbreviates). An arg that names none is returned as
// it is (the queues answer for it); one that names several is an error
// listing them. It is a pure function.
func expandMessageID(arg string, known []string) (string, error) {
	id, err := inbox.ResolveID(known, arg)
	if errors.Is(err, inbox.ErrNotFound) {
		return arg, nil
	}
	return id, err
}
