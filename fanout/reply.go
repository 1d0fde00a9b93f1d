package fanout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/battyhq/batty/textclip"
)

// answerRule is what every row's prompt asks for after the instruction.
const answerRule = "Answer with exactly one JSON object as your final message: no text before or after it, no code fence."

// schemaRule replaces answerRule when an output schema is given.
const schemaRule = "Answer with exactly one JSON object as your final message, matching the output schema you were given: no text before or after it, no code fence."

// Prompt is the message sent for one row: the row's instruction, then the
// rule for the answer.
func Prompt(instruction string, schema bool) string {
	rule := answerRule
	if schema {
		rule = schemaRule
	}
	return strings.TrimRight(instruction, "\n") + "\n\n" + rule + "\n"
}

// ParseReply returns a worker's reply as compact JSON when it is one JSON
// object, alone or inside one surrounding ```json (or ```) fence; anything
// else is an error saying what the reply is instead. It never panics.
func ParseReply(reply string) (string, error) {
	s := strings.TrimSpace(reply)
	if strings.HasPrefix(s, "```") {
		body, ok := strings.CutPrefix(s, "```json")
		if !ok {
			body, _ = strings.CutPrefix(s, "```")
		}
		if nl := strings.IndexByte(body, '\n'); nl >= 0 && strings.TrimSpace(body[:nl]) == "" {
			body = body[nl+1:]
		}
		inner, ok := strings.CutSuffix(strings.TrimSpace(body), "```")
		if !ok {
			return "", errors.New("reply opens a code fence that it does not close")
		}
		s = strings.TrimSpace(inner)
	}
	if s == "" {
		return "", errors.New("reply is empty, not a JSON object")
	}
	if s[0] != '{' {
		return "", fmt.Errorf("reply is not a JSON object: it starts with %q", textclip.Bytes(s, 40+len(textclip.Ellipsis), textclip.Ellipsis))
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return "", fmt.Errorf("reply is not a JSON object: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", errors.New("reply is not one JSON object: text follows the object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return "", fmt.Errorf("reply is not a JSON object: %w", err)
	}
	return b.String(), nil
}
