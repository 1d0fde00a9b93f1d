package orchestrator

import (
	"errors"
	"fmt"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/team"
)

// relayBox decides where a message that agent from sent with `batty send`
// on its host goes, as `batty send` decides it here: the box of its
// recipient m.To (an agent, "@role" for a role of several instances, the
// human), which must be box, the box the host's batty chose; from must be
// its sender and may message the recipient (talks_to). It is a pure
// function.
func relayBox(cfg *team.Config, from, box string, m inbox.Message) (string, error) {
	if m.From != from {
		return "", fmt.Errorf("message %s is from %q, not from the agent %s", m.ID, m.From, from)
	}
	if m.Outcome != nil {
		return "", fmt.Errorf("message %s has an outcome: not a message to deliver", m.ID)
	}
	want, _, allowed, err := cfg.SendBox(from, m.To)
	if err != nil {
		return "", err
	}
	if !allowed {
		return "", fmt.Errorf("%s may not message %s (talks_to)", from, m.To)
	}
	if box != want {
		return "", fmt.Errorf("message %s to %s is in box %q, not %q", m.ID, m.To, box, want)
	}
	return want, nil
}

// relayed delivers a message the agent sent on its host (protocol.Outgoing)
// into the team's inbox here, as `batty send` would have: same id (a
// message delivered already is not delivered again), sender and
// recipient checked, the backlog limit applied; and acknowledges it, so
// that the shim removes the file there. A message refused is acknowledged
// with the reason, logged and reported as a warning. Run's goroutine only.
func (a *agent) relayed(e protocol.Outgoing) {
	ack := protocol.OutgoingAck{Box: e.Box, Name: e.Name}
	if err := a.deliverRelayed(e); err != nil {
		ack.Error = err.Error()
		a.log.Warn("Message sent on the host refused", "box", e.Box, "file", e.Name, "error", err)
		a.d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Agent: a.def.Name, Detail: "message sent on host " + a.def.Host + " refused: " + err.Error()})
	}
	if a.p != nil {
		a.p.Send(ack)
	}
}

func (a *agent) deliverRelayed(e protocol.Outgoing) error {
	if a.host == nil {
		return errors.New("a local shim relays nothing")
	}
	m, err := inbox.Decode([]byte(e.Data))
	if err != nil {
		return err
	}
	if e.Name != m.ID+".json" {
		return fmt.Errorf("file %q does not hold message %s", e.Name, m.ID)
	}
	box, err := relayBox(a.d.cfg, a.def.Name, e.Box, m)
	if err != nil {
		return err
	}
	b, err := a.d.store.Box(box)
	if err != nil {
		return err
	}
	if box != team.Human {
		b.Limit = a.d.cfg.BacklogLimit
	}
	// As the sender wrote it; what Deliver sets itself (a long body kept
	// in a text file there) is set again here.
	out := inbox.Message{ID: m.ID, From: m.From, To: m.To, Body: m.Body, CreatedAt: m.CreatedAt, InReplyTo: m.InReplyTo}
	if _, err := b.Deliver(out); err != nil && !errors.Is(err, inbox.ErrExists) {
		return err
	}
	return nil
}
