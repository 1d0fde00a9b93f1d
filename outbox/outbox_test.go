package outbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/inbox"
)

func TestDecode(t *testing.T) {
	long := strings.Repeat("x", inbox.MaxBodyLen+1)
	tests := []struct {
		name, data string
		want       Request
		err        string
	}{
		{"message", `{"to":"eng","body":"hi"}`, Request{To: "eng", Body: "hi"}, ""},
		{"role queue", `{"to":"@eng","body":"hi"}`, Request{To: "@eng", Body: "hi"}, ""},
		{"landing", `{"land":"eng-1"}`, Request{Land: "eng-1"}, ""},
		{"a sender is not the agent's to say", `{"from":"human","to":"eng","body":"hi"}`, Request{}, "unknown field"},
		{"no id", `{"id":"x","to":"eng","body":"hi"}`, Request{}, "unknown field"},
		{"no outcome", `{"to":"eng","body":"hi","outcome":{}}`, Request{}, "unknown field"},
		{"no reply target", `{"to":"eng","body":"hi","in_reply_to":"x"}`, Request{}, "unknown field"},
		{"no attempt", `{"to":"eng","body":"hi","attempt":3}`, Request{}, "unknown field"},
		{"both", `{"to":"eng","body":"hi","land":"eng"}`, Request{}, "not both"},
		{"no recipient", `{"body":"hi"}`, Request{}, "recipient"},
		{"blank body", `{"to":"eng","body":"  "}`, Request{}, "body"},
		{"body too long", `{"to":"eng","body":"` + long + `"}`, Request{}, "more than"},
		{"path in to", `{"to":"../human","body":"hi"}`, Request{}, "not a recipient"},
		{"path in land", `{"land":"a/b"}`, Request{}, "not an agent"},
		{"trailing data", `{"to":"eng","body":"hi"}{}`, Request{}, "after"},
		{"not json", `hello`, Request{}, "not a request"},
		{"recall and a message", `{"to":"eng","body":"hi","recall":{"search":"x"}}`, Request{}, "one of them"},
		{"recall of nothing", `{"recall":{}}`, Request{}, "a search or a thread"},
		{"recall of both", `{"recall":{"search":"x","thread":"0199"}}`, Request{}, "a search or a thread"},
		{"recall with a path", `{"recall":{"search":"x","agents":["../eng"]}}`, Request{}, "not an agent"},
		{"recall no-redact is not the agent's", `{"recall":{"search":"x","no_redact":true}}`, Request{}, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.data))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Decode = %+v, %v; want an error with %q", got, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Decode = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestID(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name, file, id string
	}{
		{"generated", "20300102T030405.000000000Z-1f2e3d4c.json", "20300102T030405.000000000Z-1f2e3d4c"},
		{"a little ahead", "20300102T030805.000000000Z-1f2e3d4c.json", "20300102T030805.000000000Z-1f2e3d4c"},
		{"far ahead", "20300102T040405.000000000Z-1f2e3d4c.json", ""},
		{"a schedule run's", "x-schedule.nightly.3.json", ""},
		{"a reply's", "20300102T030405.000000000Z-1f2e3d4c.reply.json", ""},
		{"no suffix", "20300102T030405.000000000Z-1f2e3d4c", ""},
		{"upper hex", "20300102T030405.000000000Z-1F2E3D4C.json", ""},
		{"bad month", "20301302T030405.000000000Z-1f2e3d4c.json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := ID(tt.file, now)
			if tt.id == "" {
				if err == nil {
					t.Fatalf("ID(%q) = %q, want an error", tt.file, id)
				}
				return
			}
			if err != nil || id != tt.id {
				t.Fatalf("ID(%q) = %q, %v; want %q", tt.file, id, err, tt.id)
			}
		})
	}
}

func TestWriteThenRead(t *testing.T) {
	state := t.TempDir()
	dir := Path(state, "eng")
	id, err := Write(state, "eng", Request{To: "human", Body: "done"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ID(id+".json", time.Now()); err != nil {
		t.Fatalf("the id Write gave: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, SubNew, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Decode(data)
	if err != nil || r != (Request{To: "human", Body: "done"}) {
		t.Fatalf("read back %+v, %v", r, err)
	}
	if _, err := Write(state, "eng", Request{To: "human"}); err == nil {
		t.Fatal("an invalid request was written")
	}
}

func TestWriteRefusesALinkedOutbox(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	if err := os.MkdirAll(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := Path(base, "eng")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, SubNew)); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(base, "eng", Request{To: "human", Body: "x"}); !errors.Is(err, atomicfile.ErrSymlink) {
		t.Fatalf("Write through a linked new/: %v, want ErrSymlink", err)
	}
	if names, _ := os.ReadDir(victim); len(names) != 0 {
		t.Fatalf("written through the link: %v", names)
	}
	if _, err := Write(filepath.Join(base, "missing"), "eng", Request{To: "human", Body: "x"}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Write under a missing state directory: %v", err)
	}
	if _, err := Write(base, "../eng", Request{To: "human", Body: "x"}); err == nil {
		t.Fatal("Write took a path for an agent")
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"to":"eng","body":"hi"}`, `{"land":"a"}`, `{"to":"@r","body":"x","land":""}`, `{}`, `[]`, `{"to":1}`,
		`{"recall":{"search":"flaky test","agents":["eng"],"role":"eng","since":"2026-01-02T03:04:05+01:00","limit":5,"format":"json"}}`,
		`{"recall":{"thread":"0199a3f2","format":"markdown"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("Decode accepted an invalid request %+v: %v", r, err)
		}
		again, err := Encode(r)
		if err != nil {
			t.Fatalf("Encode of a decoded request: %v", err)
		}
		r2, err := Decode(again)
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if twice, _ := Encode(r2); string(twice) != string(again) {
			t.Fatalf("round trip: %s, want %s", twice, again)
		}
	})
}
