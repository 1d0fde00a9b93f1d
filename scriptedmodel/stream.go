package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Stream writes one model response as the Responses API streams it:
// server-sent events, each numbered ("sequence_number" from 0) and flushed
// as it is written. [StartStream] writes response.created; each call of
// [Stream.FunctionCall] or [Stream.Message] then adds one output item; the
// stream ends with [Stream.Complete] or [Stream.Fail], or with nothing
// more when the handler stops early (a client that left).
//
// A Stream belongs to the HTTP handler that started it and must only be
// used on that handler's goroutine, before it returns. Write errors (a
// client that went away) are ignored: the client is gone, and the handler
// learns of it from the request's context.
type Stream struct {
	w        io.Writer
	rc       *http.ResponseController
	seq      int
	tag      string
	reqSize  int
	resp     map[string]any
	output   []any
	produced int // bytes of text and call arguments written
}

// StartStream answers with status 200 and an event stream on w (headers
// Content-Type: text/event-stream and Cache-Control: no-cache, set after
// any the caller set, so other headers must be set before) and writes
// response.created for a response of model, status "in_progress". tag
// makes the stream's ids: "resp_"+tag for the response, "msg_"+tag,
// "fc_"+tag and "call_"+tag for its item. reqSize is the request body's
// size in bytes, from which [Stream.Complete] estimates input tokens.
func StartStream(w http.ResponseWriter, tag, model string, reqSize int) *Stream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	s := &Stream{w: w, rc: http.NewResponseController(w), tag: tag, reqSize: reqSize}
	s.resp = map[string]any{
		"id": "resp_" + tag, "object": "response", "created_at": time.Now().Unix(),
		"status": "in_progress", "model": model, "output": []any{},
	}
	s.event("response.created", map[string]any{"response": s.resp})
	return s
}

// FunctionCall adds a function_call item calling tool name with arguments
// (a JSON text): output_item.added with empty arguments and status
// "in_progress", then output_item.done with the arguments and status
// "completed".
func (s *Stream) FunctionCall(name, arguments string) {
	item := map[string]any{
		"type": "function_call", "id": "fc_" + s.tag, "call_id": "call_" + s.tag,
		"name": name, "arguments": "", "status": "in_progress",
	}
	s.event("response.output_item.added", map[string]any{"output_index": len(s.output), "item": item})
	item = clone(item)
	item["arguments"], item["status"] = arguments, "completed"
	s.done(item, len(arguments))
}

// Message adds an assistant message item of text: output_item.added, then
// text deltas of at most 64 runes (one empty delta when text is empty),
// then output_item.done with the whole text as one output_text part.
func (s *Stream) Message(text string) {
	msgID := "msg_" + s.tag
	idx := len(s.output)
	item := map[string]any{"type": "message", "id": msgID, "role": "assistant", "status": "in_progress", "content": []any{}}
	s.event("response.output_item.added", map[string]any{"output_index": idx, "item": item})
	for _, chunk := range chunks(text, 64) {
		s.event("response.output_text.delta", map[string]any{
			"item_id": msgID, "output_index": idx, "content_index": 0, "delta": chunk,
		})
	}
	item = clone(item)
	item["status"] = "completed"
	item["content"] = []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}
	s.done(item, len(text))
}

// done writes output_item.done for item and records it as output that
// produced n bytes.
func (s *Stream) done(item map[string]any, n int) {
	s.event("response.output_item.done", map[string]any{"output_index": len(s.output), "item": item})
	s.output = append(s.output, item)
	s.produced += n
}

// Complete ends the stream with response.completed: status "completed",
// the items added so far as output (an empty list when none), and usage
// with inputTokens and outputTokens (cached and reasoning tokens 0, total
// their sum). A count of 0 is estimated: input as the request's size / 4,
// output as the size of the produced text or call arguments / 4 + 1.
func (s *Stream) Complete(inputTokens, outputTokens int) {
	if inputTokens == 0 {
		inputTokens = s.reqSize / 4
	}
	if outputTokens == 0 {
		outputTokens = s.produced/4 + 1
	}
	s.resp["status"] = "completed"
	s.resp["output"] = s.output
	if s.output == nil {
		s.resp["output"] = []any{}
	}
	s.resp["usage"] = map[string]any{
		"input_tokens":          inputTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": 0},
		"output_tokens":         outputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          inputTokens + outputTokens,
	}
	s.event("response.completed", map[string]any{"response": s.resp})
}

// Fail ends the stream with response.failed: status "failed" and error
// {code, message}.
func (s *Stream) Fail(code, message string) {
	s.resp["status"] = "failed"
	s.resp["error"] = map[string]any{"code": code, "message": message}
	s.event("response.failed", map[string]any{"response": s.resp})
}

// event writes one event of type typ whose data is fields plus "type" and
// the next "sequence_number", and flushes it.
func (s *Stream) event(typ string, fields map[string]any) {
	data := map[string]any{"type": typ, "sequence_number": s.seq}
	for k, v := range fields {
		data[k] = v
	}
	s.seq++
	b, _ := json.Marshal(data)
	_, _ = fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", typ, b)
	_ = s.rc.Flush()
}

// clone returns a shallow copy of m.
func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// chunks splits s into pieces of at most n runes (at least one piece).
func chunks(s string, n int) []string {
	var out []string
	for s != "" {
		end, runes := len(s), 0
		for i := range s {
			if runes == n {
				end = i
				break
			}
			runes++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	if out == nil {
		out = []string{""}
	}
	return out
}
