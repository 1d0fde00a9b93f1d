package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
)

// The real Codex CLI on both runtimes against the mock Responses API, one
// agent on exec and one on its app-server, on one Codex home:
//   - batty reset archives the thread in Codex's own store (its rollout
//     moves to archived_sessions/, where Codex's pickers no longer look);
//   - batty threads restore makes it current again: the next request is
//     on that thread and carries its first turn (Codex unarchived it);
//   - batty threads fork gives each agent a NEW thread carrying the other
//     agent's turn, the source thread left archived as it was;
//   - with the team stopped, a restore is resumed at the next start.
func TestE2EThreadsRestoreAndFork(t *testing.T) {
	r, srv, home := newRuntimesTeam(t, "e2e-switch")
	agents := []string{"eng", "warm"}
	other := map[string]string{"eng": "warm", "warm": "eng"}
	n := 0
	// turn sends each agent a message with word in it and returns, by
	// agent, the mock's request that carried it.
	turn := func(word string) map[string]codextest.Request {
		t.Helper()
		n++
		for _, a := range agents {
			r.must("send", a, fmt.Sprintf("%s%s [[mock:reply %s-%d]]", word, a, a, n))
		}
		r.waitStatus(fmt.Sprintf("turn %d", n), func(st control.Status) bool {
			for _, a := range agents {
				if s := agentStatus(st, a); s.TurnsCompleted != n || s.State != "idle" {
					return false
				}
			}
			return true
		})
		got := map[string]codextest.Request{}
		for _, q := range srv.Requests() {
			for _, a := range agents {
				if strings.Contains(q.LastUserText(), word+a) {
					got[a] = q
				}
			}
		}
		if len(got) != len(agents) {
			t.Fatalf("the mock saw %d of the turn's requests", len(got))
		}
		return got
	}
	threadOf := func() map[string]string {
		st := r.waitStatus("threads", func(control.Status) bool { return true })
		m := map[string]string{}
		for _, a := range agents {
			m[a] = agentStatus(st, a).ThreadID
		}
		return m
	}
	archived := func(what, thread string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !codex.Archived(home, thread) {
			if time.Now().After(deadline) {
				m, _ := filepath.Glob(filepath.Join(home, "*sessions*", "*"))
				t.Fatalf("%s: thread %s not archived in Codex's store (%v)", what, thread, m)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	carries := func(q codextest.Request, word string) bool {
		return strings.Contains(strings.Join(q.InputTexts, "\n"), word)
	}

	r.must("start")
	turn("pelican")
	first := threadOf()
	for _, a := range agents {
		r.must("reset", a)
		archived("reset of "+a, first[a])
	}
	fresh := turn("walrus")
	for _, a := range agents {
		if q := fresh[a]; q.ThreadID == first[a] || carries(q, "pelican"+a) {
			t.Fatalf("%s after the reset: thread %s, carries the old turn: %v", a, q.ThreadID, carries(q, "pelican"+a))
		}
	}
	second := threadOf()

	for _, a := range agents {
		r.must("threads", "restore", a, first[a][:13])
	}
	restored := turn("osprey")
	for _, a := range agents {
		q := restored[a]
		if q.ThreadID != first[a] || !carries(q, "pelican"+a) || carries(q, "walrus"+a) {
			t.Errorf("%s restored: the request is on thread %s (want %s) and carries:\n%s", a, q.ThreadID, first[a], strings.Join(q.InputTexts, "\n"))
		}
		archived("the thread set aside for "+a+"'s restore", second[a])
	}

	// Each agent forks the other's archived second thread.
	for _, a := range agents {
		r.must("threads", "fork", second[other[a]], "--to", a)
	}
	forked := turn("heron")
	now := threadOf()
	for _, a := range agents {
		q, src := forked[a], second[other[a]]
		if now[a] == "" || now[a] == src || now[a] == first[a] || q.ThreadID != now[a] {
			t.Errorf("%s's fork: thread %s, the request's %s (source %s)", a, now[a], q.ThreadID, src)
		}
		if !carries(q, "walrus"+other[a]) || carries(q, "pelican"+a) {
			t.Errorf("%s's fork does not carry %s's turn:\n%s", a, other[a], strings.Join(q.InputTexts, "\n"))
		}
		if !codex.Archived(home, src) {
			t.Errorf("the fork's source %s is no longer archived in Codex's store", src)
		}
	}
	r.must("stop", "--timeout", "5s")

	// With the team stopped: a restore changes the state; the next start
	// resumes the thread, unarchived in Codex's store before its turn.
	for _, a := range agents {
		r.must("threads", "restore", a, second[a])
	}
	r.must("start")
	again := turn("ibis")
	for _, a := range agents {
		if q := again[a]; q.ThreadID != second[a] || !carries(q, "walrus"+a) || carries(q, "pelican"+a) {
			t.Errorf("%s restored offline: the request is on thread %s (want %s) and carries:\n%s", a, q.ThreadID, second[a], strings.Join(q.InputTexts, "\n"))
		}
	}
	r.must("stop", "--timeout", "5s")
}
