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
)

// at is a fixed time for the tests: none depends on today's date.
var at = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

const reqID = "20260304T050607.000000000Z-0123abcd"

func TestRecallValidate(t *testing.T) {
	tests := []struct {
		name string
		r    Recall
		err  string
	}{
		{"search", Recall{Search: "flaky", Agents: []string{"eng"}, Role: "eng", Limit: 5, Format: FormatJSON}, ""},
		{"thread", Recall{Thread: "0199a3f2", Format: FormatMarkdown}, ""},
		{"markdown of a search", Recall{Search: "x", Format: FormatMarkdown}, "no markdown"},
		{"unknown format", Recall{Search: "x", Format: "html"}, "not text"},
		{"thread with a filter", Recall{Thread: "0199", Role: "eng"}, "no search filter"},
		{"limit too high", Recall{Search: "x", Limit: MaxRecallLimit + 1}, "limit"},
		{"negative limit", Recall{Search: "x", Limit: -1}, "limit"},
		{"text too long", Recall{Search: strings.Repeat("x", MaxRecallText+1)}, "more than"},
		{"too many agents", Recall{Search: "x", Agents: make([]string, MaxRecallAgents+1)}, "more than"},
		{"bad role", Recall{Search: "x", Role: "a/b"}, "not a role"},
		{"since after until", Recall{Search: "x", Since: at, Until: at}, "before until"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Validate()
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("Validate = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestAnswerRoundTrip(t *testing.T) {
	state := t.TempDir()
	if err := Make(state, "eng"); err != nil {
		t.Fatal(err)
	}
	if _, err := TakeAnswer(state, "eng", reqID); !errors.Is(err, ErrNoAnswer) {
		t.Fatalf("TakeAnswer before the answer: %v, want ErrNoAnswer", err)
	}
	want := Answer{Output: "a <hit> & \"more\"\n", Notes: []string{"cut"}}
	if err := WriteAnswer(state, "eng", reqID, want, at); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(Path(state, "eng"), SubAnswers, reqID+".json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("answer file: %v, %v; want mode 0600", fi, err)
	}
	got, err := TakeAnswer(state, "eng", reqID)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("TakeAnswer = %+v, %v; want %+v", got, err, want)
	}
	if _, err := TakeAnswer(state, "eng", reqID); !errors.Is(err, ErrNoAnswer) {
		t.Fatalf("an answer is taken once: %v", err)
	}
	if err := WriteAnswer(state, "eng", "../x", want, at); err == nil {
		t.Fatal("WriteAnswer took a path for an id")
	}
	if err := WriteAnswer(state, "eng", reqID, Answer{Output: strings.Repeat("x", MaxAnswerOutput+1)}, at); err == nil {
		t.Fatal("WriteAnswer wrote an unbounded answer")
	}
}

// The outbox is the agent's to write: whatever it planted there, the
// daemon's answer goes nowhere else.
func TestWriteAnswerRefusesLinks(t *testing.T) {
	t.Run("answers is a link", func(t *testing.T) {
		state, victim := t.TempDir(), t.TempDir()
		if err := Make(state, "eng"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(Path(state, "eng"), SubAnswers)); err != nil {
			t.Fatal(err)
		}
		if err := WriteAnswer(state, "eng", reqID, Answer{Output: "x"}, at); !errors.Is(err, atomicfile.ErrSymlink) {
			t.Fatalf("WriteAnswer through a linked answers/: %v, want ErrSymlink", err)
		}
		if names, _ := os.ReadDir(victim); len(names) != 0 {
			t.Fatalf("written through the link: %v", names)
		}
	})
	t.Run("the outbox is a link", func(t *testing.T) {
		state, victim := t.TempDir(), t.TempDir()
		if err := os.MkdirAll(filepath.Join(state, DirName), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, Path(state, "eng")); err != nil {
			t.Fatal(err)
		}
		if err := WriteAnswer(state, "eng", reqID, Answer{Output: "x"}, at); !errors.Is(err, atomicfile.ErrSymlink) {
			t.Fatalf("WriteAnswer through a linked outbox: %v, want ErrSymlink", err)
		}
		if names, _ := os.ReadDir(victim); len(names) != 0 {
			t.Fatalf("written through the link: %v", names)
		}
	})
	t.Run("the answer's name is a link", func(t *testing.T) {
		state := t.TempDir()
		target := filepath.Join(t.TempDir(), "daemon-file")
		if err := os.WriteFile(target, []byte("precious"), 0o600); err != nil {
			t.Fatal(err)
		}
		answers := filepath.Join(Path(state, "eng"), SubAnswers)
		if err := os.MkdirAll(answers, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(answers, reqID+".json")); err != nil {
			t.Fatal(err)
		}
		if err := WriteAnswer(state, "eng", reqID, Answer{Output: "x"}, at); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("WriteAnswer over a planted link: %v, want ErrExist", err)
		}
		if b, _ := os.ReadFile(target); string(b) != "precious" {
			t.Fatalf("written through the link: %q", b)
		}
		// Nor does the agent's side read through it.
		if _, err := TakeAnswer(state, "eng", reqID); !errors.Is(err, atomicfile.ErrSymlink) {
			t.Fatalf("TakeAnswer of a link: %v, want ErrSymlink", err)
		}
	})
}

func TestWriteAnswerPrunesOldAnswers(t *testing.T) {
	state := t.TempDir()
	answers := filepath.Join(Path(state, "eng"), SubAnswers)
	if err := os.MkdirAll(answers, 0o700); err != nil {
		t.Fatal(err)
	}
	old, fresh := filepath.Join(answers, "old.json"), filepath.Join(answers, "fresh.json")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	if err := os.Chtimes(old, now.Add(-answerKeep-time.Minute), now.Add(-answerKeep-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := WriteAnswer(state, "eng", reqID, Answer{Output: "x"}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an answer nobody took stays: %v", err)
	}
	if _, err := os.Lstat(fresh); err != nil {
		t.Fatalf("a fresh answer was pruned: %v", err)
	}
}

func TestWithdraw(t *testing.T) {
	state := t.TempDir()
	id, err := Write(state, "eng", Request{Recall: &Recall{Search: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	Withdraw(state, "eng", id)
	if _, err := os.Lstat(filepath.Join(Path(state, "eng"), SubNew, id+".json")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the request stays: %v", err)
	}
}

func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{`{"output":"x\n","notes":["cut"]}`, `{"error":"too many"}`, `{}`, `{"output":1}`, `{"x":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAnswer(data)
		if err != nil {
			return
		}
		if len(a.Output) > MaxAnswerOutput {
			t.Fatalf("an unbounded answer: %d bytes", len(a.Output))
		}
	})
}
