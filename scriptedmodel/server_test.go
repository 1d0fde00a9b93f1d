package scriptedmodel

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest/sse"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim"
)

// post sends body to the server's responses endpoint and decodes the
// event stream.
func post(t *testing.T, s *Server, path, body string) (int, []sse.Event) {
	t.Helper()
	resp, err := http.Post(strings.TrimSuffix(s.URL, "/v1")+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	evs, err := sse.Read(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, evs
}

func requestBody(t *testing.T, prompt, from, body string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"model": Model, "stream": true, "input": []any{
		map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": prompt}}},
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text",
			"text": shim.FormatPrompt(protocol.SendMessage{ID: "m1", From: from, Body: body})}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServerStreamsSteps(t *testing.T) {
	var mu sync.Mutex
	var seen []Step
	s, err := Start(DemoScript(), Options{Observe: func(st Step) { mu.Lock(); seen = append(seen, st); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || !strings.HasSuffix(s.URL, "/v1") {
		t.Fatalf("URL %q", s.URL)
	}
	sc := DemoScript()

	// A command: a function_call item calling exec_command.
	code, evs := post(t, s, "/v1/responses", requestBody(t, sc.ArchitectPrompt+"\n\n"+shim.CrewInstructions("architect", testBatty, "/p"), "human", Goal))
	if code != 200 || sse.Names(evs) != "response.created,response.output_item.added,response.output_item.done,response.completed" {
		t.Fatalf("status %d, events %s", code, sse.Names(evs))
	}
	item := evs[2].Data["item"].(map[string]any)
	var args map[string]any
	json.Unmarshal([]byte(item["arguments"].(string)), &args)
	if item["type"] != "function_call" || item["name"] != ShellTool || item["status"] != "completed" ||
		args["cmd"] != battyCmd+" send engineer-1 "+shellQuote(sc.Tasks[0].Ask) || item["call_id"] == "" {
		t.Fatalf("function call item %v", item)
	}
	// Called as a real model calls it: codex picks the shell, a login one.
	if _, ok := args["login"]; ok || args["yield_time_ms"] != float64(30000) || len(args) != 2 {
		t.Fatalf("function call item %v", item)
	}
	resp := evs[3].Data["response"].(map[string]any)
	usage := resp["usage"].(map[string]any)
	if resp["status"] != "completed" || len(resp["output"].([]any)) != 1 || usage["input_tokens"].(float64) <= 0 || usage["output_tokens"].(float64) <= 0 {
		t.Fatalf("completed response %v", resp)
	}

	// A final answer: an assistant message, its text in deltas.
	code, evs = post(t, s, "/v1/responses", requestBody(t, "nobody", "human", "hi"))
	if code != 200 || !strings.HasPrefix(sse.Names(evs), "response.created,response.output_item.added,response.output_text.delta") {
		t.Fatalf("status %d, events %s", code, sse.Names(evs))
	}
	var text strings.Builder
	for _, e := range evs {
		if e.Name == "response.output_text.delta" {
			text.WriteString(e.Data["delta"].(string))
		}
	}
	done := evs[len(evs)-2].Data["item"].(map[string]any)
	content := done["content"].([]any)[0].(map[string]any)
	if text.String() != NoPart || content["text"] != NoPart || done["role"] != "assistant" {
		t.Fatalf("deltas %q, item %v", text.String(), done)
	}

	// Anything else is a 404.
	if code, _ := post(t, s, "/v1/models", "{}"); code != http.StatusNotFound {
		t.Fatalf("other path: %d", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0].Agent != "architect" || seen[1].Text != NoPart {
		t.Fatalf("observed %+v", seen)
	}
}

func TestCloseIsIdempotentAndFreesThePort(t *testing.T) {
	s, err := Start(DemoScript(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Post(s.URL+"/responses", "application/json", strings.NewReader("{}")); err == nil {
		t.Fatal("the server still answers after Close")
	}
}

func TestChunks(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want []string
	}{
		{"", 3, []string{""}},
		{"abc", 3, []string{"abc"}},
		{"abcd", 3, []string{"abc", "d"}},
		{"héllo", 2, []string{"hé", "ll", "o"}},
	} {
		got := chunks(c.s, c.n)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("chunks(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestWriteCodexHome(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "home")
	if err := WriteCodexHome(dir, "http://127.0.0.1:1/v1"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "config.toml"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config.toml: %v, %v", fi, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "config.toml"))
	for _, want := range []string{`model_provider = "batty-scripted"`, `base_url = "http://127.0.0.1:1/v1"`, `wire_api = "responses"`, "[model_providers.batty-scripted]"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config.toml lacks %s:\n%s", want, b)
		}
	}
}

// A paced answer holds its stream after response.created; Close ends the
// wait instead of waiting for it, and the observer never hears of a step
// that was not written.
func TestCloseEndsPacedAnswers(t *testing.T) {
	observed := make(chan Step, 1)
	s, err := Start(DemoScript(), Options{Pace: time.Hour, Observe: func(st Step) { observed <- st }})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(s.URL+"/responses", "application/json", strings.NewReader(requestBody(t, "x", "human", "hi")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "event: response.created\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(rest), "response.completed") {
		t.Fatalf("a paced answer was completed after Close: %s", rest)
	}
	select {
	case st := <-observed:
		t.Fatalf("observed %+v", st)
	default:
	}
}
