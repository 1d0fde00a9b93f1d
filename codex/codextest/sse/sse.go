// Package sse decodes a Responses API event stream the way the tests of
// the mock servers (codextest, scriptedmodel) read it. It imports nothing
// of batty, so both may use it.
package sse

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Event is one server-sent event of a Responses stream: its name (the
// "event:" line) and its decoded JSON data (the "data:" line).
type Event struct {
	Name string
	Data map[string]any
}

// Read decodes the Responses event stream r, as a test reads what a
// mock server sent: "event: NAME" and "data: JSON" lines, each event ended
// by a blank line. A data line that is not a JSON object, or an event
// whose data "type" is not its name, is an error.
func Read(r io.Reader) ([]Event, error) {
	var evs []Event
	var cur Event
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data); err != nil {
				return evs, fmt.Errorf("bad data line %q: %w", line, err)
			}
		case line == "":
			if cur.Data["type"] != cur.Name {
				return evs, fmt.Errorf("event %q carries type %v", cur.Name, cur.Data["type"])
			}
			evs = append(evs, cur)
			cur = Event{}
		}
	}
	if err := sc.Err(); err != nil {
		return evs, fmt.Errorf("read event stream: %w", err)
	}
	return evs, nil
}

// Names returns the names of evs joined by commas, in order.
func Names(evs []Event) string {
	n := make([]string, 0, len(evs))
	for _, e := range evs {
		n = append(n, e.Name)
	}
	return strings.Join(n, ",")
}
