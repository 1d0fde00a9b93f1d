// Package codex holds everything batty knows about the output and the command
// line of `codex exec --json` (Codex CLI 0.169.0): the JSONL event stream and
// a reader for it, the classification of failure messages, the quota reset
// time embedded in usage-limit messages, the argv of a turn and the resolution
// of the codex executable behind an npm launcher.
//
// The package is pure: it never starts a process.
package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Top-level event types written by `codex exec --json`, one JSON object per
// line, discriminated by the "type" field.
const (
	// TypeThreadStarted is the first line of every run that got a session,
	// also on resume (with the resumed id). It carries Event.ThreadID.
	TypeThreadStarted = "thread.started"
	// TypeTurnStarted is written once per run when the prompt is sent.
	TypeTurnStarted = "turn.started"
	// TypeTurnCompleted is the last line of a successful run (exit status 0).
	// It carries Event.Usage, which is cumulative for the thread.
	TypeTurnCompleted = "turn.completed"
	// TypeTurnFailed is the last line of a failed turn (exit status 1). It
	// carries the failure in Event.Message.
	TypeTurnFailed = "turn.failed"
	// TypeError carries Event.Message. It is written right before
	// TypeTurnFailed with the same text, and also for non-fatal retry notices
	// (see IsRetryNotice); only TypeTurnFailed marks the failure.
	TypeError = "error"
	// TypeItemStarted announces an item (command_execution, file_change,
	// web_search, ...) in its in-progress state. It carries Event.Item.
	TypeItemStarted = "item.started"
	// TypeItemUpdated carries an updated Event.Item (todo_list, file_change).
	TypeItemUpdated = "item.updated"
	// TypeItemCompleted carries an item in its final state in Event.Item.
	// agent_message and reasoning items only ever appear completed.
	TypeItemCompleted = "item.completed"
)

// Item types found in Item.Type.
const (
	// ItemAgentMessage is a reply of the model in Item.Text. A turn may hold
	// several or none; the last one is the answer.
	ItemAgentMessage = "agent_message"
	// ItemReasoning is a reasoning summary in Item.Text.
	ItemReasoning = "reasoning"
	// ItemCommandExecution is a shell command the model ran: Item.Command,
	// Item.AggregatedOutput, Item.ExitCode and Item.Status.
	ItemCommandExecution = "command_execution"
	// ItemFileChange is a patch the model applied: Item.Changes, Item.Status.
	ItemFileChange = "file_change"
	// ItemWebSearch is a web search: Item.Query and Item.CallID.
	ItemWebSearch = "web_search"
	// ItemError is a non-fatal warning in Item.Message; it does not fail the
	// turn.
	ItemError = "error"
	// ItemTodoList is the model's to-do list in Item.Todos.
	ItemTodoList = "todo_list"
	// ItemMCPToolCall is a call to an MCP tool: Item.Server, Item.Tool,
	// Item.Status and, on failure, Item.Message.
	ItemMCPToolCall = "mcp_tool_call"
	// ItemCollabToolCall is a call to a collaboration tool: Item.Tool,
	// Item.Status.
	ItemCollabToolCall = "collab_tool_call"
	// ItemPlan is a proposed plan in Item.Text.
	ItemPlan = "plan"
)

// Values of Item.Status.
const (
	// StatusInProgress is the status of a started, unfinished item.
	StatusInProgress = "in_progress"
	// StatusCompleted is the status of an item that finished successfully.
	StatusCompleted = "completed"
	// StatusFailed is the status of an item that failed, e.g. a command with
	// a non-zero exit code.
	StatusFailed = "failed"
	// StatusDeclined is the status of a command the approval policy refused.
	StatusDeclined = "declined"
)

// Values of FileChange.Kind.
const (
	// ChangeAdd marks a file the patch created.
	ChangeAdd = "add"
	// ChangeDelete marks a file the patch deleted.
	ChangeDelete = "delete"
	// ChangeUpdate marks a file the patch modified.
	ChangeUpdate = "update"
)

// ErrNotObject is returned (or wrapped) by ParseEvent when a line is not a
// single JSON object.
var ErrNotObject = errors.New("codex: line is not a JSON object")

// ErrNoType is returned by ParseEvent when a JSON object has no non-empty
// string "type" field.
var ErrNoType = errors.New(`codex: event has no "type"`)

// Usage is the token usage codex reports in turn.completed. The counts are
// cumulative over the whole thread (every turn and every model request of
// the thread, compaction included, earlier processes too), not per turn:
// use Delta with the previous turn.completed of the same thread to get one
// turn's usage. A context-window failure restarts the thread's total from
// zero (the next resume's compaction request is the first thing counted).
type Usage struct {
	// InputTokens counts all input tokens, cached ones included.
	InputTokens int64 `json:"input_tokens"`
	// CachedInputTokens counts the input tokens served from the prompt
	// cache.
	CachedInputTokens int64 `json:"cached_input_tokens"`
	// CacheWriteInputTokens counts the input tokens written to the cache.
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	// OutputTokens counts all output tokens, reasoning included.
	OutputTokens int64 `json:"output_tokens"`
	// ReasoningOutputTokens counts the reasoning output tokens.
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
}

// Sub returns u minus prev field by field, clamping each field at zero, so
// that a counter that went backwards (a new thread, a reset) never yields a
// negative delta.
func (u Usage) Sub(prev Usage) Usage {
	return Usage{
		InputTokens:           clampSub(u.InputTokens, prev.InputTokens),
		CachedInputTokens:     clampSub(u.CachedInputTokens, prev.CachedInputTokens),
		CacheWriteInputTokens: clampSub(u.CacheWriteInputTokens, prev.CacheWriteInputTokens),
		OutputTokens:          clampSub(u.OutputTokens, prev.OutputTokens),
		ReasoningOutputTokens: clampSub(u.ReasoningOutputTokens, prev.ReasoningOutputTokens),
	}
}

// Delta returns the usage of one run of a thread: u, the thread-cumulative
// usage a turn.completed reported, minus prev, the cumulative usage reported
// before it (the baseline; zero for a fresh thread). A running total only
// grows while codex keeps it; when any count of u is below prev, codex
// started a new total (a compacted or rebuilt thread history, or a baseline
// that belongs to another total), so everything since the restart — u
// itself — is this run's usage, and restarted is true. It is a pure
// function.
func (u Usage) Delta(prev Usage) (d Usage, restarted bool) {
	if u.InputTokens < prev.InputTokens || u.CachedInputTokens < prev.CachedInputTokens ||
		u.CacheWriteInputTokens < prev.CacheWriteInputTokens || u.OutputTokens < prev.OutputTokens ||
		u.ReasoningOutputTokens < prev.ReasoningOutputTokens {
		return u, true
	}
	return u.Sub(prev), false
}

// Add returns the field-by-field sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:           u.InputTokens + o.InputTokens,
		CachedInputTokens:     u.CachedInputTokens + o.CachedInputTokens,
		CacheWriteInputTokens: u.CacheWriteInputTokens + o.CacheWriteInputTokens,
		OutputTokens:          u.OutputTokens + o.OutputTokens,
		ReasoningOutputTokens: u.ReasoningOutputTokens + o.ReasoningOutputTokens,
	}
}

// IsZero reports whether every count is zero.
func (u Usage) IsZero() bool { return u == Usage{} }

func clampSub(a, b int64) int64 {
	if a <= b {
		return 0
	}
	return a - b
}

// Event is one decoded line of `codex exec --json`. Only the fields that
// belong to Type are set; unknown types and fields are tolerated and left
// out.
type Event struct {
	// Type is the "type" field: one of the Type* constants or anything
	// else a newer codex writes.
	Type string
	// ThreadID is the thread id of a thread.started event (a UUIDv7).
	ThreadID string
	// Usage is the thread-cumulative usage of a turn.completed event.
	Usage Usage
	// Message is the top-level "message" of an error event or the
	// "error.message" of a turn.failed event.
	Message string
	// Item is the item of an item.* event, nil otherwise.
	Item *Item
}

// Item is a thread item carried by item.started, item.updated and
// item.completed. Which fields are set depends on Type.
type Item struct {
	// ID is the item id, "item_0", "item_1", ... counted per codex process
	// (every resume starts again at item_0). A web_search item carries a
	// second "id" key; ID keeps the first one (the item id) and CallID the
	// second.
	ID string `json:"id"`
	// Type is one of the Item* constants or anything else.
	Type string `json:"type"`
	// Text is the text of agent_message, reasoning and plan items.
	Text string `json:"text"`
	// Command is the command line of a command_execution item, e.g.
	// "/bin/bash -lc 'echo hi'".
	Command string `json:"command"`
	// AggregatedOutput is the interleaved stdout and stderr of a
	// command_execution item ("\r\n" line ends when run on a PTY).
	AggregatedOutput string `json:"aggregated_output"`
	// ExitCode is the exit code of a finished command_execution item; nil
	// while it runs.
	ExitCode *int `json:"exit_code"`
	// Status is one of the Status* constants.
	Status string `json:"status"`
	// Changes lists the files of a file_change item.
	Changes []FileChange `json:"changes"`
	// Query is the query of a web_search item.
	Query string `json:"query"`
	// CallID is the web-search call id of a web_search item ("ws_..."), the
	// second "id" key of its object; empty for other items.
	CallID string `json:"-"`
	// Message is the message of an error item, or the error message of a
	// failed mcp_tool_call item.
	Message string `json:"message"`
	// Todos is the list of a todo_list item.
	Todos []TodoItem `json:"items"`
	// Server is the MCP server of an mcp_tool_call item.
	Server string `json:"server"`
	// Tool is the tool name of an mcp_tool_call or collab_tool_call item.
	Tool string `json:"tool"`
}

// FileChange is one file of a file_change item: an absolute Path and a Kind
// (ChangeAdd, ChangeDelete or ChangeUpdate).
type FileChange struct {
	// Path is the absolute path of the file.
	Path string `json:"path"`
	// Kind is ChangeAdd, ChangeDelete or ChangeUpdate.
	Kind string `json:"kind"`
}

// TodoItem is one entry of a todo_list item.
type TodoItem struct {
	// Text is the step.
	Text string `json:"text"`
	// Completed reports whether the step is done.
	Completed bool `json:"completed"`
}

// wireEvent is the union of every top-level shape codex writes.
type wireEvent struct {
	Type     *string    `json:"type"`
	ThreadID string     `json:"thread_id"`
	Usage    Usage      `json:"usage"`
	Message  string     `json:"message"`
	Error    *wireError `json:"error"`
	Item     *wireItem  `json:"item"`
}

type wireError struct {
	Message string `json:"message"`
}

type wireItem struct {
	Item
	Error *wireError `json:"error"`
	// ExitCode shadows Item.ExitCode so that a value that is not an integer
	// leaves Item.ExitCode nil instead of pointing at a zero.
	ExitCode json.RawMessage `json:"exit_code"`
}

var idKey = []byte(`"id"`)

// ParseEvent decodes one line of `codex exec --json` output (surrounding
// whitespace allowed). It is tolerant: unknown types and fields are ignored,
// and a field of an unexpected JSON type is left at its zero value. It
// fails only when line is not a single JSON object (the error is or wraps
// ErrNotObject) or has no non-empty string "type" (ErrNoType). Duplicate
// keys do not fail (see Item.ID for the web_search case). The returned
// Event shares no memory with line.
func ParseEvent(line []byte) (Event, error) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Event{}, ErrNotObject
	}
	var w wireEvent
	if err := json.Unmarshal(trimmed, &w); err != nil {
		// A value of the wrong JSON type is skipped by encoding/json, which
		// still decodes everything else; anything else is not JSON.
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return Event{}, fmt.Errorf("%w: %w", ErrNotObject, err)
		}
	}
	if w.Type == nil || *w.Type == "" {
		return Event{}, ErrNoType
	}
	ev := Event{Type: *w.Type}
	switch ev.Type {
	case TypeThreadStarted:
		ev.ThreadID = w.ThreadID
	case TypeTurnCompleted:
		ev.Usage = w.Usage
	case TypeTurnFailed:
		if w.Error != nil {
			ev.Message = w.Error.Message
		}
		if ev.Message == "" {
			ev.Message = w.Message
		}
	default:
		ev.ThreadID = w.ThreadID
		ev.Usage = w.Usage
		ev.Message = w.Message
		if ev.Message == "" && w.Error != nil {
			ev.Message = w.Error.Message
		}
	}
	if w.Item != nil {
		it := w.Item.Item
		it.ExitCode = parseExitCode(w.Item.ExitCode)
		if it.Message == "" && w.Item.Error != nil {
			it.Message = w.Item.Error.Message
		}
		if bytes.Count(trimmed, idKey) >= 2 {
			if ids := itemIDs(trimmed); len(ids) >= 2 {
				it.ID, it.CallID = ids[0], ids[len(ids)-1]
			}
		}
		ev.Item = &it
	}
	return ev, nil
}

// parseExitCode decodes an exit_code value: an integer, or nil for null,
// absent or anything else.
func parseExitCode(raw json.RawMessage) *int {
	if len(raw) == 0 || raw[0] == 'n' {
		return nil
	}
	var code int
	if err := json.Unmarshal(raw, &code); err != nil {
		return nil
	}
	return &code
}

// itemIDs returns, in order, every string value of an "id" key directly in
// the "item" object of an event line. encoding/json keeps only the last of
// duplicate keys, which for web_search items is the call id.
func itemIDs(line []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(line))
	if !expectDelim(dec, '{') {
		return nil
	}
	for dec.More() {
		key, ok := nextKey(dec)
		if !ok {
			return nil
		}
		if key != "item" {
			if !skipValue(dec) {
				return nil
			}
			continue
		}
		if !expectDelim(dec, '{') {
			return nil
		}
		var ids []string
		for dec.More() {
			k, ok := nextKey(dec)
			if !ok {
				return nil
			}
			if k != "id" {
				if !skipValue(dec) {
					return nil
				}
				continue
			}
			var id string
			if err := dec.Decode(&id); err != nil {
				return nil
			}
			ids = append(ids, id)
		}
		return ids
	}
	return nil
}

func expectDelim(dec *json.Decoder, want json.Delim) bool {
	tok, err := dec.Token()
	if err != nil {
		return false
	}
	d, ok := tok.(json.Delim)
	return ok && d == want
}

func nextKey(dec *json.Decoder) (string, bool) {
	tok, err := dec.Token()
	if err != nil {
		return "", false
	}
	k, ok := tok.(string)
	return k, ok
}

func skipValue(dec *json.Decoder) bool {
	var skip json.RawMessage
	return dec.Decode(&skip) == nil
}
