package scriptedmodel

import (
	"encoding/json"
	"strings"
)

// Item is one input item of a Responses request, reduced to what the
// script reads.
type Item struct {
	// Kind is ItemMessage, ItemCall or ItemOutput.
	Kind string
	// Role is a message's role: "developer", "system", "user", "assistant".
	Role string
	// Text is a message's text (its text parts joined) or a tool output.
	Text string
	// Name and Arguments are a function call's tool name and JSON
	// arguments.
	Name, Arguments string
}

// Item kinds.
const (
	ItemMessage = "message"
	ItemCall    = "call"
	ItemOutput  = "output"
)

// Request is a decoded Responses request: the model asked for and the
// conversation so far, in order.
type Request struct {
	Model string
	Items []Item
}

// maxBody bounds the request body the server reads (codex resends a
// thread's whole history with every request; the demo's stay far below).
const maxBody = 32 << 20

// ParseRequest decodes a Responses request body. It never panics: a body
// that is not a JSON object, or items of unknown shape, leave the
// corresponding fields empty, and the script then answers as it does for
// a conversation it has no part for.
func ParseRequest(body []byte) Request {
	var b struct {
		Model string            `json:"model"`
		Input []json.RawMessage `json:"input"`
	}
	if json.Unmarshal(body, &b) != nil {
		return Request{}
	}
	req := Request{Model: b.Model}
	for _, raw := range b.Input {
		var it struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			Output    json.RawMessage `json:"output"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Input     string          `json:"input"`
		}
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch {
		case it.Type == "message" || (it.Type == "" && it.Role != ""):
			req.Items = append(req.Items, Item{Kind: ItemMessage, Role: it.Role, Text: contentText(it.Content)})
		case it.Type == "function_call":
			req.Items = append(req.Items, Item{Kind: ItemCall, Name: it.Name, Arguments: it.Arguments})
		case it.Type == "custom_tool_call":
			req.Items = append(req.Items, Item{Kind: ItemCall, Name: it.Name, Arguments: it.Input})
		case strings.HasSuffix(it.Type, "_call_output"):
			req.Items = append(req.Items, Item{Kind: ItemOutput, Text: contentText(it.Output)})
		}
	}
	return req
}

// contentText flattens a Responses content value: a string, or an array of
// parts whose "text" fields are joined.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String()
}

// instructions returns the text of every developer and system message.
func (r Request) instructions() string {
	var sb strings.Builder
	for _, it := range r.Items {
		if it.Kind == ItemMessage && (it.Role == "developer" || it.Role == "system") {
			sb.WriteString(it.Text)
			sb.WriteString("\n")
		}
	}
	return sb.String()
}
