package eventlog

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/battyhq/batty/project"
)

func TestEventLogRotatesBySizeAndLosesNothing(t *testing.T) {
	lay := project.Layout{Dir: filepath.Join(t.TempDir(), project.DirName)}
	if err := lay.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	path := lay.EventsLog()
	l, err := Open(lay, func(err error) { t.Errorf("event log: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	l.max, l.keep = 2000, 3
	const n = 100 // ≈ 100 bytes each: more than four generations hold
	for i := 0; i < n; i++ {
		l.Append(Event{Type: EvWarning, Detail: strconv.Itoa(i)})
	}
	l.Close()
	seen := map[string]bool{}
	files := 0
	for _, p := range []string{path + ".3", path + ".2", path + ".1", path} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		files++
		st, _ := f.Stat()
		if st.Size() > 2000 {
			t.Errorf("%s has %d bytes, over the limit", p, st.Size())
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			seen[e.Detail] = true
		}
		f.Close()
	}
	if files != 4 {
		t.Fatalf("%d generations, want the file and 3 rotated ones", files)
	}
	if _, err := os.Stat(path + ".4"); err == nil {
		t.Fatal("more generations kept than asked")
	}
	// The newest events are all there (older ones fell off the last
	// generation).
	for i := n - 30; i < n; i++ {
		if !seen[strconv.Itoa(i)] {
			t.Fatalf("event %d lost", i)
		}
	}
}

// A log whose last line was cut short (the machine lost power mid-append,
// or a hand edit) must not swallow the next event: it starts on a line of
// its own, and only the cut line stays unreadable.
func TestEventLogStartsAfterACutLine(t *testing.T) {
	lay := project.Layout{Dir: filepath.Join(t.TempDir(), project.DirName)}
	if err := lay.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	cut := `{"time":"2026-01-02T03:04:05Z","type":"turn_fin`
	if err := os.WriteFile(lay.EventsLog(), []byte(`{"type":"warning","detail":"whole"}`+"\n"+cut), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(lay, func(err error) { t.Errorf("event log: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	l.Append(Event{Type: EvWarning, Detail: "after the cut"})
	l.Close()
	b, err := os.ReadFile(lay.EventsLog())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[1] != cut {
		t.Fatalf("log lines %q, want the whole line, the cut line, the new event", lines)
	}
	var e Event
	if err := json.Unmarshal([]byte(lines[2]), &e); err != nil || e.Detail != "after the cut" {
		t.Fatalf("last line %q: %+v, %v", lines[2], e, err)
	}
}
