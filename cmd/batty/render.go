package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/safetext"
)

// eventPrinter writes protocol events for people or scripts.
type eventPrinter struct {
	w      io.Writer
	asJSON bool
}

func newEventPrinter(w io.Writer, asJSON bool) *eventPrinter {
	return &eventPrinter{w: w, asJSON: asJSON}
}

// print writes one event: a JSON object with an "event" key naming its kind,
// or one or more readable lines.
func (p *eventPrinter) print(m protocol.Message) {
	if p.asJSON {
		fmt.Fprintln(p.w, eventJSON(m))
		return
	}
	if s := humanEvent(m); s != "" {
		fmt.Fprintln(p.w, s)
	}
}

// eventJSON renders m as one JSON object whose "event" key is its kind and
// whose other keys are the message's fields.
func eventJSON(m protocol.Message) string {
	b, err := json.Marshal(m)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	head := fmt.Sprintf(`{"event":%q`, m.Kind())
	if string(b) == "{}" {
		return head + "}"
	}
	return head + "," + string(b[1:])
}

// humanEvent renders m as readable lines ("" for events not worth a line).
// What comes from codex or the model (details, messages, errors, thread
// ids) is one line made safe for the terminal by safetext.Line; the reply
// keeps its lines (safetext.Text).
func humanEvent(m protocol.Message) string {
	l := func(s string) string { return safetext.Line(s, 0) }
	switch e := m.(type) {
	case protocol.Accepted:
		if e.QueueDepth > 0 {
			return fmt.Sprintf("… %s queued (%d waiting)", e.ID, e.QueueDepth)
		}
		return ""
	case protocol.Rejected:
		return fmt.Sprintf("✘ %s rejected (%s): %s", l(e.ID), l(string(e.Reason)), l(e.Detail))
	case protocol.TurnStarted:
		if e.Resume {
			return fmt.Sprintf("▶ %s started on thread %s", l(e.MessageID), l(e.ThreadID))
		}
		return fmt.Sprintf("▶ %s started on a new thread", l(e.MessageID))
	case protocol.ThreadChanged:
		switch e.Reason {
		case protocol.ThreadStarted:
			return "  thread " + l(e.ThreadID)
		case protocol.ThreadReset:
			return fmt.Sprintf("  thread %s reset (%s)", l(e.Previous), l(e.Detail))
		}
		return fmt.Sprintf("  thread %s → %s (%s) %s", l(e.Previous), l(e.ThreadID), l(string(e.Reason)), l(e.Detail))
	case protocol.TurnFinished:
		return humanFinished(e)
	case protocol.QuotaBlocked:
		when := "an unknown time"
		if !e.RetryAt.IsZero() {
			when = e.RetryAt.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("! quota blocked until %s: %s", when, l(e.Message))
	case protocol.AuthRequired:
		return "! codex needs a login: " + l(e.Message)
	case protocol.ContextExhausted:
		return "! context window exhausted on thread " + l(e.ThreadID)
	case protocol.ContextPressure:
		return fmt.Sprintf("! context %.0f%% used (%d of %d tokens)", e.Pct, e.UsedTokens, e.WindowTokens)
	case protocol.Warning:
		return "! " + l(e.Message)
	case protocol.NetworkWait:
		if e.Waiting {
			return fmt.Sprintf("! %s waiting for network since %s: %s", l(e.MessageID), e.Since.Local().Format("15:04:05"), l(e.Message))
		}
		return fmt.Sprintf("  %s: the API answers again (waited %s)", l(e.MessageID), time.Since(e.Since).Round(time.Second))
	case protocol.Error:
		return fmt.Sprintf("! %s: %s", l(string(e.Command)), l(e.Message))
	}
	return ""
}

// humanFinished renders a turn's end: outcome, tokens, and the reply
// indented below, its lines kept but made safe (safetext.Text).
func humanFinished(e protocol.TurnFinished) string {
	l := func(s string) string { return safetext.Line(s, 0) }
	var b strings.Builder
	switch e.Status {
	case protocol.TurnCompleted:
		fmt.Fprintf(&b, "✔ %s completed in %s", l(e.MessageID), e.Duration.Round(time.Millisecond))
	default:
		fmt.Fprintf(&b, "✘ %s %s", l(e.MessageID), l(string(e.Status)))
		if e.Failure != "" {
			fmt.Fprintf(&b, " (%s)", l(string(e.Failure)))
		}
		fmt.Fprintf(&b, " after %s", e.Duration.Round(time.Millisecond))
		if e.Error != "" {
			b.WriteString(": " + l(e.Error))
		}
	}
	if e.Usage.Input > 0 || e.Usage.Output > 0 {
		fmt.Fprintf(&b, " · tokens in %d out %d", e.Usage.Input, e.Usage.Output)
	}
	if e.ContextPct >= 0 && e.Status == protocol.TurnCompleted {
		fmt.Fprintf(&b, " · context %.0f%%", e.ContextPct)
	}
	if reply := strings.TrimRight(safetext.Text(e.Reply), "\n"); reply != "" {
		for _, line := range strings.Split(reply, "\n") {
			b.WriteString("\n  " + line)
		}
	}
	return b.String()
}
