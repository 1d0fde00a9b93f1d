package orchestrator

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/project"
)

func TestContextStep(t *testing.T) {
	for _, c := range []struct {
		name  string
		cr    *project.ContextRetry
		fresh bool
		want  contextAction
	}{
		{"first failure", nil, false, contextRetrySame},
		{"first failure of another message", &project.ContextRetry{Message: "other", Step: int(contextHandoff)}, false, contextRetrySame},
		{"failed again after compaction", &project.ContextRetry{Message: "m", Step: int(contextRetrySame)}, false, contextHandoff},
		{"failed on the fresh thread", &project.ContextRetry{Message: "m", Step: int(contextHandoff)}, true, contextFail},
		{"overflows a fresh thread at once", nil, true, contextFail},
		{"unknown step", &project.ContextRetry{Message: "m", Step: 9}, false, contextFail},
	} {
		if got := contextStep(c.cr, "m", c.fresh); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A handoff names the agent, why the thread went, the last replies (the
// newest three, clipped) and what the agent was doing; it stays small
// however large the replies were.
func TestHandoffTextIsBoundedAndComplete(t *testing.T) {
	var recent []project.RecentTurn
	for i, r := range []string{"one", "two", "three"} {
		recent = append(recent, project.RecentTurn{Message: "m" + r, From: "human", Body: "task " + r + "\nsecond line",
			Reply: strings.Repeat(r, recentReplyMax), At: time.Unix(int64(i), 0)})
	}
	for i := range recent {
		recent[i].Reply = recent[i].Reply[:recentReplyMax]
	}
	got := handoffText(handoffInput{Agent: "eng-1", Role: "eng", Team: "t", Recent: recent,
		Pending: project.PendingHandoff{Reason: "it was full", Previous: "th-1", Doing: "message m4 did not fit"}})
	for _, w := range []string{"You are agent eng-1 (role eng) of team t.", "(th-1) was archived: it was full.",
		"Your last 3 replies, oldest first:", "1. To message mone from human", "task one second line",
		"What you were doing: message m4 did not fit"} {
		if !strings.Contains(got, w) {
			t.Errorf("handoff lacks %q:\n%s", w, got)
		}
	}
	if len(got) > recentMax*(recentReplyMax+recentBodyClip+200)+1000 {
		t.Errorf("handoff of %d bytes", len(got))
	}
	none := handoffText(handoffInput{Agent: "a", Role: "a", Team: "t", Pending: project.PendingHandoff{Reason: "r"}})
	if !strings.Contains(none, "No earlier reply of yours was kept.") || strings.Contains(none, "What you were doing") {
		t.Errorf("handoff without history:\n%s", none)
	}
}

// invocations returns the fake codex's log lines for message id: "<ns>
// <resumed thread|new> <header>".
func (p *testProject) invocations(id string) []string {
	b, _ := os.ReadFile(p.fakeLog)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "batty message "+id+" ") {
			out = append(out, l)
		}
	}
	return out
}

// promptsOf returns every whole prompt the fake read for message id, each
// with the thread it resumed ("new" for none) on its first line.
func (p *testProject) promptsOf(id string) []string {
	b, _ := os.ReadFile(p.prompts)
	var out []string
	for _, pr := range strings.Split(string(b), "=== ")[1:] {
		if strings.Contains(pr, "--- batty message "+id+" ") {
			out = append(out, pr)
		}
	}
	return out
}

func resumed(line string) string { return strings.Fields(line)[1] }

// warmUp starts a team of one agent, solo, with the fake codex and runs
// one message so that the agent has a thread. It returns the project, the
// running daemon and the thread.
func warmUp(t *testing.T) (*testProject, *running, string) {
	t.Helper()
	p := newProject(t, "  - name: solo\n")
	r := p.start(nil)
	id := p.send("solo", "human", "first task")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("warm-up: %s", st)
	}
	return p, r, r.d.status().Agents[0].ThreadID
}

// A turn that ran out of context window is retried once on the same thread
// (codex compacts it on resume), with a header that says so, and costs no
// alert.
func TestContextRetryOnSameThreadSucceeds(t *testing.T) {
	p, r, thread := warmUp(t)
	id := p.sendAndWait(r, "solo", "big one scenario:contextonce", "completed")
	inv := p.invocations(id)
	if len(inv) != 2 || resumed(inv[0]) != thread || resumed(inv[1]) != thread {
		t.Fatalf("invocations %q; want two, both resuming %s", inv, thread)
	}
	prompts := p.promptsOf(id)
	if len(prompts) != 2 || !strings.Contains(prompts[1], "(retried, attempt 2: the earlier attempt ran out of context window") ||
		strings.Contains(prompts[1], "handoff") {
		t.Fatalf("retry prompt:\n%s", strings.Join(prompts, "\n"))
	}
	if n := r.count(eventlog.EvContextExhaust, ""); n != 0 {
		t.Fatalf("%d context alerts for a message that completed", n)
	}
	if st := r.d.status().Agents[0]; st.ThreadID != thread {
		t.Fatalf("thread %s after the retry; want the same %s", st.ThreadID, thread)
	}
}

// A turn that runs out of context window again after the compaction moves
// to a fresh thread that opens with a handoff: the role, the last reply and
// what the agent was doing, then the message.
func TestContextHandoffToFreshThread(t *testing.T) {
	p, r, thread := warmUp(t)
	id := p.sendAndWait(r, "solo", "huge task scenario:contextsame", "completed")
	inv := p.invocations(id)
	if len(inv) != 3 || resumed(inv[0]) != thread || resumed(inv[1]) != thread || resumed(inv[2]) != "new" {
		t.Fatalf("invocations %q; want two on %s, then a new thread", inv, thread)
	}
	last := p.promptsOf(id)[2]
	for _, w := range []string{"new\n--- batty handoff: this is a fresh thread", "You are agent solo (role solo) of team test.",
		"(" + thread + ") was archived: the context window ran out twice on message " + id,
		"which said: first task", "You replied: ECHO:first task",
		"What you were doing: message " + id + " from human did not fit your previous thread",
		"--- end of handoff ---\n\n--- batty message " + id + " from human (retried on a fresh thread, attempt 3: the earlier attempt ran out of context window) ---",
		"huge task scenario:contextsame"} {
		if !strings.Contains(last, w) {
			t.Errorf("handoff prompt lacks %q:\n%s", w, last)
		}
	}
	st := r.d.status().Agents[0]
	if st.ThreadID == "" || st.ThreadID == thread {
		t.Fatalf("thread %q after the handoff; want a fresh one", st.ThreadID)
	}
	if n := r.count(eventlog.EvContextExhaust, ""); n != 0 {
		t.Fatalf("%d context alerts for a message that completed", n)
	}
	// The handoff was delivered once: the next message resumes the new
	// thread without one.
	next := p.send("solo", "human", "then this")
	if st := r.finished(t, next); st != "completed" {
		t.Fatalf("next: %s", st)
	}
	if pr := p.promptsOf(next); len(pr) != 1 || strings.Contains(pr[0], "handoff") || !strings.HasPrefix(pr[0], st.ThreadID) {
		t.Fatalf("next prompt:\n%s", pr)
	}
}

// A message that overflows even a fresh thread fails once, with one alert;
// the agent is left on a usable thread and completes the next message.
func TestContextAlwaysOverflowingMessageFailsOnce(t *testing.T) {
	p, r, _ := warmUp(t)
	id := p.sendAndWait(r, "solo", "enormous scenario:context", "failed")
	if n := p.deliveries(id); n != 3 {
		t.Fatalf("%d deliveries; want 3 (first, same thread, fresh thread)", n)
	}
	next := p.send("solo", "human", "small one")
	if st := r.finished(t, next); st != "completed" {
		t.Fatalf("next message: %s; want completed", st)
	}
	if n := r.count(eventlog.EvContextExhaust, ""); n != 1 {
		t.Fatalf("%d context alerts; want one", n)
	}
	alert := r.waitEvent(t, "context alert", func(e eventlog.Event) bool { return e.Type == eventlog.EvContextExhaust })
	if alert.Message != id || !strings.Contains(alert.Detail, "does not fit solo's context window (272000 tokens)") ||
		!strings.Contains(alert.Detail, "split it") {
		t.Fatalf("alert %+v", alert)
	}
	done, _, _ := p.box("solo").Get(id)
	if done.Outcome == nil || done.Outcome.Status != "failed" || done.Outcome.Failure != "context_window" {
		t.Fatalf("outcome %+v", done.Outcome)
	}
	inv := p.invocations(next)
	pr := p.promptsOf(next)
	if len(inv) != 1 || resumed(inv[0]) != "new" || !strings.Contains(pr[0], "message "+id+" from human was too large for the context window and was recorded as failed") {
		t.Fatalf("next message ran %q with prompt:\n%s", inv, pr)
	}
}

// A turn that used more of the window than the threshold makes the agent
// hand off at once, idle: the next message opens a fresh thread with the
// handoff.
func TestContextPressureHandsOffAtIdle(t *testing.T) {
	p, r, thread := warmUp(t)
	full := p.sendAndWait(r, "solo", "read everything scenario:usage:250000", "completed")
	e := r.waitEvent(t, "handoff", func(e eventlog.Event) bool { return e.Type == eventlog.EvHandoff })
	if payloadOf[eventlog.Handoff](e).Archived != thread || !strings.Contains(e.Detail, "92% of the 272000-token context window (handoff from 85%)") {
		t.Fatalf("handoff event %+v", e)
	}
	next := p.send("solo", "human", "carry on")
	if st := r.finished(t, next); st != "completed" {
		t.Fatalf("next: %s", st)
	}
	pr := p.promptsOf(next)
	if len(pr) != 1 || !strings.HasPrefix(pr[0], "new\n--- batty handoff") || !strings.Contains(pr[0], "You replied: used 250000") ||
		!strings.Contains(pr[0], "What you were doing: you had just answered message "+full) ||
		!strings.Contains(pr[0], "--- batty message "+next+" from human ---") {
		t.Fatalf("prompt after the handoff:\n%s", pr)
	}
	var st project.AgentState
	if err := project.LoadJSON(p.layout, project.AgentStateName("solo"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Handoff != nil || len(st.ArchivedThreads) != 1 || st.ArchivedThreads[0].ID != thread || len(st.Recent) != 3 {
		t.Fatalf("state %+v", st)
	}
}
