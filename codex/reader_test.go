package codex

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type result struct {
	typ  string // event type, or "" for an error
	line int    // LineError.Line
	err  error  // sentinel the error wraps
}

func drain(t *testing.T, r *Reader) []result {
	t.Helper()
	var out []result
	for i := 0; i < 1000; i++ {
		ev, err := r.Next()
		switch {
		case err == io.EOF:
			return out
		case err == nil:
			out = append(out, result{typ: ev.Type})
		default:
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("fatal error %v", err)
			}
			sentinel := errors.Unwrap(le.Err)
			switch {
			case errors.Is(err, ErrLineTooLong):
				sentinel = ErrLineTooLong
			case errors.Is(err, ErrNoType):
				sentinel = ErrNoType
			case errors.Is(err, ErrNotObject):
				sentinel = ErrNotObject
			}
			out = append(out, result{line: le.Line, err: sentinel})
		}
	}
	t.Fatal("reader does not end")
	return nil
}

func TestReader(t *testing.T) {
	long := `{"type":"item.completed","item":{"type":"agent_message","text":"` + strings.Repeat("x", 200) + `"}}`
	cases := []struct {
		name  string
		input string
		max   int
		want  []result
	}{
		{"empty", "", 0, nil},
		{"only blank lines", "\n\n  \n\r\n", 0, nil},
		{"basic", "{\"type\":\"a\"}\n{\"type\":\"b\"}\n", 0, []result{{typ: "a"}, {typ: "b"}}},
		{"no final newline", "{\"type\":\"a\"}\n{\"type\":\"b\"}", 0, []result{{typ: "a"}, {typ: "b"}}},
		{"blank lines skipped, counted", "\n{\"type\":\"a\"}\n\n\nnope\n{\"type\":\"b\"}\n", 0,
			[]result{{typ: "a"}, {line: 5, err: ErrNotObject}, {typ: "b"}}},
		{"CRLF", "{\"type\":\"a\"}\r\n{\"type\":\"b\"}\r\n", 0, []result{{typ: "a"}, {typ: "b"}}},
		{"missing type", "{\"type\":\"a\"}\n{\"x\":1}\n{\"type\":\"b\"}\n", 0, []result{{typ: "a"}, {line: 2, err: ErrNoType}, {typ: "b"}}},
		{"too long skipped", "{\"type\":\"a\"}\n" + long + "\n{\"type\":\"b\"}\n", 100,
			[]result{{typ: "a"}, {line: 2, err: ErrLineTooLong}, {typ: "b"}}},
		{"too long last line", "{\"type\":\"a\"}\n" + long, 100, []result{{typ: "a"}, {line: 2, err: ErrLineTooLong}}},
		{"exactly at limit", `{"type":"abc"}` + "\n", len(`{"type":"abc"}`), []result{{typ: "abc"}}},
		{"one over limit", `{"type":"abcd"}` + "\n" + `{"type":"b"}`, len(`{"type":"abc"}`),
			[]result{{line: 1, err: ErrLineTooLong}, {typ: "b"}}},
		{"truncated last line", "{\"type\":\"a\"}\n{\"type\":\"item.comp", 0, []result{{typ: "a"}, {line: 2, err: ErrNotObject}}},
	}
	readers := map[string]func(io.Reader) io.Reader{
		"plain":    func(r io.Reader) io.Reader { return r },
		"onebyte":  iotest.OneByteReader,
		"halfread": iotest.HalfReader,
		"dataerr":  iotest.DataErrReader,
	}
	for _, c := range cases {
		for rname, wrap := range readers {
			t.Run(c.name+"/"+rname, func(t *testing.T) {
				got := drain(t, NewReader(wrap(strings.NewReader(c.input)), c.max))
				if len(got) != len(c.want) {
					t.Fatalf("got %+v, want %+v", got, c.want)
				}
				for i := range got {
					if got[i] != c.want[i] {
						t.Errorf("result %d: got %+v, want %+v", i, got[i], c.want[i])
					}
				}
			})
		}
	}
}

func TestReaderLineErrorIsNonFatal(t *testing.T) {
	r := NewReader(strings.NewReader("garbage\n{\"type\":\"turn.started\"}\n"), 0)
	_, err := r.Next()
	var le *LineError
	if !errors.As(err, &le) || le.Line != 1 || !IsLineError(err) {
		t.Fatalf("err %v, want *LineError for line 1", err)
	}
	if !strings.Contains(err.Error(), "line 1") {
		t.Errorf("message %q does not name the line", err)
	}
	ev, err := r.Next()
	if err != nil || ev.Type != TypeTurnStarted {
		t.Fatalf("after a line error: %+v, %v", ev, err)
	}
	for i := 0; i < 3; i++ {
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("call %d after the end: %v, want io.EOF", i, err)
		}
	}
	if IsLineError(io.EOF) || IsLineError(nil) {
		t.Error("IsLineError true for io.EOF or nil")
	}
}

func TestReaderReadErrorIsFatal(t *testing.T) {
	boom := errors.New("boom")
	src := io.MultiReader(strings.NewReader("{\"type\":\"a\"}\n{\"type\":"), iotest.ErrReader(boom))
	r := NewReader(src, 0)
	if ev, err := r.Next(); err != nil || ev.Type != "a" {
		t.Fatalf("first: %+v %v", ev, err)
	}
	for i := 0; i < 2; i++ {
		_, err := r.Next()
		if !errors.Is(err, boom) || IsLineError(err) {
			t.Fatalf("call %d: err %v, want the fatal read error", i, err)
		}
	}
}

// A multi-megabyte line, larger than any internal buffer, read in small
// chunks, between two ordinary lines.
func TestReaderBigLine(t *testing.T) {
	text := strings.Repeat("0123456789abcdef\\n", 5_000_000/18)
	line := `{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"BIG:` + text + `"}}`
	input := "{\"type\":\"turn.started\"}\n" + line + "\n{\"type\":\"turn.completed\",\"usage\":{\"output_tokens\":1}}\n"
	for _, max := range []int{0, len(line)} {
		r := NewReader(iotest.HalfReader(strings.NewReader(input)), max)
		var evs []Event
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("max %d: %v", max, err)
			}
			evs = append(evs, ev)
		}
		if len(evs) != 3 || evs[1].Item == nil || len(evs[1].Item.Text) != 4+len(text)/18*17 || evs[2].Usage.OutputTokens != 1 {
			t.Fatalf("max %d: %d events", max, len(evs))
		}
	}
	// One byte below the line's length: skipped, and the stream goes on.
	got := drain(t, NewReader(strings.NewReader(input), len(line)-1))
	want := []result{{typ: TypeTurnStarted}, {line: 2, err: ErrLineTooLong}, {typ: TypeTurnCompleted}}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestReaderRealBigFixture(t *testing.T) {
	fx := loadFixture(t, "big")
	// 5,077,005 bytes with its newline; the limit excludes the newline.
	const size = 5_077_004
	if len(bytes.Split(fx.stdout, []byte("\n"))[2]) != size {
		t.Fatalf("fixture line is not %d bytes", size)
	}
	r := NewReader(bytes.NewReader(fx.stdout), size)
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 4 {
		t.Errorf("%d events, want 4", n)
	}
	got := drain(t, NewReader(bytes.NewReader(fx.stdout), 64<<10))
	if len(got) != 4 || !errors.Is(got[2].err, ErrLineTooLong) || got[3].typ != TypeTurnCompleted {
		t.Errorf("with a 64 KiB limit: %+v", got)
	}
}

// TestReader50MBReply: a 50 MB agent_message line (within DefaultMaxLine)
// comes out whole, the line after it too, and the reader does not keep the
// big line's buffer afterwards.
func TestReader50MBReply(t *testing.T) {
	const n = 50_000_000
	text := strings.Repeat("y", n-1) + "z"
	input := `{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"` + text + "\"}}\n" +
		`{"type":"turn.completed","usage":{"output_tokens":7}}` + "\n"
	r := NewReader(strings.NewReader(input), 0)
	ev, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if ev.Item == nil || len(ev.Item.Text) != n || ev.Item.Text != text {
		t.Fatalf("agent message of %d bytes, want %d", len(ev.Item.Text), n)
	}
	if cap(r.buf) > retainLimit {
		t.Errorf("the reader keeps a %d-byte buffer after the big line", cap(r.buf))
	}
	ev, err = r.Next()
	if err != nil || ev.Type != TypeTurnCompleted || ev.Usage.OutputTokens != 7 {
		t.Fatalf("after the big line: %+v %v", ev, err)
	}
}
