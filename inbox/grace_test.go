package inbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGrace: a file written into new/ directly, in two writes, is not moved
// to bad/ between them: while it is younger than the grace, listings report
// it as not ready and leave it; once complete it is an ordinary message. A
// file still undecodable after the grace goes to bad/. The clock is
// injected: nothing sleeps.
func TestGrace(t *testing.T) {
	s, b := newBox(t, "eng")
	s.Grace = time.Hour
	now := time.Now()
	s.Now = func() time.Time { return now }

	data, err := Encode(Message{ID: "chunked", From: "human", To: "eng", Body: "written in two parts", CreatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(b.Dir, "new", "chunked.json")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data[:len(data)/2]); err != nil {
		t.Fatal(err)
	}
	// The file's ctime comes from the kernel's coarse clock, which can be
	// ahead of a time.Now() read just before the file was made.
	now = time.Now()

	check := func(what string) {
		t.Helper()
		msgs, errs := b.Pending()
		var nr *NotReadyError
		if len(msgs) != 0 || len(errs) != 1 || !errors.As(errs[0], &nr) || nr.Path != path || nr.Retry <= 0 || nr.Retry > time.Hour {
			t.Fatalf("%s: Pending = %+v, %v; want the file reported not ready", what, msgs, errs)
		}
		if _, err := b.Claim("chunked"); !errors.As(err, &nr) {
			t.Fatalf("%s: Claim = %v, want not ready", what, err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s: the file left new/: %v", what, err)
		}
	}
	check("first half")
	now = now.Add(30 * time.Minute) // a retry within the grace
	check("first half, later")

	if _, err := f.Write(data[len(data)/2:]); err != nil {
		t.Fatal(err)
	}
	msgs, errs := b.Pending()
	noErrs(t, errs)
	if len(msgs) != 1 || msgs[0].Body != "written in two parts" {
		t.Fatalf("Pending = %+v", msgs)
	}

	// Never completed: bad once the grace has passed since its last change.
	if err := os.WriteFile(filepath.Join(b.Dir, "new", "abandoned.json"), []byte(`{"id":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs := b.Pending(); len(errs) != 1 {
		t.Fatalf("errors %v, want one not ready", errs)
	}
	now = time.Now().Add(time.Hour + time.Second)
	_, errs = b.Pending()
	var bad *BadFileError
	if len(errs) != 1 || !errors.As(errs[0], &bad) || bad.MovedTo == "" {
		t.Fatalf("after the grace: %v, want the file moved to bad/", errs)
	}

	// Only regular files in new/ get a grace; the other states have none.
	now = time.Now()
	if err := os.Symlink("/etc/passwd", filepath.Join(b.Dir, "new", "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.Dir, "cur", "junk.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errs = b.Pending()
	if len(errs) != 1 || !errors.As(errs[0], &bad) || bad.MovedTo == "" {
		t.Fatalf("symbolic link: %v, want it moved to bad/ at once", errs)
	}
	_, errs = b.InFlight()
	if len(errs) != 1 || !errors.As(errs[0], &bad) || bad.MovedTo == "" {
		t.Fatalf("cur/: %v, want the file moved to bad/ at once", errs)
	}
}
