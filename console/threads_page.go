package console

// The Threads page (/threads, ?agent= for one agent's) and a thread's
// (/thread/ID): every thread the agents have had, current or left, and
// one conversation turn by turn — `batty threads` and `batty threads
// show`.

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/statusview"
	"github.com/battyhq/batty/threads"
)

// maxThreads bounds the threads the Threads page lists (the latest
// active).
const maxThreads = 500

// threadRow is one thread of the Threads page.
type threadRow struct {
	ID, Short, Agent, Role, State, Ended string
	Started, LastActive                  string
	Turns                                int
	Tokens                               string
	First, Last                          string
}

// agentThreads are one agent's threads.
type agentThreads struct {
	Agent string
	Rows  []threadRow
}

// threadsView is the Threads page's data: the agents' threads, each
// agent's latest active first.
type threadsView struct {
	Team   string
	Nav    nav
	Err    string
	Agent  string // the one agent shown, "" for all
	Agents []agentThreads
	// Names are the agents with threads, for the filter.
	Names []string
	Cut   bool
}

// newThreadRow is the row of t. It is a pure function.
func newThreadRow(t threads.Thread) threadRow {
	return threadRow{ID: t.ID, Short: statusview.ThreadCell(t.ID), Agent: safetext.Line(t.Agent, 80), Role: safetext.Line(t.Role, 80),
		State: safetext.Line(t.State, 20), Ended: safetext.Line(cmp.Or(t.Ended, ""), 40),
		Started: when(t.Started), LastActive: when(t.LastActive), Turns: t.Turns,
		Tokens: fmt.Sprintf("%s in / %s out", statusview.Tokens(t.Tokens.Input), statusview.Tokens(t.Tokens.Output)),
		First:  shown(t.FirstMessage, maxShownLine), Last: shown(t.LastReply, maxShownLine)}
}

// newThreadsView groups ts by agent (agent, when not "", the only one
// kept), each agent's latest active first, at most maxThreads in all. It
// is a pure function.
func newThreadsView(ts []threads.Thread, agent string) threadsView {
	v := threadsView{Agent: agent}
	ts = slices.Clone(ts)
	slices.SortStableFunc(ts, func(a, b threads.Thread) int {
		return cmp.Or(strings.Compare(a.Agent, b.Agent), b.LastActive.Compare(a.LastActive), b.Started.Compare(a.Started))
	})
	n := 0
	for _, t := range ts {
		if len(v.Names) == 0 || v.Names[len(v.Names)-1] != t.Agent {
			v.Names = append(v.Names, t.Agent)
		}
		if agent != "" && t.Agent != agent {
			continue
		}
		if n == maxThreads {
			v.Cut = true
			continue
		}
		n++
		if len(v.Agents) == 0 || v.Agents[len(v.Agents)-1].Agent != t.Agent {
			v.Agents = append(v.Agents, agentThreads{Agent: t.Agent})
		}
		last := &v.Agents[len(v.Agents)-1]
		last.Rows = append(last.Rows, newThreadRow(t))
	}
	return v
}

func (s *Server) threadsPage(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Team.Status(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	s.render(w, r, "threads", s.threadsView(r, st, r.URL.Query().Get("agent")))
}

// threadsView makes the Threads page's data, of agent's threads ("": every
// agent's).
func (s *Server) threadsView(r *http.Request, st *control.Status, agent string) threadsView {
	ts, err := s.cfg.Team.Threads(r.Context())
	v := newThreadsView(ts, agent)
	if err != nil {
		v.Err = safetext.Line(err.Error(), maxShownLine)
	}
	v.Team, v.Nav = st.Team, s.navOf("threads", st)
	return v
}

// turnView is one turn of a conversation.
type turnView struct {
	Message, From, SentAt, At, Status, Error string
	Attempt                                  int
	Body, Reply                              string
	Commands                                 []commandView
	Files                                    []string
	Tokens                                   string
	Commit                                   string
}

// commandView is one command a turn ran.
type commandView struct {
	Command, Output, Exit string
}

// threadView is a thread's page: its row and its turns.
type threadView struct {
	Team string
	Nav  nav
	threadRow
	Redacted int
	Turns    []turnView
}

// newThreadView makes the page of sh (already redacted). It is a pure
// function.
func newThreadView(sh threads.Show) threadView {
	v := threadView{threadRow: newThreadRow(sh.Thread), Redacted: sh.Redacted}
	for _, r := range sh.Turns {
		v.Turns = append(v.Turns, newTurnView(r))
	}
	return v
}

// newTurnView is what a thread's page shows of journal record r. It is a
// pure function.
func newTurnView(r journal.Record) turnView {
	t := turnView{Message: safetext.Line(r.Message.ID, 0), From: safetext.Line(r.Message.From, 80), SentAt: when(r.Message.At), At: when(r.At),
		Status: safetext.Line(r.Status, 20), Error: shown(r.Error, maxShownReply), Attempt: r.Attempt,
		Body: shown(r.Message.Body, maxShownBody), Reply: shown(r.Reply, maxShownReply),
		Tokens: fmt.Sprintf("%s in / %s out", statusview.Tokens(r.Tokens.Input), statusview.Tokens(r.Tokens.Output))}
	for _, c := range r.Commands {
		cv := commandView{Command: shown(c.Command, maxShownLine), Output: shown(c.Output, maxShownReply)}
		if c.ExitCode != nil {
			cv.Exit = fmt.Sprint(*c.ExitCode)
		}
		t.Commands = append(t.Commands, cv)
	}
	for _, f := range r.Files {
		t.Files = append(t.Files, safetext.Line(f, maxShownLine))
	}
	if r.Commit != nil {
		t.Commit = statusview.ShortCommit(r.Commit.SHA)
	}
	return t
}

func (s *Server) threadPage(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Team.Status(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	sh, err := s.cfg.Team.Conversation(r.Context(), r.PathValue("id"))
	if errors.Is(err, threads.ErrNoThread) {
		http.Error(w, "no such thread", http.StatusNotFound)
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusBadGateway, err)
		return
	}
	v := newThreadView(sh)
	v.Team, v.Nav = st.Team, s.navOf("threads", st)
	s.render(w, r, "thread", v)
}
