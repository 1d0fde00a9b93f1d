package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/textclip"
)

var t0 = time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)

func layout(t *testing.T) project.Layout {
	t.Helper()
	return project.Layout{Dir: filepath.Join(t.TempDir(), "state")}
}

func turn(agent, msg string, attempt int, body, reply string) Turn {
	return Turn{Agent: agent, Role: "dev", Account: "work", At: t0,
		Message: inbox.Message{ID: msg, From: "human", To: agent, Body: body, CreatedAt: t0.Add(-time.Minute), Attempt: attempt},
		Finished: protocol.TurnFinished{MessageID: msg, ThreadID: "th-1", Status: protocol.TurnCompleted, Reply: reply, Duration: 3 * time.Second,
			Usage: protocol.Usage{Input: 10, Output: 5}, Thread: protocol.Usage{Input: 30, Output: 9}}}
}

func TestBuild(t *testing.T) {
	exit := 2
	for _, tc := range []struct {
		name  string
		in    Turn
		check func(t *testing.T, r Record)
	}{
		{"fields", turn("dev-1", "m1", 2, "fix it", "done"), func(t *testing.T, r Record) {
			if r.Key != "dev-1/m1/2" || r.Thread != "th-1" || r.Message.Body != "fix it" || r.Reply != "done" || r.Message.From != "human" {
				t.Errorf("record %+v", r)
			}
			if !r.Started.Equal(t0.Add(-3*time.Second)) || r.DurationMS != 3000 || r.Tokens.Input != 10 || r.ThreadTokens.Input != 30 {
				t.Errorf("times or tokens %+v", r)
			}
			if r.Commit != nil {
				t.Errorf("commit %+v without one", r.Commit)
			}
		}},
		{"long reply clipped", func() Turn {
			tu := turn("a", "m", 1, "x", strings.Repeat("é", MaxText))
			return tu
		}(), func(t *testing.T, r Record) {
			if len(r.Reply) > MaxText || !strings.HasSuffix(r.Reply, textclip.Truncated) {
				t.Errorf("reply of %d bytes", len(r.Reply))
			}
		}},
		{"control characters in a field", func() Turn {
			tu := turn("a", "m", 1, "x", "y")
			tu.Finished.ThreadID = "th\n\x1b[31m"
			return tu
		}(), func(t *testing.T, r Record) {
			if strings.ContainsAny(r.Thread, "\n\x1b") {
				t.Errorf("thread %q", r.Thread)
			}
		}},
		{"commit and commands", func() Turn {
			tu := turn("a", "m", 1, "x", "y")
			tu.Commit = Commit{SHA: "abc", Branch: "batty/a"}
			tu.Commands = make([]Command, MaxCommands+5)
			tu.Commands[len(tu.Commands)-1] = Command{Command: "go test", Output: strings.Repeat("o", MaxOutput*2), ExitCode: &exit}
			tu.Files = []string{"a.go"}
			return tu
		}(), func(t *testing.T, r Record) {
			if r.Commit == nil || r.Commit.SHA != "abc" || len(r.Commands) != MaxCommands || len(r.Files) != 1 {
				t.Fatalf("record %+v", r)
			}
			last := r.Commands[MaxCommands-1]
			if last.Command != "go test" || len(last.Output) > MaxOutput || *last.ExitCode != 2 {
				t.Errorf("last command %q, %d bytes of output", last.Command, len(last.Output))
			}
		}},
		{"invalid UTF-8", turn("a", "m", 1, "bad \xff", "x"), func(t *testing.T, r Record) {
			if r.Message.Body != "bad \uFFFD" {
				t.Errorf("body %q", r.Message.Body)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(tc.in)
			tc.check(t, r)
			line, err := Encode(r)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decode(line); err != nil {
				t.Fatalf("a built record does not decode: %v", err)
			}
		})
	}
}

func TestAppendRead(t *testing.T) {
	l := layout(t)
	var offs []int64
	for i, m := range []string{"m1", "m2", "m3"} {
		off, n, err := Append(l, Build(turn("dev", m, 1, "body "+m, "reply")))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && off != 0 || n <= 0 {
			t.Errorf("line %d at %d+%d", i, off, n)
		}
		offs = append(offs, off)
	}
	p := filepath.Join(l.Dir, DirName, "dev.jsonl")
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	if dst, _ := os.Stat(filepath.Dir(p)); dst.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v", dst.Mode())
	}
	j, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	recs, skips, err := j.Read("dev")
	if err != nil || len(skips) != 0 || len(recs) != 3 || recs[2].Message.ID != "m3" {
		t.Fatalf("read %d records, skips %v, %v", len(recs), skips, err)
	}
	f, err := j.OpenFile("dev")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := f.ReadAt(offs[1], int64(len(mustEncode(t, recs[1]))))
	if err != nil || r.Message.ID != "m2" {
		t.Fatalf("ReadAt: %+v %v", r, err)
	}
	if _, err := f.ReadAt(offs[1]+1, 10); err == nil {
		t.Error("ReadAt inside a line read something")
	}
	agents, err := j.Agents()
	if err != nil || len(agents) != 1 || agents[0] != "dev" {
		t.Errorf("agents %v %v", agents, err)
	}
}

func mustEncode(t *testing.T, r Record) []byte {
	t.Helper()
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A crash mid-append leaves a cut last line: it is reported once, and the
// next append starts a line of its own.
func TestTornLastLine(t *testing.T) {
	l := layout(t)
	if _, _, err := Append(l, Build(turn("dev", "m1", 1, "one", "r"))); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(l.Dir, DirName, "dev.jsonl")
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"v":1,"key":"dev/m2`)
	f.Close()
	j, _ := Open(l)
	recs, skips, err := j.Read("dev")
	j.Close()
	if err != nil || len(recs) != 1 || len(skips) != 1 || !strings.Contains(skips[0].Reason, "cut last line") {
		t.Fatalf("before the next append: %d records, skips %v, %v", len(recs), skips, err)
	}
	if _, _, err := Append(l, Build(turn("dev", "m3", 1, "three", "r"))); err != nil {
		t.Fatal(err)
	}
	j, _ = Open(l)
	defer j.Close()
	recs, skips, err = j.Read("dev")
	if err != nil || len(recs) != 2 || recs[1].Message.ID != "m3" || len(skips) != 1 {
		t.Fatalf("after: %d records, skips %v, %v", len(recs), skips, err)
	}
}

func TestAppendRefusesALink(t *testing.T) {
	l := layout(t)
	if err := os.MkdirAll(filepath.Join(l.Dir, DirName), 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, nil, 0o600)
	if err := os.Symlink(victim, filepath.Join(l.Dir, DirName, "dev.jsonl")); err != nil {
		t.Fatal(err)
	}
	_, _, err := Append(l, Build(turn("dev", "m1", 1, "one", "r")))
	if !errors.Is(err, atomicfile.ErrSymlink) {
		t.Fatalf("append through a link: %v", err)
	}
	if b, _ := os.ReadFile(victim); len(b) != 0 {
		t.Error("the link's target was written")
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := mustEncode(t, Build(turn("dev", "m1", 1, "one", "r")))
	for name, line := range map[string]string{
		"unknown field": strings.Replace(string(good), `{"v":1,`, `{"v":1,"x":1,`, 1),
		"wrong key":     strings.Replace(string(good), `"key":"dev/m1/1"`, `"key":"other/m1/1"`, 1),
		"bad agent":     strings.Replace(strings.Replace(string(good), `"agent":"dev"`, `"agent":"../x"`, 1), `"key":"dev/`, `"key":"../x/`, 1),
		"version":       strings.Replace(string(good), `{"v":1,`, `{"v":2,`, 1),
		"two values":    string(good) + " {}",
		"not json":      "nope",
	} {
		if _, err := Decode([]byte(line)); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func FuzzDecode(f *testing.F) {
	r := Build(turn("dev", "m1", 1, "one", "r"))
	r.Commit = &Commit{SHA: "abc"}
	exit := 0
	r.Commands = []Command{{Command: "ls", Output: "a\n", ExitCode: &exit}}
	b, _ := Encode(r)
	f.Add(b)
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := Decode(line)
		if err != nil {
			return
		}
		again, err := Encode(r)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		if _, err := Decode(again); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// ScanWhere decodes only the lines keep accepts, and a corrupt line it
// refuses is not reported.
func TestScanWhere(t *testing.T) {
	l := layout(t)
	for _, m := range []string{"m1", "m2", "m3"} {
		if _, _, err := Append(l, Build(turn("dev", m, 1, "body "+m, "reply"))); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(l.Dir, DirName, "dev.jsonl")
	fh, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString("{not json}\n"); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	j, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	f, err := j.OpenFile("dev")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	var skips []Skip
	if _, err := f.ScanWhere(0, func(line []byte) bool { return strings.Contains(string(line), `"m2"`) },
		func(_, _ int64, r Record) error { got = append(got, r.Message.ID); return nil },
		func(s Skip) { skips = append(skips, s) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "m2" || len(skips) != 0 {
		t.Fatalf("ScanWhere kept %v, skipped %v", got, skips)
	}
}
