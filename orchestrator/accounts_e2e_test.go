package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/project"
)

// An agent on two accounts, the real Codex CLI and two mocks: the first
// account answers one turn and then only usage_limit_reached. The agent
// goes on on the second account within seconds, keeping its conversation
// (the second account's first request carries the first account's turn),
// on the same thread; no message is lost or answered twice; one alert;
// status shows where the agent runs and that the first account waits.
// Once the first account may be used again, the agent goes back to it
// with the turns it ran on the second.
// Both runtimes: exec resumes the carried rollout by id, the app-server
// loads it with thread/resume.
func TestE2ERotationKeepsTheConversation(t *testing.T) {
	for _, rt := range []string{"exec", "app-server"} {
		t.Run(rt, func(t *testing.T) { testRotation(t, rt) })
	}
}

func testRotation(t *testing.T, runtime string) {
	work, spare := codextest.NewServer(t), codextest.NewServer(t)
	homeWork, homeSpare := work.WriteHome(t), spare.WriteHome(t)
	lift := limitAfterOne(work)
	accounts := fmt.Sprintf("accounts:\n  - name: work\n    codex_home: %s\n  - name: spare\n    codex_home: %s\n", homeWork, homeSpare)
	p := newRealProject(t, homeWork, accounts+"timeouts:\n  shutdown: 5s\n", "  - name: eng\n    accounts: [work, spare]\n    codex:\n      runtime: "+runtime+"\n")
	r := p.start(noJitter)

	m1 := p.send("eng", "human", "remember the word PELICAN [[mock:reply NOTED]]")
	if st := r.finished(t, m1); st != "completed" {
		t.Fatalf("%s: %s", m1, st)
	}
	thread := call(t, p, control.Request{Op: control.OpStatus}).Status.Agents[0].ThreadID
	limitAt := time.Now()
	m2 := p.send("eng", "human", "which word? [[mock:reply PELICAN]]")
	sw := r.waitEvent(t, "the switch", func(e eventlog.Event) bool { return e.Type == eventlog.EvAccountSwitched })
	if d := payloadOf[eventlog.AccountSwitched](sw); d.From != "work" || d.To != "spare" || !strings.Contains(sw.Detail, "eng continues on account spare") {
		t.Fatalf("switch event %+v", sw)
	}
	if st := r.finished(t, m2); st != "completed" {
		t.Fatalf("%s: %s", m2, st)
	}
	t.Logf("from the usage limit to the answer on the spare account: %s", time.Since(limitAt).Round(time.Millisecond))
	m3 := p.send("eng", "human", "and now? [[mock:reply STILL_HERE]]")
	if st := r.finished(t, m3); st != "completed" {
		t.Fatalf("%s: %s", m3, st)
	}

	// The conversation went along: the spare account's first request holds
	// the first turn, and the thread is the same.
	reqs := spare.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests on the spare account, want 2 (m2 and m3)", len(reqs))
	}
	first := strings.Join(reqs[0].InputTexts, "\n")
	if !strings.Contains(first, "remember the word PELICAN") || !strings.Contains(first, "NOTED") {
		t.Fatalf("the spare account's first request lacks the earlier turn:\n%s", first)
	}
	if reqs[0].ThreadID != thread || reqs[1].ThreadID != thread {
		t.Fatalf("threads on spare %q, %q; want %q", reqs[0].ThreadID, reqs[1].ThreadID, thread)
	}
	// Nothing answered twice: m1 once on work, m2 once on each (the limit,
	// then the answer), m3 once on spare.
	perAccount := func(s *codextest.Server, id string) int {
		n := 0
		for _, req := range s.Requests() {
			if messageIn(req.LastUserText()) == id {
				n++
			}
		}
		return n
	}
	if a, b := perAccount(work, m1), perAccount(spare, m1); a != 1 || b != 0 {
		t.Fatalf("m1 ran %d times on work, %d on spare", a, b)
	}
	if a, b := perAccount(work, m2), perAccount(spare, m2); a != 1 || b != 1 {
		t.Fatalf("m2 ran %d times on work, %d on spare", a, b)
	}
	for _, id := range []string{m1, m2, m3} {
		if n := r.count(eventlog.EvTurnFinished, id); n < 1 {
			t.Fatalf("%s: no turn_finished", id)
		}
	}
	// One alert: the switch (the pause of work moved everyone); replies
	// alert only with alert_on_reply.
	r.mu.Lock()
	events := slices.Clone(r.seen)
	r.mu.Unlock()
	var alerts []string
	for _, e := range events {
		if a, ok := eventlog.AlertFor(e); ok && a.Kind != eventlog.AlertReply {
			alerts = append(alerts, a.Kind+": "+a.Message)
		}
	}
	if len(alerts) != 1 || !strings.HasPrefix(alerts[0], eventlog.AlertAccount) {
		t.Fatalf("alerts %q, want the one switch", alerts)
	}
	st := call(t, p, control.Request{Op: control.OpStatus}).Status
	if st.Agents[0].Account != "spare" {
		t.Fatalf("status: eng on %q, want spare", st.Agents[0].Account)
	}
	for _, acc := range st.Accounts {
		switch acc.Name {
		case "work":
			if !acc.Paused || len(acc.Agents) != 0 {
				t.Fatalf("work: %+v", acc)
			}
		case "spare":
			if acc.Paused || !slices.Equal(acc.Agents, []string{"eng"}) {
				t.Fatalf("spare: %+v", acc)
			}
		default:
			t.Fatalf("unexpected account %+v", acc)
		}
	}

	// work may be used again (`batty resume` here; its probe after the
	// reset does the same): the agent goes back to it, its thread too,
	// with what it said on spare.
	lift()
	call(t, p, control.Request{Op: control.OpResume})
	back := r.waitEvent(t, "the return", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvAccountSwitched && payloadOf[eventlog.AccountSwitched](e).Reason == "return"
	})
	if d := payloadOf[eventlog.AccountSwitched](back); d.From != "spare" || d.To != "work" {
		t.Fatalf("return event %+v", back)
	}
	m4 := p.send("eng", "human", "back home? [[mock:reply HOME]]")
	if st := r.finished(t, m4); st != "completed" {
		t.Fatalf("%s: %s", m4, st)
	}
	last := work.Requests()[len(work.Requests())-1]
	if messageIn(last.LastUserText()) != m4 || last.ThreadID != thread || !strings.Contains(strings.Join(last.InputTexts, "\n"), "STILL_HERE") {
		t.Fatalf("work's request for m4 (thread %s) lacks the turns run on spare:\n%s", last.ThreadID, strings.Join(last.InputTexts, "\n"))
	}
	if st := call(t, p, control.Request{Op: control.OpStatus}).Status; st.Agents[0].Account != "work" {
		t.Fatalf("status: eng on %q, want work", st.Agents[0].Account)
	}
}

// A daemon that died after placing an agent on another account but before
// the agent moved: the next start finds the placement and carries the
// thread there before the agent's Codex starts, so the conversation goes
// on on the new account.
func TestE2ERestartFollowsThePlacement(t *testing.T) {
	work, spare := codextest.NewServer(t), codextest.NewServer(t)
	homeWork, homeSpare := work.WriteHome(t), spare.WriteHome(t)
	accounts := fmt.Sprintf("accounts:\n  - name: work\n    codex_home: %s\n  - name: spare\n    codex_home: %s\n", homeWork, homeSpare)
	p := newRealProject(t, homeWork, accounts+"timeouts:\n  shutdown: 5s\n", "  - name: eng\n    accounts: [work, spare]\n")
	r := p.start(noJitter)
	m1 := p.send("eng", "human", "remember the word HERON [[mock:reply NOTED]]")
	if st := r.finished(t, m1); st != "completed" {
		t.Fatalf("%s: %s", m1, st)
	}
	r.stop(t)

	// What the book persists when it moves the agent: work paused, eng
	// placed on spare.
	l := layoutOf(t, p.dir)
	st := project.QuotaState{
		Paused: []project.AccountPause{{Account: homeWork, Reason: "limit", Agent: "eng", Since: time.Now().UTC(), ProbeAt: time.Now().Add(time.Hour).UTC()}},
		Placed: map[string]string{"eng": homeSpare},
	}
	if err := project.SaveJSON(l, project.QuotaName, st); err != nil {
		t.Fatal(err)
	}
	r = p.start(noJitter)
	m2 := p.send("eng", "human", "which word? [[mock:reply HERON]]")
	if st := r.finished(t, m2); st != "completed" {
		t.Fatalf("%s: %s", m2, st)
	}
	reqs := spare.Requests()
	if len(reqs) != 1 || !strings.Contains(strings.Join(reqs[0].InputTexts, "\n"), "remember the word HERON") {
		t.Fatalf("the spare account's request (%d) lacks the earlier turn", len(reqs))
	}
	if len(work.Requests()) != 1 {
		t.Fatalf("%d requests on work, want 1", len(work.Requests()))
	}
}

// The real Codex CLI, an agent eng on two accounts and an agent ops on
// the first only, both on one health at start: work answers one turn and
// then only usage_limit_reached; spare's provider needs an OpenAI login
// and its home has none. When the limit moves eng to spare, eng is parked
// with spare's problem and fix (its message waits, spare gets no request),
// and ops, left on work, is not parked. `batty resume` opens work again:
// eng, parked, goes back to it and is released there, and its message
// runs on work.
func TestE2EAccountWithBrokenLoginParksTheAgentMovedThere(t *testing.T) {
	work, spare := codextest.NewServer(t), codextest.NewServer(t)
	homeWork, homeSpare := work.WriteHome(t), spare.WriteHome(t)
	// [model_providers.mock] is the home's last table.
	cfg := filepath.Join(homeSpare, "config.toml")
	if err := os.WriteFile(cfg, []byte(spare.ConfigTOML(codextest.HomeConfig{})+"requires_openai_auth = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lift := limitAfterOne(work)
	accounts := fmt.Sprintf("accounts:\n  - name: work\n    codex_home: %s\n  - name: spare\n    codex_home: %s\n", homeWork, homeSpare)
	p := newRealProject(t, homeWork, accounts+"timeouts:\n  shutdown: 5s\n",
		"  - name: eng\n    accounts: [work, spare]\n  - name: ops\n")
	// No back-off check: what parks eng is spare's first check.
	r := p.start(func(o *Options) { noJitter(o); o.RecheckMin, o.RecheckMax = time.Hour, time.Hour })

	m1 := p.send("eng", "human", "remember the word IBIS [[mock:reply NOTED]]")
	if st := r.finished(t, m1); st != "completed" {
		t.Fatalf("%s: %s", m1, st)
	}
	m2 := p.send("eng", "human", "which word? [[mock:reply IBIS]]")
	r.waitEvent(t, "the switch", func(e eventlog.Event) bool { return e.Type == eventlog.EvAccountSwitched })
	eng := r.waitAgent(t, "eng", "parked on spare", func(a control.AgentStatus) bool {
		if n, auth := len(spare.Requests()), r.count(eventlog.EvAuthRequired, ""); n > 0 || auth > 0 {
			t.Fatalf("eng ran on spare (%d requests there, %d auth_required) instead of being parked", n, auth)
		}
		return a.State == agentParked
	})
	fix := "CODEX_HOME=" + homeSpare + " "
	if eng.Parked == nil || eng.Parked.Kind != "not_logged_in" || !strings.Contains(eng.Parked.Detail, homeSpare) || !strings.Contains(eng.Parked.Fix, fix) {
		t.Fatalf("eng parked with %+v; want spare's login problem and fix", eng.Parked)
	}
	parked := r.waitEvent(t, "agent_parked", func(e eventlog.Event) bool { return e.Type == eventlog.EvAgentParked && e.Agent == "eng" })
	if f := payloadOf[eventlog.AgentParked](parked).Fix; !strings.Contains(f, fix) {
		t.Fatalf("agent_parked %+v; want spare's fix", parked)
	}
	if m, where, err := p.box("eng").Get(m2); err != nil || where != "new" || m.Outcome != nil {
		t.Fatalf("message %s: %+v in %q (%v); want it waiting", m2, m, where, err)
	}
	for _, a := range call(t, p, control.Request{Op: control.OpStatus}).Status.Agents {
		if a.Name == "ops" && (a.State == agentParked || a.Parked != nil) {
			t.Fatalf("ops, on work, parked: %+v", a)
		}
	}
	if n := r.count(eventlog.EvAgentParked, ""); n != 1 {
		t.Fatalf("%d agent_parked events, want eng's only", n)
	}

	// work may be used again: eng goes back, leaves spare's parking, and m2
	// runs on work.
	lift()
	call(t, p, control.Request{Op: control.OpResume})
	if st := r.finished(t, m2); st != "completed" {
		t.Fatalf("%s: %s", m2, st)
	}
	r.waitEvent(t, "agent_unparked", func(e eventlog.Event) bool { return e.Type == eventlog.EvAgentUnparked && e.Agent == "eng" })
	if n := len(spare.Requests()); n != 0 {
		t.Fatalf("%d requests on spare", n)
	}
	for _, a := range call(t, p, control.Request{Op: control.OpStatus}).Status.Agents {
		if a.Parked != nil || (a.Name == "eng" && a.Account != "work") {
			t.Fatalf("status %+v; want eng on work, nobody parked", a)
		}
	}
}

// limitAfterOne makes srv answer one request as scripted, then refuse
// every one with a usage limit (resetting in an hour) until lift is
// called.
func limitAfterOne(srv *codextest.Server) (lift func()) {
	var mu sync.Mutex
	answered, lifted := 0, false
	srv.Handle(func(req codextest.Request) codextest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if answered > 0 && !lifted {
			return codextest.QuotaReply(time.Now().Add(time.Hour))
		}
		answered++
		return srv.Scripted(req)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		lifted = true
	}
}
