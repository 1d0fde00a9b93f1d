package orchestrator

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/team"
)

// requestBox decides where a request that agent from wrote into its outbox
// goes, as `batty send` and `batty merge` decide it for the human: a
// message to the box of its recipient (an agent, "@role" for a role of
// several instances, the human), which from may message (talks_to); a
// landing to the landing box, for a branch from may land (team.MayLand).
// The sender is from, whatever the request could say: the outbox it was
// found in is from's alone. It returns the message to deliver (id and
// creation time given) and its box. It is a pure function.
func requestBox(cfg *team.Config, from string, id string, at time.Time, r outbox.Request) (string, inbox.Message, error) {
	if r.Land != "" {
		if !team.MayLand(cfg, from, r.Land) {
			return "", inbox.Message{}, fmt.Errorf("%s may land only its own branch or the branch of an agent it may message (talks_to), not %s's", from, r.Land)
		}
		return team.LandingBox, inbox.Message{ID: id, From: from, To: team.LandingBox, Body: r.Land, CreatedAt: at}, nil
	}
	box, _, allowed, err := cfg.SendBox(from, r.To)
	if err != nil {
		return "", inbox.Message{}, err
	}
	if !allowed {
		return "", inbox.Message{}, fmt.Errorf("%s may not message %s (talks_to)", from, r.To)
	}
	return box, inbox.Message{ID: id, From: from, To: r.To, Body: r.Body, CreatedAt: at}, nil
}

// relayed delivers a request the agent wrote into its outbox
// (protocol.Outgoing, relayed by its shim, here or on its host) into the
// team's inboxes, stamped as from this agent, or answers it when it is a
// recall (answerRecall); and acknowledges it, so that
// the shim removes the file. A request delivered already (the same id from
// the same agent: a shim restarted before the acknowledgement) is not
// delivered again. A request refused is acknowledged with the reason,
// logged and reported as a warning. Run's goroutine only.
func (a *agent) relayed(e protocol.Outgoing) {
	ack := protocol.OutgoingAck{Box: e.Box, Name: e.Name}
	if err := a.deliverRequest(e, time.Now()); err != nil {
		ack.Error = err.Error()
		// The name is the agent's: quoted wherever it is shown.
		a.log.Warn("Request of the agent refused", "file", strconv.Quote(e.Name), "error", err)
		a.emit(eventlog.Event{Type: eventlog.EvWarning, Agent: a.def.Name, Detail: "request " + safetext.Line(e.Name, 120) + " of " + a.def.Name + " refused: " + safetext.Line(err.Error(), 0)})
	}
	if a.p != nil {
		a.p.Send(ack)
	}
}

// deliverRequest delivers the request e at time now (see relayed).
func (a *agent) deliverRequest(e protocol.Outgoing, now time.Time) error {
	id, err := outbox.ID(e.Name, now)
	if err != nil {
		return err
	}
	r, err := outbox.Decode([]byte(e.Data))
	if err != nil {
		return err
	}
	if r.Recall != nil {
		// A question, not a message: answered into the agent's outbox.
		return a.answerRecall(id, *r.Recall, now)
	}
	box, m, err := requestBox(a.cfg, a.def.Name, id, now.UTC(), r)
	if err != nil {
		return err
	}
	b, err := a.store.Box(box)
	if err != nil {
		return err
	}
	if box != team.Human && box != team.LandingBox {
		b.Limit = a.cfg.BacklogLimit
	}
	// A message to a role's queue leaves it when it is routed to an
	// instance: a request relayed again after that is looked for there.
	if routed, err := a.routedBefore(box, m.ID); err != nil || routed != nil {
		if err != nil {
			return err
		}
		return sameRequest(routed, m)
	}
	if _, err = b.Deliver(m); errors.Is(err, inbox.ErrExists) {
		return sameRequest(b, m)
	}
	return err
}

// routedBefore returns the instance's box that holds the message id when
// box is a role's queue ("@role") and the message was routed out of it
// already (inbox.Find over the role's instances, in done/ too); nil when
// box is no role's queue or no instance has the id.
func (a *agent) routedBefore(box, id string) (*inbox.Box, error) {
	role, ok := strings.CutPrefix(box, "@")
	if !ok {
		return nil, nil
	}
	copies, err := inbox.Find(id, a.crew.roleBoxes(role))
	if err != nil || len(copies) == 0 {
		return nil, err
	}
	return copies[0].Box, nil
}

// sameRequest returns nil when the message already stored under m's id in
// b is m, delivered before (same sender, recipient and body), and an
// error when it is another message: an id the agent may not take.
func sameRequest(b *inbox.Box, m inbox.Message) error {
	old, _, err := b.Get(m.ID)
	if err != nil {
		return fmt.Errorf("message %s: its id is taken: %w", m.ID, err)
	}
	if old.From != m.From || old.To != m.To || (old.Body != m.Body && old.BodyFile == "") {
		return fmt.Errorf("message %s: its id is taken by another message", m.ID)
	}
	return nil
}
