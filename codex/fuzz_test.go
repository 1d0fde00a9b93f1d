package codex

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/iotest"
	"time"
)

func FuzzParseEvent(f *testing.F) {
	// Seeds: testdata/fuzz/FuzzParseEvent (real lines) plus these.
	f.Add([]byte(`{"type":"turn.completed","usage":{"input_tokens":1}}`))
	f.Add([]byte(`{"type":"item.started","item":{"id":"item_0","type":"web_search","id":"ws_1","query":"q"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := ParseEvent(line)
		if err != nil {
			if !errors.Is(err, ErrNotObject) && !errors.Is(err, ErrNoType) {
				t.Fatalf("error %v wraps neither ErrNotObject nor ErrNoType", err)
			}
			return
		}
		if ev.Type == "" {
			t.Fatal("event without type and without error")
		}
		again, err := ParseEvent(append(append([]byte(" \n"), line...), " \r\n"...))
		if err != nil || !reflect.DeepEqual(ev, again) {
			t.Fatalf("whitespace changed the result: %+v / %+v, %v", ev, again, err)
		}
		_ = Classify(ev.Message)
		_ = ev.IsRetryNotice()
		if at, ok := ParseRetryAt(ev.Message, time.Unix(1_795_263_250, 0), time.FixedZone("x", 3600)); ok && at.Location() != time.UTC {
			t.Fatalf("ParseRetryAt returned %v", at.Location())
		}
	})
}

func FuzzMessage(f *testing.F) {
	for _, s := range []string{
		"You’ve hit your usage limit. Try again at 1:15 PM.",
		"try again at Nov 22nd, 2026 12:21 AM.",
		"try again in 1 day, 4 hours and 2 minutes.",
		"Reconnecting... 1/2 (We’re currently experiencing high demand, which may cause temporary errors.)",
		"Reconnecting... waiting for network (Connection failed: error sending request)",
	} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 21, 12, 14, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, msg string) {
		if c := Classify(msg); c.String() == "" {
			t.Fatal("empty class name")
		}
		_ = ClassifyStderr(msg)
		a, m, _, ok := ParseRetryNotice(msg)
		if ok != IsRetryNotice(msg) || a < 0 || m < 0 {
			t.Fatalf("ParseRetryNotice(%q) = %d, %d, %v", msg, a, m, ok)
		}
		if at, ok := ParseRetryAt(msg, now, time.FixedZone("UTC+11", 11*3600)); ok && at.Location() != time.UTC {
			t.Fatalf("ParseRetryAt(%q) location %v", msg, at.Location())
		}
	})
}

// FuzzReader checks Reader against a naive reference: split on '\n', skip
// blank lines, reject lines over the limit, ParseEvent the rest.
func FuzzReader(f *testing.F) {
	for _, name := range []string{"text", "exec", "websearch", "retry-http500", "unknown-model-warning", "patch", "stdin-modes"} {
		data, err := os.ReadFile(filepath.Join(fixtureDir, name+".jsonl"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint16(0), false)
		f.Add(data, uint16(120), true)
	}
	f.Add([]byte("\n\n{\"type\":\"a\"}\r\n  \nxx\n{\"type\":\"b\"}"), uint16(5), false)
	f.Fuzz(func(t *testing.T, data []byte, limit uint16, oneByte bool) {
		max := int(limit) % 1024
		var src io.Reader = bytes.NewReader(data)
		if oneByte {
			src = iotest.OneByteReader(src)
		}
		r := NewReader(src, max)
		if max == 0 {
			max = DefaultMaxLine
		}
		want := referenceRead(data, max)
		for i := 0; ; i++ {
			ev, err := r.Next()
			if err == io.EOF {
				if i != len(want) {
					t.Fatalf("EOF after %d results, want %d", i, len(want))
				}
				return
			}
			if i >= len(want) {
				t.Fatalf("result %d beyond the %d expected: %+v %v", i, len(want), ev, err)
			}
			w := want[i]
			if (err == nil) != (w.err == nil) {
				t.Fatalf("result %d: %+v %v, want %+v %v", i, ev, err, w.ev, w.err)
			}
			if err != nil {
				if !IsLineError(err) || err.Error() != w.err.Error() {
					t.Fatalf("result %d: error %v, want %v", i, err, w.err)
				}
				continue
			}
			if !reflect.DeepEqual(ev, w.ev) {
				t.Fatalf("result %d: %+v, want %+v", i, ev, w.ev)
			}
		}
	})
}

type refResult struct {
	ev  Event
	err error
}

func referenceRead(data []byte, max int) []refResult {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	var out []refResult
	for i, line := range lines {
		n := i + 1
		switch {
		case len(line) > max:
			out = append(out, refResult{err: &LineError{Line: n, Err: errLineTooLong(len(line), max)}})
		case len(bytes.TrimSpace(line)) == 0:
		default:
			ev, err := ParseEvent(line)
			if err != nil {
				out = append(out, refResult{err: &LineError{Line: n, Err: err}})
			} else {
				out = append(out, refResult{ev: ev})
			}
		}
	}
	return out
}
