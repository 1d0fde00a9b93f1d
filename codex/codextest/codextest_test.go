package codextest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
)

// ownerMarker is put into the environment of every codex these tests start
// (and so of every command codex runs), so TestMain can find leftovers.
var ownerMarker = "CODEXTEST_OWNER=" + strconv.Itoa(os.Getpid())

// TestMain fails the run if any process started by the tests is still alive
// once they are done, and kills it.
func TestMain(m *testing.M) {
	code := m.Run()
	if pids := leftovers(); len(pids) > 0 {
		fmt.Fprintf(os.Stderr, "codextest: processes left running: %v\n", pids)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		code = 1
	}
	os.Exit(code)
}

// leftovers returns the pids whose environment holds ownerMarker (Linux
// /proc; none elsewhere).
func leftovers() []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/environ")
	var pids []int
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(b, []byte{0}) {
			if string(kv) == ownerMarker {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
				if pid != os.Getpid() {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}

// leftoversGone waits until leftovers finds no process, or ctx ends, and
// returns what it found last: a process killed a moment ago (SIGKILL is
// delivered, not waited for) can still be exiting.
func leftoversGone(ctx context.Context) []int {
	for {
		pids := leftovers()
		if len(pids) == 0 || ctx.Err() != nil {
			return pids
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond): // other processes: polled
		}
	}
}

// turnTimeout bounds every wait on a real codex run. A turn takes well under
// a second here; the margin is for loaded CI machines and -race.
const turnTimeout = 60 * time.Second

// run starts codex on prompt and returns it with a context for its waits.
func run(t *testing.T, s *Server, home, resume, prompt string) (*Proc, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	t.Cleanup(cancel)
	p := Start(t, Invocation{Home: home, Resume: resume, Prompt: prompt, Env: []string{ownerMarker}})
	return p, ctx
}

// finish waits for the terminal event of typ, then for exit with code rc,
// logs the timings and returns the terminal event.
func finish(t *testing.T, ctx context.Context, p *Proc, typ string, rc int) Event {
	t.Helper()
	ev, err := p.WaitEvent(ctx, typ, "")
	if err != nil {
		t.Fatalf("%v\nevents: %s", err, rawEvents(p))
	}
	atEvent := time.Since(p.Started)
	code, err := p.Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	t.Logf("%s after %v, exit %d after %v", typ, atEvent.Round(time.Millisecond), code, time.Since(p.Started).Round(time.Millisecond))
	if code != rc {
		t.Fatalf("exit code %d, want %d; stderr %q\nevents: %s", code, rc, p.Stderr(), rawEvents(p))
	}
	return ev
}

// waitEvent is p.WaitEvent that fails the test with every event seen.
func waitEvent(t *testing.T, ctx context.Context, p *Proc, typ, itemType string) Event {
	t.Helper()
	ev, err := p.WaitEvent(ctx, typ, itemType)
	if err != nil {
		t.Fatalf("%v\nevents:\n%s", err, rawEvents(p))
	}
	return ev
}

func rawEvents(p *Proc) string {
	var b strings.Builder
	for _, ev := range p.Events() {
		b.Write(ev.Raw)
		b.WriteByte('\n')
	}
	return b.String()
}

// lastAgentMessage returns the text of the last agent_message item.
func lastAgentMessage(p *Proc) string {
	text := ""
	for _, ev := range p.Events() {
		if ev.Type == "item.completed" && ev.Item != nil && ev.Item.Type == "agent_message" {
			text = ev.Item.Text
		}
	}
	return text
}

func threadID(t *testing.T, p *Proc) string {
	t.Helper()
	for _, ev := range p.Events() {
		if ev.Type == "thread.started" {
			return ev.ThreadID
		}
	}
	t.Fatalf("no thread.started in %s", rawEvents(p))
	return ""
}

func TestTextReply(t *testing.T) {
	bin := CodexNative(t)
	s := NewServer(t)
	home := s.WriteHome(t)
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()

	p := Start(t, Invocation{Bin: bin, Home: home, Prompt: "hello from the test", Env: []string{ownerMarker}})
	finish(t, ctx, p, "turn.completed", 0)
	if got, want := lastAgentMessage(p), "ECHO: hello from the test"; got != want {
		t.Errorf("agent_message %q, want %q", got, want)
	}

	p = Start(t, Invocation{Bin: bin, Home: home, Prompt: "header line\n[[mock:reply exact answer]]\n", Env: []string{ownerMarker}})
	ev := finish(t, ctx, p, "turn.completed", 0)
	if got := lastAgentMessage(p); got != "exact answer" {
		t.Errorf("agent_message %q, want %q", got, "exact answer")
	}
	if ev.Usage == nil || ev.Usage.InputTokens == 0 || ev.Usage.OutputTokens == 0 {
		t.Errorf("usage %s", ev.Raw)
	}

	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	r := reqs[1]
	if r.Kind != "turn" || r.ThreadID != threadID(t, p) || r.Model != DefaultModel {
		t.Errorf("request kind %q thread %q model %q", r.Kind, r.ThreadID, r.Model)
	}
	if !strings.Contains(r.LastUserText(), "[[mock:reply exact answer]]") {
		t.Errorf("last user text %q", r.LastUserText())
	}
	if os.Getenv("CODEXTEST_DUMP") != "" {
		_ = os.WriteFile(os.Getenv("CODEXTEST_DUMP"), r.Body, 0o644)
	}
}

func TestResume(t *testing.T) {
	s := NewServer(t)
	home := s.WriteHome(t)

	p, ctx := run(t, s, home, "", "first turn text")
	finish(t, ctx, p, "turn.completed", 0)
	id := threadID(t, p)

	p, ctx = run(t, s, home, id, "second turn text")
	finish(t, ctx, p, "turn.completed", 0)
	if got := threadID(t, p); got != id {
		t.Fatalf("resumed thread %q, want %q", got, id)
	}
	if got, want := lastAgentMessage(p), "ECHO: second turn text"; got != want {
		t.Errorf("agent_message %q, want %q", got, want)
	}

	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	second := reqs[1]
	if second.ThreadID != id {
		t.Errorf("second request thread %q, want %q", second.ThreadID, id)
	}
	want := []string{"user: first turn text", "assistant: ECHO: first turn text", "user: second turn text"}
	i := 0
	for _, in := range second.InputTexts {
		if i < len(want) && strings.TrimSpace(in) == want[i] {
			i++
		}
	}
	if i != len(want) {
		t.Errorf("second request input lacks %q in order; input:\n%s", want[i], strings.Join(second.InputTexts, "\n---\n"))
	}
}

func TestShell(t *testing.T) {
	s := NewServer(t)
	home := s.WriteHome(t)
	p, ctx := run(t, s, home, "", "[[mock:shell echo shell-says-$((6*7)); exit 3]]")

	started := waitEvent(t, ctx, p, "item.started", "command_execution")
	done := waitEvent(t, ctx, p, "item.completed", "command_execution")
	finish(t, ctx, p, "turn.completed", 0)
	t.Logf("%s", done.Raw)
	if started.Item.ID != done.Item.ID || !strings.Contains(done.Item.Command, "echo shell-says") {
		t.Errorf("started %s, completed %s", started.Raw, done.Raw)
	}
	if !strings.Contains(done.Item.AggregatedOutput, "shell-says-42") {
		t.Errorf("aggregated_output %q", done.Item.AggregatedOutput)
	}
	if done.Item.ExitCode == nil || *done.Item.ExitCode != 3 || done.Item.Status != "failed" {
		t.Errorf("completed item %s, want exit_code 3 status failed", done.Raw)
	}
	if got := lastAgentMessage(p); !strings.HasPrefix(got, "SHELL_DONE: ") || !strings.Contains(got, "shell-says-42") {
		t.Errorf("agent_message %q", got)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].FollowUp || !reqs[1].FollowUp {
		t.Fatalf("want a tool call then one follow-up, got %d requests", len(reqs))
	}
	if os.Getenv("CODEXTEST_DUMP") != "" {
		_ = os.WriteFile(os.Getenv("CODEXTEST_DUMP")+".shell", reqs[1].Body, 0o644)
	}
}

func TestQuota(t *testing.T) {
	s := NewServer(t)
	home := s.WriteHome(t)
	p, ctx := run(t, s, home, "", "[[mock:quota]]")
	ev := finish(t, ctx, p, "turn.failed", 1)
	msg := ev.Error.Message
	if !strings.HasPrefix(msg, "You’ve hit your usage limit") || !strings.Contains(msg, "try again at") {
		t.Errorf("turn.failed message %q", msg)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (no retry)", n)
	}
}

func TestContextWindow(t *testing.T) {
	s := NewServer(t)
	home := s.WriteHome(t)
	p, ctx := run(t, s, home, "", "[[mock:context]]")
	ev := finish(t, ctx, p, "turn.failed", 1)
	want := "Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying."
	if ev.Error.Message != want {
		t.Errorf("turn.failed message %q, want %q", ev.Error.Message, want)
	}
}

func TestSlowInterrupt(t *testing.T) {
	s := NewServer(t)
	home := s.WriteHome(t)
	p, ctx := run(t, s, home, "", "[[mock:slow 120]]")
	if err := s.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitEvent(ctx, "turn.started", ""); err != nil {
		t.Fatal(err)
	}
	if !containsInt(leftovers(), p.Pid()) {
		t.Errorf("running codex (pid %d) not found by leftovers()", p.Pid())
	}
	sent := time.Now()
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	code, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGINT to exit: %v, exit %d", time.Since(sent).Round(time.Millisecond), code)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for _, ev := range p.Events() {
		if ev.Type == "turn.completed" || ev.Type == "turn.failed" {
			t.Errorf("unexpected %s", ev.Raw)
		}
	}
	if _, err := p.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("Next after exit: %v, want io.EOF", err)
	}
	if err := s.waitIdle(ctx); err != nil {
		t.Errorf("held stream not released after codex exited: %v", err)
	}
}

func TestHTTPErrors(t *testing.T) {
	s := NewServer(t)
	home := s.WriteHome(t)
	for _, c := range []struct{ prompt, want string }{
		{"[[mock:auth]]", "unexpected status 401 Unauthorized: Incorrect API key provided"},
		{"[[mock:error500]]", "We’re currently experiencing high demand"},
	} {
		n := len(s.Requests())
		p, ctx := run(t, s, home, "", c.prompt)
		ev := finish(t, ctx, p, "turn.failed", 1)
		if !strings.HasPrefix(ev.Error.Message, c.want) {
			t.Errorf("%s: turn.failed %q, want prefix %q", c.prompt, ev.Error.Message, c.want)
		}
		if got := len(s.Requests()) - n; got != 1 {
			t.Errorf("%s: %d requests, want 1 (retries are 0)", c.prompt, got)
		}
	}
}

// TestContextThenResumeCompacts shows the request sequence after a context
// failure: the next resume first sends a compaction request.
func TestContextThenResumeCompacts(t *testing.T) {
	s := NewServer(t)
	home := s.WriteHome(t)
	p, ctx := run(t, s, home, "", "[[mock:context]]")
	finish(t, ctx, p, "turn.failed", 1)
	id := threadID(t, p)

	p, ctx = run(t, s, home, id, "after the failure")
	finish(t, ctx, p, "turn.completed", 0)
	if got := lastAgentMessage(p); got != "ECHO: after the failure" {
		t.Errorf("agent_message %q", got)
	}
	reqs := s.Requests()
	var kinds []string
	for _, r := range reqs {
		kinds = append(kinds, r.Kind)
	}
	if strings.Join(kinds, ",") != "turn,compaction,turn" {
		t.Fatalf("request kinds %v, want turn,compaction,turn", kinds)
	}
	if !strings.Contains(reqs[1].LastUserText(), "CONTEXT CHECKPOINT COMPACTION") || reqs[1].ThreadID != id {
		t.Errorf("compaction request: thread %q, last user text %.80q", reqs[1].ThreadID, reqs[1].LastUserText())
	}
}

// TestLauncher runs one turn through the npm launcher (node + native child)
// and interrupts a second one, to check both processes go away.
func TestLauncher(t *testing.T) {
	bin := Codex(t)
	s := NewServer(t)
	home := s.WriteHome(t)
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	p := Start(t, Invocation{Bin: bin, Home: home, Prompt: "via the launcher", Env: []string{ownerMarker}})
	finish(t, ctx, p, "turn.completed", 0)
	if got := lastAgentMessage(p); got != "ECHO: via the launcher" {
		t.Errorf("agent_message %q", got)
	}

	p = Start(t, Invocation{Bin: bin, Home: home, Prompt: "[[mock:slow 120]]", Env: []string{ownerMarker}})
	if err := s.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(ctx); err != nil || code != 1 {
		t.Fatalf("exit %d, %v; want 1", code, err)
	}
	if err := s.waitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if pids := leftoversGone(ctx); len(pids) > 0 {
		t.Errorf("processes left after interrupt: %v", pids)
	}
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestShellInterrupt interrupts codex while the model's command runs and
// checks that the command is gone too.
func TestShellInterrupt(t *testing.T) {
	s := NewServer(t)
	home := s.WriteHome(t)
	p, ctx := run(t, s, home, "", "[[mock:shell sleep 60; echo never]]")
	if _, err := p.WaitEvent(ctx, "item.started", "command_execution"); err != nil {
		t.Fatal(err)
	}
	t.Logf("running before the interrupt (codex and its command): %v", leftovers())
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(ctx); err != nil || code != 1 {
		t.Fatalf("exit %d, %v; want 1", code, err)
	}
	// codex kills the command's process group on SIGINT before it exits;
	// a killed process may take a moment to be gone.
	if pids := leftoversGone(ctx); len(pids) > 0 {
		t.Errorf("processes left after interrupt: %v", pids)
	}
}

// The fake's quota message reads back as the reset time it was given, on
// any day of any month: the suite never depends on the calendar.
func TestQuotaMessageParsesBack(t *testing.T) {
	now := time.Now()
	for _, at := range []time.Time{
		now.Add(time.Hour).Truncate(time.Minute),
		time.Date(now.Year()+1, 1, 1, 0, 5, 0, 0, time.Local),
		time.Date(now.Year()+1, 2, 2, 12, 30, 0, 0, time.Local),
		time.Date(now.Year()+1, 3, 3, 23, 59, 0, 0, time.Local),
		time.Date(now.Year()+1, 4, 11, 9, 1, 0, 0, time.Local),
		time.Date(now.Year()+1, 5, 22, 13, 0, 0, 0, time.Local),
		time.Date(now.Year()+1, 6, 13, 1, 0, 0, 0, time.Local),
	} {
		msg := QuotaMessage(at)
		// Printed to the minute: reset by the end of that minute.
		got, ok := codex.ResetBy(msg, now, time.Local)
		if !ok || !got.Equal(at.Add(time.Minute)) {
			t.Errorf("%q parsed as %v, %v; want %v", msg, got, ok, at.Add(time.Minute))
		}
		if codex.Classify(msg) != codex.FailureQuota {
			t.Errorf("%q not classified as quota", msg)
		}
	}
}
