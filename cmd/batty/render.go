package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/battyhq/batty/protocol"
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
func humanEvent(m protocol.Message) string {
	switch e := m.(type) {
	case protocol.Accepted:
		if e.QueueDepth > 0 {
			return fmt.Sprintf("… %s queued (%d waiting)", e.ID, e.QueueDepth)
		}
		return ""
	case protocol.Rejected:
		return fmt.Sprintf("✘ %s rejected (%s): %s", e.ID, e.Reason, e.Detail)
	case protocol.TurnStarted:
		if e.Resume {
			return fmt.Sprintf("▶ %s started on thread %s", e.MessageID, e.ThreadID)
		}
		return fmt.Sprintf("▶ %s started on a new thread", e.MessageID)
	case protocol.ThreadChanged:
		switch e.Reason {
		case protocol.ThreadStarted:
			return "  thread " + e.ThreadID
		case protocol.ThreadReset:
			return fmt.Sprintf("  thread %s reset (%s)", e.Previous, e.Detail)
		}
		return fmt.Sprintf("  thread %s → %s (%s) %s", e.Previous, e.ThreadID, e.Reason, e.Detail)
	case protocol.TurnFinished:
		return humanFinished(e)
	case protocol.QuotaBlocked:
		when := "an unknown time"
		if !e.RetryAt.IsZero() {
			when = e.RetryAt.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("! quota blocked until %s: %s", when, e.Message)
	case protocol.AuthRequired:
		return "! codex needs a login: " + e.Message
	case protocol.ContextExhausted:
		return "! context window exhausted on thread " + e.ThreadID
	case protocol.ContextPressure:
		return fmt.Sprintf("! context %.0f%% used (%d of %d tokens)", e.Pct, e.UsedTokens, e.WindowTokens)
	case protocol.Warning:
		return "! " + e.Message
	case protocol.NetworkWait:
		if e.Waiting {
			return fmt.Sprintf("! %s waiting for network since %s: %s", e.MessageID, e.Since.Local().Format("15:04:05"), e.Message)
		}
		return fmt.Sprintf("  %s: the API answers again (waited %s)", e.MessageID, time.Since(e.Since).Round(time.Second))
	case protocol.Error:
		return fmt.Sprintf("! %s: %s", e.Command, e.Message)
	}
	return ""
}

func humanFinished(e protocol.TurnFinished) string {
	var b strings.Builder
	switch e.Status {
	case protocol.TurnCompleted:
		fmt.Fprintf(&b, "✔ %s completed in %s", e.MessageID, e.Duration.Round(time.Millisecond))
	default:
		fmt.Fprintf(&b, "✘ %s %s", e.MessageID, e.Status)
		if e.Failure != "" {
			fmt.Fprintf(&b, " (%s)", e.Failure)
		}
		fmt.Fprintf(&b, " after %s", e.Duration.Round(time.Millisecond))
		if e.Error != "" {
			b.WriteString(": " + e.Error)
		}
	}
	if e.Usage.Input > 0 || e.Usage.Output > 0 {
		fmt.Fprintf(&b, " · tokens in %d out %d", e.Usage.Input, e.Usage.Output)
	}
	if e.ContextPct >= 0 && e.Status == protocol.TurnCompleted {
		fmt.Fprintf(&b, " · context %.0f%%", e.ContextPct)
	}
	if e.Reply != "" {
		for _, l := range strings.Split(strings.TrimRight(e.Reply, "\n"), "\n") {
			b.WriteString("\n  " + l)
		}
	}
	if e.ReplySize > int64(len(e.Reply)) {
		fmt.Fprintf(&b, "\n  … [reply cut: the first %d of %d bytes]", len(e.Reply), e.ReplySize)
	}
	return b.String()
}
