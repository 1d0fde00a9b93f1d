package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/cockpit"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/logtail"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/team"
)

// newFeedCmd returns the hidden `batty feed`: the cockpit's orchestrator
// pane, one readable line per event of .batty/events.jsonl, followed.
func newFeedCmd(f *Factory) *cobra.Command {
	var (
		teamFile string
		lines    int
		follow   bool
	)
	cmd := &cobra.Command{
		Use:    "feed [--team FILE] [-n N] [--follow]",
		Short:  "Print the team's events as readable lines (the cockpit's orchestrator pane)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := f.Project(teamFile)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fw := &feedWriter{w: out, color: f.IOStreams.ColorEnabled()}
			t := &logtail.Tail{Path: p.Layout.EventsLog(), Label: "event log", Out: fw, Notice: cmd.ErrOrStderr(), DimNotices: fw.color && f.IOStreams.IsStderrTTY()}
			if !follow {
				err := t.PrintLast(lines)
				if errors.Is(err, logtail.ErrNoFile) {
					fmt.Fprintf(cmd.ErrOrStderr(), "batty: no events yet (%s)\n", t.Path)
					err = nil
				}
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return t.Follow(ctx, lines, logtail.DefaultRescan)
		},
	}
	addTeamFlags(cmd, &teamFile, false)
	cmd.Flags().IntVarP(&lines, "lines", "n", 30, "print the last N events first")
	cmd.Flags().BoolVar(&follow, "follow", true, "keep printing new events until interrupted")
	return withUsageExit(cmd)
}

// feedWriter turns the bytes of the event log into readable lines: it
// renders every complete line and keeps a partial one for the next write.
// A line that is not an event is shown as it is, sanitized.
type feedWriter struct {
	w       io.Writer
	color   bool
	partial []byte
}

// maxFeedLine bounds a partial line kept between writes.
const maxFeedLine = 1 << 20

func (f *feedWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(f.partial)+len(p) <= maxFeedLine {
				f.partial = append(f.partial, p...)
			}
			break
		}
		line := p[:i]
		if len(f.partial) > 0 {
			line = append(f.partial, line...)
			f.partial = f.partial[:0]
		}
		p = p[i+1:]
		if s := renderFeedLine(line, f.color); s != "" {
			if _, err := io.WriteString(f.w, s+"\n"); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// ANSI styles of the feed.
const (
	feedRed    = "\x1b[31m"
	feedYellow = "\x1b[33m"
	feedGreen  = "\x1b[32m"
	feedDim    = "\x1b[2m"
	feedReset  = "\x1b[0m"
)

// renderFeedLine renders one line of the event log ("" for the events not
// worth a line, such as state changes the pane titles show). It never
// panics, whatever the line holds.
func renderFeedLine(line []byte, color bool) string {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return ""
	}
	e, err := eventlog.Decode(line)
	if err != nil || e.Type == "" {
		return feedLine("? " + string(line))
	}
	return renderFeedEvent(e, color)
}

// renderFeedEvent renders one event as renderFeedLine renders its line of
// the event log ("" for the events not worth a line): the time, then the
// text of feedText, styled when color. `batty feed` and the foreground
// daemon (`batty start --foreground`) print it.
func renderFeedEvent(e eventlog.Event, color bool) string {
	style, text := feedText(e)
	if text == "" {
		return ""
	}
	ts := "--:--:--"
	if !e.Time.IsZero() {
		ts = e.Time.Local().Format("15:04:05")
	}
	s := ts + " " + feedLine(text)
	if color && style != "" {
		return style + s + feedReset
	}
	return s
}

// feedLine makes s one line safe for the terminal (safetext.Line): no
// escapes, control or bidirectional characters shown escaped, at most 400
// runes.
func feedLine(s string) string { return safetext.Line(s, 400) }

// feedText returns the style and text of one event ("" to leave it out).
func feedText(e eventlog.Event) (style, text string) {
	id := inbox.ShortID(e.Message)
	tag := "" // "ALERT " on the events the cockpit shows as alerts
	if _, ok := cockpit.ShownAlert(e); ok {
		tag = "ALERT "
	}
	switch e.Type {
	case eventlog.EvDaemonStarted:
		d, _ := e.Data.(eventlog.DaemonStarted)
		return feedGreen, fmt.Sprintf("▶ team %s started (daemon pid %d)", d.Team, d.PID)
	case eventlog.EvDaemonStopped:
		return feedDim, "■ team stopped"
	case eventlog.EvShimStarted:
		d, _ := e.Data.(eventlog.ShimStarted)
		return feedDim, fmt.Sprintf("  %s: worker started (pid %d)", e.Agent, d.PID)
	case eventlog.EvShimExited:
		if e.Detail != "" {
			return feedYellow, fmt.Sprintf("  %s: worker exited: %s", e.Agent, e.Detail)
		}
		d, _ := e.Data.(eventlog.ShimExited)
		return feedDim, fmt.Sprintf("  %s: worker exited (status %d)", e.Agent, d.ExitCode)
	case eventlog.EvAgentFailed:
		return feedRed, fmt.Sprintf("✘ %s%s failed: %s", tag, e.Agent, e.Detail)
	case eventlog.EvStateChanged, eventlog.EvThreadChanged:
		return "", "" // the pane titles show states
	case eventlog.EvDelivered:
		d, _ := e.Data.(eventlog.Delivered)
		s := fmt.Sprintf("→ %s ← %s: message %s", e.Agent, d.From, id)
		if d.InReplyTo != "" {
			s = fmt.Sprintf("→ %s ← %s: reply to message %s", e.Agent, d.From, inbox.ShortID(d.InReplyTo))
		}
		if d.Attempt > 1 {
			s += fmt.Sprintf(" (attempt %d)", d.Attempt)
		}
		return "", s
	case eventlog.EvRouted:
		return feedDim, fmt.Sprintf("  %s → %s: message %s", e.Detail, e.Agent, id)
	case eventlog.EvSlotGranted:
		return feedDim, fmt.Sprintf("  %s: slot granted (%s)", e.Agent, e.Detail)
	case eventlog.EvTurnFinished:
		return turnText(e, id)
	case eventlog.EvRequeued:
		return feedYellow, fmt.Sprintf("↺ %s: message %s back in the queue (%s)", e.Agent, id, e.Detail)
	case eventlog.EvRejected:
		return feedYellow, fmt.Sprintf("✘ %s: message %s refused: %s", e.Agent, id, e.Detail)
	case eventlog.EvCancelled:
		d, _ := e.Data.(eventlog.Cancelled)
		s := fmt.Sprintf("✘ %s: message %s from %s cancelled", orDash(e.Agent+d.Queue), id, orDash(d.From))
		if d.Interrupted {
			s += " (its turn interrupted)"
		}
		return feedYellow, s
	case eventlog.EvReply:
		if d, _ := e.Data.(eventlog.Reply); d.To != "" && d.To != team.Human {
			return "", fmt.Sprintf("✉ %s answered %s: reply %s to message %s", e.Agent, d.To, id, inbox.ShortID(d.InReplyTo))
		}
		return feedGreen, fmt.Sprintf("✉ %s answered you: batty inbox", e.Agent)
	case eventlog.EvRecordFailed:
		return feedRed, fmt.Sprintf("⚠ %s%s: cannot record the outcome, it waits and tries again: %s", tag, e.Agent, e.Detail)
	case eventlog.EvRecordRecovered:
		return feedGreen, fmt.Sprintf("▶ %s: outcome of message %s recorded (%s); the agent goes on", e.Agent, id, e.Detail)
	case eventlog.EvMemoryLow:
		return feedRed, fmt.Sprintf("⚠ %sfree memory is low, no new turn starts here: %s", tag, e.Detail)
	case eventlog.EvMemoryRecovered:
		return feedGreen, "▶ free memory is back (" + e.Detail + "); turns start again"
	case eventlog.EvPaused:
		return feedYellow, "⏸ dispatch paused: " + e.Detail
	case eventlog.EvResumed:
		return feedGreen, "▶ dispatch resumed: " + e.Detail
	case eventlog.EvQuotaBlocked:
		s := fmt.Sprintf("⚠ %squota exhausted (%s): %s", tag, e.Agent, e.Detail)
		if d, _ := e.Data.(eventlog.QuotaBlocked); !d.RetryAt.IsZero() {
			s += "; the team waits until " + d.RetryAt.Local().Format("15:04")
		}
		return feedRed, s
	case eventlog.EvAuthRequired:
		return feedRed, fmt.Sprintf("⚠ %scodex needs a login (%s): run `codex login`, then `batty resume` — %s", tag, e.Agent, e.Detail)
	case eventlog.EvContextExhaust:
		return feedYellow, fmt.Sprintf("⚠ %s: context window full; the message is retried on a fresh thread", e.Agent)
	case eventlog.EvThreadReset:
		return feedYellow, fmt.Sprintf("  %s: thread reset (%s)", e.Agent, e.Detail)
	case eventlog.EvAgentParked:
		s := fmt.Sprintf("⏸ %s%s parked, its messages wait: %s", tag, e.Agent, e.Detail)
		if d, _ := e.Data.(eventlog.AgentParked); d.Fix != "" && !strings.Contains(e.Detail, d.Fix) {
			s += " — " + d.Fix
		}
		return feedRed, s
	case eventlog.EvAgentUnparked:
		return feedGreen, fmt.Sprintf("▶ %s: codex runs again; its messages go out", e.Agent)
	case eventlog.EvNetworkWaiting:
		return feedRed, fmt.Sprintf("⚠ %s%s: codex waits for the network (%s); its account's agents start nothing new until the API answers", tag, e.Agent, e.Detail)
	case eventlog.EvNetworkRestored:
		return feedGreen, fmt.Sprintf("▶ the API answers again (%s); held work goes on", e.Agent)
	case eventlog.EvRetryScheduled:
		d, _ := e.Data.(eventlog.RetryScheduled)
		return feedYellow, fmt.Sprintf("↺ %s: message %s failed (%s), retried in %s (attempt %d of %d)", e.Agent, id, orDash(e.Detail),
			(time.Duration(d.DelayMS) * time.Millisecond).Round(100*time.Millisecond), d.Attempt, d.MaxAttempts)
	case eventlog.EvMessageFailed:
		d, _ := e.Data.(eventlog.MessageFailed)
		return feedRed, fmt.Sprintf("✘ %s%s: message %s failed on its last try (%d of %d): %s", tag, e.Agent, id, d.Attempts, d.MaxAttempts, e.Detail)
	case eventlog.EvWedged:
		return feedRed, fmt.Sprintf("⚠ %s%s did not answer a ping (%s); restarting it", tag, e.Agent, e.Detail)
	case eventlog.EvWarning:
		return feedYellow, fmt.Sprintf("⚠ %s: %s", orDash(e.Agent), e.Detail)
	case eventlog.EvReviewWaiting:
		return feedYellow, fmt.Sprintf("⏸ %s: %s; batty review, then batty approve or reject", e.Agent, e.Detail)
	case eventlog.EvLandingApproved:
		return feedGreen, fmt.Sprintf("✔ %s: %s", e.Agent, e.Detail)
	case eventlog.EvLandingRejected:
		d, _ := e.Data.(eventlog.LandingRejected)
		return feedYellow, fmt.Sprintf("✘ %s: landing rejected in review (request %s): %s", e.Agent, inbox.ShortID(d.Request), e.Detail)
	case eventlog.EvScheduleRunStarted, eventlog.EvScheduleRunFinished, eventlog.EvScheduleStopped, eventlog.EvScheduleFailed:
		return scheduleText(e)
	}
	return "", strings.TrimSpace(fmt.Sprintf("  %s %s %s", e.Type, e.Agent, e.Detail))
}

// turnText renders a turn_finished event.
func turnText(e eventlog.Event, id string) (string, string) {
	d, _ := e.Data.(eventlog.TurnFinished)
	dur := time.Duration(d.DurationMS) * time.Millisecond
	if d.Cancelled {
		return "", "" // the cancelled event says it
	}
	if d.Requeued {
		return feedYellow, fmt.Sprintf("↺ %s: message %s %s after %s; it goes back to the queue", e.Agent, id, d.Status, dur.Round(100*time.Millisecond))
	}
	if d.Status == "completed" {
		return feedGreen, fmt.Sprintf("✔ %s: message %s done in %s · tokens in %d out %d", e.Agent, id, dur.Round(100*time.Millisecond), d.InputTokens, d.OutputTokens)
	}
	s := fmt.Sprintf("✘ %s: message %s %s", e.Agent, id, orDash(d.Status))
	if d.Failure != "" {
		s += " (" + d.Failure + ")"
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return feedRed, s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// scheduleText renders a schedule's event.
func scheduleText(e eventlog.Event) (string, string) {
	d, _ := e.Data.(eventlog.Schedule)
	name := d.Schedule
	next := ""
	if !d.NextDue.IsZero() {
		// A zero time (stopped, failed, running) is no next run.
		next = "; next run " + d.NextDue.Local().Format("2006-01-02 15:04:05")
	}
	switch e.Type {
	case eventlog.EvScheduleRunStarted:
		return "", fmt.Sprintf("⏲ schedule %s: run %d sent to %s (message %s)", name, d.Run, orDash(d.To), inbox.ShortID(e.Message))
	case eventlog.EvScheduleRunFinished:
		if e.Detail != "" {
			return feedYellow, fmt.Sprintf("⏲ schedule %s: run %d failed: %s%s", name, d.Run, e.Detail, next)
		}
		return feedGreen, fmt.Sprintf("⏲ schedule %s: run %d done (%d completed)%s", name, d.Run, d.RunsCompleted, next)
	case eventlog.EvScheduleStopped:
		return feedDim, fmt.Sprintf("■ schedule %s stopped: %s", name, e.Detail)
	}
	return feedRed, fmt.Sprintf("✘ schedule %s failed: %s", name, e.Detail)
}
