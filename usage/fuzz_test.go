package usage

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeTurn: the ledger is read back as outside input. Whatever a
// line holds, DecodeTurn and DecodeLimit return an entry or an error,
// never panic; an entry they accept is valid and encodes back to a line
// they accept as the same entry.
func FuzzDecodeTurn(f *testing.F) {
	f.Add([]byte(`{"v":1,"key":"eng/m1/1","at":"2030-03-04T10:00:00Z","agent":"eng","role":"eng","message_id":"m1","attempt":1,"tokens":{"input":10,"cached_input":5,"output":2,"reasoning_output":1},"duration_ms":5,"status":"completed"}`))
	f.Add([]byte(`{"v":1,"at":"2030-03-04T10:00:00Z","agent":"eng","window":"primary","used_pct":12.5,"resets_at":"2030-03-04T15:00:00Z"}`))
	f.Add([]byte(`{"v":1,"key":"x"`))
	f.Add([]byte("\x00\xff"))
	f.Add([]byte(`{"v":1,"key":"a","at":"2030-03-04T10:00:00Z","agent":"a","message_id":"m","tokens":{"input":-1}}`))
	f.Add([]byte(`{"v":1} {"v":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if tr, err := DecodeTurn(line); err == nil {
			if tr.validate() != nil {
				t.Fatalf("accepted an invalid turn %+v", tr)
			}
			b, err := json.Marshal(tr)
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeTurn(b)
			if err != nil || back.Key != tr.Key || back.Tokens != tr.Tokens || !back.At.Equal(tr.At) {
				t.Fatalf("round trip of %s: %+v, %v", b, back, err)
			}
		}
		if s, err := DecodeLimit(line); err == nil && s.validate() != nil {
			t.Fatalf("accepted an invalid sample %+v", s)
		}
		// Any bytes as a whole segment: every line read or reported.
		n := 0
		if err := linesOf(bytes.NewReader(line), func(_ int, l []byte, problem string) {
			n++
			if problem == "" {
				DecodeTurn(l)
			}
		}); err != nil {
			t.Fatal(err)
		}
		if want := bytes.Count(line, []byte("\n")); n < want || n > want+1 {
			t.Fatalf("%d lines passed for %d line breaks", n, want)
		}
	})
}
