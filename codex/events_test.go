package codex

import (
	"errors"
	"reflect"
	"testing"
)

func intp(i int) *int { return &i }

func TestParseEvent(t *testing.T) {
	cases := []struct {
		name string
		line string
		want Event
	}{
		{"thread.started", `{"type":"thread.started","thread_id":"01a1fe06-da19-7320-bb56-f999f5fa1a4a"}`,
			Event{Type: TypeThreadStarted, ThreadID: "01a1fe06-da19-7320-bb56-f999f5fa1a4a"}},
		{"turn.started", `{"type":"turn.started"}`, Event{Type: TypeTurnStarted}},
		{"turn.completed", `{"type":"turn.completed","usage":{"input_tokens":9526,"cached_input_tokens":2,"cache_write_input_tokens":3,"output_tokens":4,"reasoning_output_tokens":5}}`,
			Event{Type: TypeTurnCompleted, Usage: Usage{9526, 2, 3, 4, 5}}},
		{"turn.failed", `{"type":"turn.failed","error":{"message":"Quota exceeded. Check your plan and billing details."}}`,
			Event{Type: TypeTurnFailed, Message: "Quota exceeded. Check your plan and billing details."}},
		{"error", `{"type":"error","message":"Reconnecting... 1/2 (x)"}`, Event{Type: TypeError, Message: "Reconnecting... 1/2 (x)"}},
		{"agent_message", `{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"ECHO:text-fresh"}}`,
			Event{Type: TypeItemCompleted, Item: &Item{ID: "item_0", Type: ItemAgentMessage, Text: "ECHO:text-fresh"}}},
		{"command running", `{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'true'","aggregated_output":"","exit_code":null,"status":"in_progress"}}`,
			Event{Type: TypeItemStarted, Item: &Item{ID: "item_0", Type: ItemCommandExecution, Command: "/bin/bash -lc 'true'", Status: StatusInProgress}}},
		{"command done", `{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"c","aggregated_output":"out\n","exit_code":0,"status":"completed"}}`,
			Event{Type: TypeItemCompleted, Item: &Item{ID: "item_0", Type: ItemCommandExecution, Command: "c", AggregatedOutput: "out\n", ExitCode: intp(0), Status: StatusCompleted}}},
		{"web_search duplicate id", `{"type":"item.started","item":{"id":"item_0","type":"web_search","id":"ws_000025","query":"q","action":{"type":"search","query":"q"}}}`,
			Event{Type: TypeItemStarted, Item: &Item{ID: "item_0", CallID: "ws_000025", Type: ItemWebSearch, Query: "q"}}},
		{"todo_list", `{"type":"item.updated","item":{"id":"item_3","type":"todo_list","items":[{"text":"a","completed":true},{"text":"b","completed":false}]}}`,
			Event{Type: TypeItemUpdated, Item: &Item{ID: "item_3", Type: ItemTodoList, Todos: []TodoItem{{"a", true}, {"b", false}}}}},
		{"mcp failure", `{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"s","tool":"t","arguments":{},"result":null,"error":{"message":"boom"},"status":"failed"}}`,
			Event{Type: TypeItemCompleted, Item: &Item{ID: "item_1", Type: ItemMCPToolCall, Server: "s", Tool: "t", Message: "boom", Status: StatusFailed}}},
		{"unknown type and fields", `{"type":"item.plan.delta","item_id":"item_2","delta":"x","future":[1,{"a":null}]}`, Event{Type: "item.plan.delta"}},
		{"wrong field types tolerated", `{"type":"turn.completed","usage":{"input_tokens":"many","output_tokens":7},"thread_id":5}`,
			Event{Type: TypeTurnCompleted, Usage: Usage{OutputTokens: 7}}},
		{"wrong item field type", `{"type":"item.completed","item":{"id":"item_0","type":"command_execution","exit_code":1.5,"status":"failed","changes":"x"}}`,
			Event{Type: TypeItemCompleted, Item: &Item{ID: "item_0", Type: ItemCommandExecution, Status: StatusFailed}}},
		{"surrounding whitespace and CR", " \t{\"type\":\"turn.started\"}\r\n", Event{Type: TypeTurnStarted}},
		{"null item", `{"type":"item.completed","item":null}`, Event{Type: TypeItemCompleted}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseEvent([]byte(c.line))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v %+v\nwant %+v %+v", got, got.Item, c.want, c.want.Item)
			}
		})
	}
}

func TestParseEventErrors(t *testing.T) {
	cases := []struct {
		line string
		want error
	}{
		{``, ErrNotObject},
		{`   `, ErrNotObject},
		{`[{"type":"x"}]`, ErrNotObject},
		{`"turn.started"`, ErrNotObject},
		{`null`, ErrNotObject},
		{`42`, ErrNotObject},
		{`{"type":"turn.started"`, ErrNotObject},
		{`{"type":"turn.started"} {"type":"turn.started"}`, ErrNotObject},
		{`{"type":"turn.started"} junk`, ErrNotObject},
		{"{\"type\":\"a\xffb\"", ErrNotObject},
		{`{}`, ErrNoType},
		{`{"type":""}`, ErrNoType},
		{`{"type":7}`, ErrNoType},
		{`{"type":null}`, ErrNoType},
		{`{"thread_id":"x"}`, ErrNoType},
	}
	for _, c := range cases {
		_, err := ParseEvent([]byte(c.line))
		if !errors.Is(err, c.want) {
			t.Errorf("ParseEvent(%q) error %v, want %v", c.line, err, c.want)
		}
	}
}

func TestParseEventDoesNotAlias(t *testing.T) {
	line := []byte(`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"hello"}}`)
	ev, err := ParseEvent(line)
	if err != nil {
		t.Fatal(err)
	}
	for i := range line {
		line[i] = 'x'
	}
	if ev.Item.Text != "hello" || ev.Item.ID != "item_0" {
		t.Errorf("event changed with its line: %+v", ev.Item)
	}
}

func TestUsage(t *testing.T) {
	a := Usage{InputTokens: 19123, CachedInputTokens: 100, CacheWriteInputTokens: 5, OutputTokens: 7, ReasoningOutputTokens: 3}
	b := Usage{InputTokens: 9522, CachedInputTokens: 200, CacheWriteInputTokens: 5, OutputTokens: 3, ReasoningOutputTokens: 0}
	if got, want := a.Sub(b), (Usage{InputTokens: 9601, OutputTokens: 4, ReasoningOutputTokens: 3}); got != want {
		t.Errorf("Sub = %+v, want %+v", got, want)
	}
	if got, want := b.Sub(a), (Usage{CachedInputTokens: 100}); got != want {
		t.Errorf("Sub of a larger usage = %+v, want %+v", got, want)
	}
	if got, want := a.Add(b), (Usage{28645, 300, 10, 10, 3}); got != want {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
	if (Usage{}).Sub(Usage{}) != (Usage{}) || !(Usage{}).IsZero() || a.IsZero() {
		t.Error("zero usage")
	}
}

// TestUsageDelta: a growing total yields the difference; a total that went
// down (codex restarted it) yields the new total, never zeros.
func TestUsageDelta(t *testing.T) {
	// Cumulative figures of context-then-resume.2-resume and .3-resume-again.
	before := Usage{InputTokens: 17150, OutputTokens: 9}
	after := Usage{InputTokens: 26927, OutputTokens: 14}
	restartedTotal := Usage{InputTokens: 9700, OutputTokens: 20}
	for _, c := range []struct {
		name          string
		u, prev, want Usage
		restarted     bool
	}{
		{"fresh thread", before, Usage{}, before, false},
		{"next turn", after, before, Usage{InputTokens: 9777, OutputTokens: 5}, false},
		{"same total", after, after, Usage{}, false},
		{"total went down", restartedTotal, after, restartedTotal, true},
		{"only output went down", Usage{InputTokens: 30000, OutputTokens: 1}, after, Usage{InputTokens: 30000, OutputTokens: 1}, true},
		{"only cache write went down", Usage{InputTokens: 30000, OutputTokens: 20}, Usage{InputTokens: 1, CacheWriteInputTokens: 5}, Usage{InputTokens: 30000, OutputTokens: 20}, true},
	} {
		got, restarted := c.u.Delta(c.prev)
		if got != c.want || restarted != c.restarted {
			t.Errorf("%s: Delta = %+v, %v; want %+v, %v", c.name, got, restarted, c.want, c.restarted)
		}
	}
}

func TestEventIsTerminal(t *testing.T) {
	for typ, want := range map[string]bool{
		TypeTurnCompleted: true, TypeTurnFailed: true, TypeError: false,
		TypeThreadStarted: false, TypeTurnStarted: false, TypeItemCompleted: false,
	} {
		if (Event{Type: typ}).IsTerminal() != want {
			t.Errorf("%s: IsTerminal != %v", typ, want)
		}
	}
}
