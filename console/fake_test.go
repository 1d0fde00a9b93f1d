package console

import (
	"context"
	"errors"
	"fmt"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// stateFiles is the part of fakeTeam kept in a state directory, as the
// daemon keeps it: the inboxes, the marks and the event log.
type stateFiles struct {
	Layout project.Layout
}

// box opens the inbox box.
func (b stateFiles) box(box string) (*inbox.Box, error) {
	store, err := b.Layout.OpenInboxes()
	if err != nil {
		return nil, fmt.Errorf("open the inboxes: %w", err)
	}
	return store.Box(box)
}

func (b stateFiles) Messages(box string, limit int) ([]inbox.Listed, error) {
	bx, err := b.box(box)
	if err != nil {
		return nil, err
	}
	ms, errs := bx.Recent(limit)
	return ms, errors.Join(errs...)
}

func (b stateFiles) MessageIDs(box string) ([]string, error) {
	bx, err := b.box(box)
	if err != nil {
		return nil, err
	}
	return bx.IDs()
}

func (b stateFiles) Message(box, id string) (inbox.Message, error) {
	bx, err := b.box(box)
	if err != nil {
		return inbox.Message{}, err
	}
	m, _, err := bx.Get(id)
	return m, err
}

func (b stateFiles) Reply(_ context.Context, agent, inReplyTo, body string) (string, error) {
	bx, err := b.box(agent)
	if err != nil {
		return "", err
	}
	m, err := bx.Deliver(inbox.Message{From: team.Human, To: agent, Body: body, InReplyTo: inReplyTo})
	if err != nil {
		return "", err
	}
	return m.ID, nil
}

func (b stateFiles) LoadMarks() (Marks, error) { return ReadMarks(b.Layout) }
func (b stateFiles) SaveMarks(m Marks) error   { return WriteMarks(b.Layout, m) }
func (b stateFiles) EventsLog() string         { return b.Layout.EventsLog() }
