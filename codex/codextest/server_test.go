package codextest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest/sse"
)

// These tests exercise the mock over plain HTTP; they need no codex binary.

func TestFindDirective(t *testing.T) {
	for _, c := range []struct {
		text, name, arg string
		ok              bool
	}{
		{"plain text", "", "", false},
		{"[[mock:quota]]", "quota", "", true},
		{"[batty] from lead:\n[[mock:reply  two words ]]\n", "reply", "two words", true},
		{"[[mock:shell echo a]] then [[mock:slow 2.5]]", "slow", "2.5", true},
		{"[[mock:shell echo a]] then [[mock:unterminated", "shell", "echo a", true},
		{"[[mock:shell\tls -l\n]]", "shell", "ls -l", true},
		{"[mock:quota]", "", "", false},
	} {
		name, arg, ok := findDirective(c.text)
		if name != c.name || arg != c.arg || ok != c.ok {
			t.Errorf("findDirective(%q) = %q, %q, %v; want %q, %q, %v", c.text, name, arg, ok, c.name, c.arg, c.ok)
		}
	}
}

// post sends a Responses request with body and the given turn metadata and
// returns the status and the decoded events (or the raw body on errors).
func post(t *testing.T, ctx context.Context, s *Server, body, metadata string) (int, []sse.Event, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/responses", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if metadata != "" {
		req.Header.Set("x-codex-turn-metadata", metadata)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, nil, string(b)
	}
	evs, err := sse.Read(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, evs, ""
}

func inputBody(items ...string) string {
	return `{"model":"m1","stream":true,"input":[` + strings.Join(items, ",") + `]}`
}

func msg(role, text string) string {
	b, _ := json.Marshal(map[string]any{"type": "message", "role": role,
		"content": []any{map[string]any{"type": "input_text", "text": text}}})
	return string(b)
}

func TestStreamAndRecord(t *testing.T) {
	s := NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body := inputBody(msg("developer", "instructions"), msg("user", "<environment_context/>"), msg("user", "  hi there  "))
	status, evs, _ := post(t, ctx, s, body, `{"thread_id":"th-1","request_kind":"turn"}`)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	want := "response.created,response.output_item.added,response.output_text.delta,response.output_item.done,response.completed"
	if got := sse.Names(evs); got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	for i, e := range evs {
		if e.Data["type"] != e.Name || e.Data["sequence_number"] != float64(i) {
			t.Errorf("event %d: %v", i, e.Data)
		}
	}
	done := evs[3].Data["item"].(map[string]any)
	text := done["content"].([]any)[0].(map[string]any)["text"]
	if text != "ECHO: hi there" || evs[2].Data["delta"] != "ECHO: hi there" {
		t.Errorf("text %v, delta %v", text, evs[2].Data["delta"])
	}
	usage := evs[4].Data["response"].(map[string]any)["usage"].(map[string]any)
	if usage["input_tokens"] != float64(len(body)/4) || usage["output_tokens"].(float64) < 1 ||
		usage["total_tokens"] != usage["input_tokens"].(float64)+usage["output_tokens"].(float64) {
		t.Errorf("usage %v", usage)
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Seq != 1 || r.Kind != "turn" || r.ThreadID != "th-1" || r.Model != "m1" || r.FollowUp || string(r.Body) != body {
		t.Errorf("request %+v", r)
	}
	wantIn := []string{"developer: instructions", "user: <environment_context/>", "user:   hi there  "}
	if strings.Join(r.InputTexts, "|") != strings.Join(wantIn, "|") || len(r.UserTexts) != 2 {
		t.Errorf("InputTexts %q UserTexts %q", r.InputTexts, r.UserTexts)
	}
}

func TestDirectivesOverHTTP(t *testing.T) {
	s := NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	_, evs, _ := post(t, ctx, s, inputBody(msg("user", "x [[mock:shell printf 'a b']] y")), "")
	item := evs[2].Data["item"].(map[string]any)
	if item["type"] != "function_call" || item["name"] != ShellTool || item["arguments"] != `{"cmd":"printf 'a b'","login":false,"yield_time_ms":30000}` {
		t.Errorf("function call item %v", item)
	}

	call := `{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"c1"}`
	out := `{"type":"function_call_output","call_id":"c1","output":"Chunk ID: 1\nProcess exited with code 0\nOutput:\na b\n"}`
	_, evs, _ = post(t, ctx, s, inputBody(msg("user", "[[mock:shell printf 'a b']]"), call, out), "")
	if got := evs[2].Data["delta"]; got != "SHELL_DONE: a b" {
		t.Errorf("follow-up reply %q", got)
	}
	if r := s.Requests()[1]; !r.FollowUp || len(r.ToolOutputs) != 1 {
		t.Errorf("follow-up request %+v", r)
	}

	status, _, raw := post(t, ctx, s, inputBody(msg("user", "[[mock:quota]]")), "")
	var q struct {
		Error struct {
			PlanType string `json:"plan_type"`
			ResetsAt int64  `json:"resets_at"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(raw), &q)
	if status != 429 || !strings.Contains(raw, `"usage_limit_reached"`) || q.Error.PlanType != "plus" ||
		q.Error.ResetsAt < time.Now().Add(59*time.Minute).Unix() {
		t.Errorf("quota: %d %s", status, raw)
	}

	_, evs, _ = post(t, ctx, s, inputBody(msg("user", "[[mock:context]]")), "")
	if sse.Names(evs) != "response.created,response.failed" ||
		evs[1].Data["response"].(map[string]any)["error"].(map[string]any)["code"] != "context_length_exceeded" {
		t.Errorf("context: %v", evs)
	}

	for prompt, want := range map[string]int{"[[mock:auth]]": 401, "[[mock:error500]]": 500, "[[mock:nope]]": 400, "[[mock:slow x]]": 400} {
		if status, _, raw := post(t, ctx, s, inputBody(msg("user", prompt)), ""); status != want {
			t.Errorf("%s: status %d, want %d (%s)", prompt, status, want, raw)
		}
	}
}

func TestHookAndDefault(t *testing.T) {
	s := NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	text := func(evs []sse.Event) any {
		if len(evs) < 3 {
			return nil
		}
		return evs[2].Data["delta"]
	}

	s.SetDefault(&Reply{Text: "default"})
	if _, evs, _ := post(t, ctx, s, inputBody(msg("user", "plain")), ""); text(evs) != "default" {
		t.Errorf("SetDefault: %v", text(evs))
	}
	if _, evs, _ := post(t, ctx, s, inputBody(msg("user", "[[mock:reply r]]")), ""); text(evs) != "r" {
		t.Errorf("directive beside default: %v", text(evs))
	}
	s.SetDefault(nil)
	s.Handle(func(r Request) Reply {
		if r.Kind == "compaction" {
			return TextReply("summary")
		}
		return s.Scripted(r)
	})
	if _, evs, _ := post(t, ctx, s, inputBody(msg("user", "x")), `{"request_kind":"compaction"}`); text(evs) != "summary" {
		t.Errorf("hook: %v", text(evs))
	}
	if _, evs, _ := post(t, ctx, s, inputBody(msg("user", "plain")), ""); text(evs) != "ECHO: plain" {
		t.Errorf("hook fallback: %v", text(evs))
	}
	s.Handle(nil)
	if _, evs, _ := post(t, ctx, s, inputBody(msg("user", "[[mock:reply done]]")), ""); sse.Names(evs) == "" || text(evs) != "done" {
		t.Errorf("hook removed: %v", text(evs))
	}
}

// TestHeldStreamEndsOnClose checks that closing the server ends a stream
// held by a slow reply at once, and that no handler goroutine outlives it.
func TestHeldStreamEndsOnClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var srv *Server
	t.Run("held", func(t *testing.T) {
		srv = NewServer(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/responses",
				strings.NewReader(inputBody(msg("user", "[[mock:slow 600]]"))))
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		if err := srv.WaitRequests(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}) // the subtest's cleanup closes srv here
	wg.Wait()
	if err := srv.waitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("closing the server did not end the held stream")
	}
}

func TestWaitRequestsDeadline(t *testing.T) {
	s := NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.WaitRequests(ctx, 1); err == nil {
		t.Fatal("WaitRequests returned nil with no requests")
	}
}

// fakeTB records how requireExecutable ends a test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()              {}
func (f *fakeTB) Skip(...any)          { f.skipped = true; runtime.Goexit() }
func (f *fakeTB) Skipf(string, ...any) { f.skipped = true; runtime.Goexit() }
func (f *fakeTB) SkipNow()             { f.skipped = true; runtime.Goexit() }
func (f *fakeTB) Fatal(...any)         { f.failed = true; runtime.Goexit() }
func (f *fakeTB) Fatalf(string, ...any) {
	f.failed = true
	runtime.Goexit()
}
func (f *fakeTB) FailNow() { f.failed = true; runtime.Goexit() }

func TestCodexMissing(t *testing.T) {
	t.Setenv("BATTY_CODEX_BIN", t.TempDir()+"/no-such-codex")
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		f := &fakeTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Codex(f)
		}()
		<-done
		if ci == "true" && (!f.failed || f.skipped) || ci == "" && (!f.skipped || f.failed) {
			t.Errorf("CI=%q: skipped %v failed %v", ci, f.skipped, f.failed)
		}
	}
}

// [[mock:quotaheaders]] is a 429 usage limit naming no reset time, whose
// x-codex-primary-* headers say the window is used up and when it resets.
func TestQuotaHeadersReply(t *testing.T) {
	before := time.Now()
	r := directiveReply(Request{}, "quotaheaders", "")
	reset, err := strconv.ParseInt(r.Header.Get("x-codex-primary-reset-at"), 10, 64)
	if r.Status != 429 || !strings.Contains(r.Body, `"usage_limit_reached"`) || strings.Contains(r.Body, "resets_at") || err != nil ||
		r.Header.Get("x-codex-primary-used-percent") != "100" || r.Header.Get("x-codex-primary-window-minutes") != "300" ||
		reset < before.Add(89*time.Minute).Unix() || reset > time.Now().Add(91*time.Minute).Unix() {
		t.Fatalf("quotaheaders reply %+v (reset %d, %v)", r, reset, err)
	}
}
