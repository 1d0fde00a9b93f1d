package orchestrator

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestEventLogRotatesBySizeAndLosesNothing(t *testing.T) {
	lay := Layout{Dir: filepath.Join(t.TempDir(), DirName)}
	if err := lay.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	path := lay.EventsLog()
	l, err := openEventLog(lay, func(err error) { t.Errorf("event log: %v", err) })
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
