package fanout

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/atomicfile"
)

func table(t *testing.T, csv string) *Table {
	t.Helper()
	tb, err := ReadTable(strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestStoreJournalSurvivesACrash: rows recorded by a job that never closed
// its store (killed) are in the journal; the next OpenStore merges them
// into OUT and skips them, and a line cut by the crash is dropped.
func TestStoreJournalSurvivesACrash(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.csv")
	tb := table(t, "a\nx\ny\nz\n")
	s, err := OpenStore(out, tb)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record(Record{Row: 0, Values: []string{"x"}, Status: StatusDone, Result: `{"k":1}`, Tokens: 7}); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(Record{Row: 2, Values: []string{"z"}, Status: StatusFailed, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	// The crash: no Close; half a line was being written.
	s.journal.Write([]byte(`{"row":1,"values":["y"],"sta`))
	s.journal.Close()
	s.lock.Close() // the process is gone: its lock too
	s.dir.Close()

	s2, err := OpenStore(out, tb)
	if err != nil {
		t.Fatal(err)
	}
	if !s2.Done(0) || s2.Done(1) || s2.Done(2) {
		t.Errorf("done after the crash: %v %v %v, want only row 1", s2.Done(0), s2.Done(1), s2.Done(2))
	}
	// The journal was merged into OUT before this run's journal began.
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), `x,done,"{""k"":1}",,,7,0.000`) || !strings.Contains(string(b), "y,pending") || !strings.Contains(string(b), "z,failed,,boom") {
		t.Errorf("OUT after the merge:\n%s", b)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out + JournalSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("journal left after Close: %v", err)
	}
}

// TestStoreRedoesAnEditedRow: a row done in OUT whose input values changed
// is not skipped.
func TestStoreRedoesAnEditedRow(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.csv")
	s, err := OpenStore(out, table(t, "a\nx\ny\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.Record(Record{Row: 0, Values: []string{"x"}, Status: StatusDone, Result: "{}"})
	s.Record(Record{Row: 1, Values: []string{"y"}, Status: StatusDone, Result: "{}"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenStore(out, table(t, "a\nx\nedited\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Done(0) || s.Done(1) {
		t.Errorf("done: %v %v, want row 1 only (row 2 was edited)", s.Done(0), s.Done(1))
	}
}

// TestStoreRefusesAForeignOutput: an OUT that is not a fan-out output of
// these columns is refused, naming it, and left as it was; so is a link.
func TestStoreRefusesAForeignOutput(t *testing.T) {
	dir := t.TempDir()
	tb := table(t, "a,b\n1,2\n")
	cases := map[string]string{
		"other.csv":   "name,age\nann,3\n",
		"columns.csv": "a,status,result,error,thread_id,tokens,duration_s\n1,done,{},,,1,1\n",
		"status.csv":  "a,b,status,result,error,thread_id,tokens,duration_s\n1,2,maybe,,,,1,1\n",
		"notcsv.csv":  "a,b,status,result,error,thread_id,tokens,duration_s\n\"1,2\n",
	}
	for name, content := range cases {
		out := filepath.Join(dir, name)
		os.WriteFile(out, []byte(content), 0o644)
		_, err := OpenStore(out, tb)
		if err == nil || !strings.Contains(err.Error(), out) || !strings.Contains(err.Error(), "not a batty fanout output") {
			t.Errorf("%s: err %v", name, err)
		}
		if b, _ := os.ReadFile(out); string(b) != content {
			t.Errorf("%s was changed to %q", name, b)
		}
		if _, err := os.Stat(out + JournalSuffix); err == nil {
			t.Errorf("%s: a journal was made", name)
		}
	}
	target := filepath.Join(dir, "target.csv")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(dir, "link.csv")
	os.Symlink(target, link)
	if _, err := OpenStore(link, tb); !errors.Is(err, atomicfile.ErrSymlink) {
		t.Errorf("link: err %v, want ErrSymlink", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target was changed to %q", b)
	}
	// A FIFO as OUT or as its journal is refused at once, not opened and
	// waited on.
	for _, name := range []string{"fifo.csv", "fifojournal.csv" + JournalSuffix} {
		if err := unix.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"fifo.csv", "fifojournal.csv"} {
		if _, err := OpenStore(filepath.Join(dir, name), tb); err == nil || !strings.Contains(err.Error(), "is a FIFO") {
			t.Errorf("%s: err %v, want a FIFO refused", name, err)
		}
	}
	// OUT in a directory that does not exist: say so.
	if _, err := OpenStore(filepath.Join(dir, "nodir", "out.csv"), tb); err == nil || !strings.Contains(err.Error(), "does not exist: create it") {
		t.Errorf("missing directory: err %v", err)
	}
	// A journal of other columns is refused too.
	out := filepath.Join(dir, "j.csv")
	os.WriteFile(out+JournalSuffix, []byte(`{"batty_fanout":1,"columns":["q"]}`+"\n"), 0o600)
	if _, err := OpenStore(out, tb); err == nil || !strings.Contains(err.Error(), "written for the columns") {
		t.Errorf("foreign journal: err %v", err)
	}
}

// TestStoreRefusesAnOutputAnotherJobWrites: the journal of a running job
// is locked; a second job on the same OUT is refused and changes nothing.
func TestStoreRefusesAnOutputAnotherJobWrites(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.csv")
	tb := table(t, "a\nx\n")
	first, err := OpenStore(out, tb)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Record(Record{Row: 0, Values: []string{"x"}, Status: StatusDone, Result: "{}"}); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(out, tb); err == nil || !strings.Contains(err.Error(), "another batty fanout is writing this output") {
		t.Fatalf("second job: err %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := OpenStore(out, tb)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !again.Done(0) {
		t.Error("the first job's row was lost")
	}
}

// TestStoreWritesNothingAfterAJournalError: once a write to the journal
// failed (a full disk, which may have written part of a line), no later
// record is appended after the cut line, so the next run still reads the
// journal and keeps the rows recorded before the failure.
func TestStoreWritesNothingAfterAJournalError(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.csv")
	tb := table(t, "a\nx\ny\nz\n")
	s, err := OpenStore(out, tb)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record(Record{Row: 0, Values: []string{"x"}, Status: StatusDone, Result: `{}`}); err != nil {
		t.Fatal(err)
	}
	// The disk fills up: the write fails, part of a line got through.
	good := s.journal
	ro, err := os.Open(out + JournalSuffix)
	if err != nil {
		t.Fatal(err)
	}
	s.journal = ro
	if err := s.Record(Record{Row: 1, Values: []string{"y"}, Status: StatusDone, Result: `{}`}); err == nil {
		t.Fatal("a failed write was not reported")
	}
	ro.Close()
	good.Write([]byte(`{"row":1,"values":["y"],"sta`))
	// Space is back when the next row finishes.
	s.journal = good
	if err := s.Record(Record{Row: 2, Values: []string{"z"}, Status: StatusDone, Result: `{}`}); err == nil {
		t.Error("a record after a failed write was reported durable")
	}
	// The job is killed before it could write OUT.
	s.journal.Close()
	s.lock.Close() // the process is gone: its lock too
	s.dir.Close()
	s2, err := OpenStore(out, tb)
	if err != nil {
		t.Fatalf("the next run cannot read the journal: %v", err)
	}
	defer s2.Close()
	if !s2.Done(0) || s2.Done(1) || s2.Done(2) {
		t.Errorf("done after the failure: %v %v %v, want only row 1", s2.Done(0), s2.Done(1), s2.Done(2))
	}
}

// TestStoreReadsBackAnOutputLargerThanTheInputLimit: OUT and the journal
// hold every row's whole result, so a job with large replies writes files
// far larger than an input may be; the next run reads them back (a finished
// job reruns for free) instead of refusing its own output.
func TestStoreReadsBackAnOutputLargerThanTheInputLimit(t *testing.T) {
	// The input's bound, lowered so that the files stay small: nothing
	// that reads the output or the journal may apply it.
	defer func(n int) { maxInput = n }(maxInput)
	maxInput = 1 << 20
	out := filepath.Join(t.TempDir(), "out.csv")
	tb := table(t, "a\nx\ny\n")
	big := func(w *bufio.Writer) {
		chunk := strings.Repeat("r", 1<<20)
		for range maxInput>>20 + 4 {
			w.WriteString(chunk)
		}
	}
	write := func(name string, body func(w *bufio.Writer)) {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		body(w)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	write(out, func(w *bufio.Writer) {
		w.WriteString("a,status,result,error,thread_id,tokens,duration_s\nx,done,\"{\"\"r\"\":\"\"")
		big(w)
		w.WriteString("\"\"}\",,t1,5,1.000\ny,pending,,,,0,0.000\n")
	})
	write(out+JournalSuffix, func(w *bufio.Writer) {
		w.WriteString(`{"batty_fanout":1,"columns":["a"]}` + "\n" + `{"row":1,"values":["y"],"status":"done","result":"{\"r\":\"`)
		big(w)
		w.WriteString(`\"}","tokens":5,"duration_s":1}` + "\n")
	})
	s, err := OpenStore(out, tb)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Done(0) || !s.Done(1) {
		t.Errorf("done: %v %v, want both rows", s.Done(0), s.Done(1))
	}
	if r, _ := s.Prior(1); len(r.Result) < maxInput {
		t.Errorf("row 2's result has %d bytes, want it whole", len(r.Result))
	}
}

// TestStoreTwoJobsStartingAtOnce: a second job that opens the output at the
// very moment the first creates its journal neither merges and removes it
// nor runs beside it: one of the two is refused, and the journal left is
// the other's.
func TestStoreTwoJobsStartingAtOnce(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.csv")
	tb := table(t, "a\nx\ny\n")
	var second *Store
	var secondErr error
	journalCreated = func() {
		journalCreated = func() {}
		second, secondErr = OpenStore(out, tb)
	}
	t.Cleanup(func() { journalCreated = func() {} })
	first, firstErr := OpenStore(out, tb)
	if (firstErr == nil) == (secondErr == nil) {
		t.Fatalf("first job: %v; second job: %v; want exactly one refused", firstErr, secondErr)
	}
	if err := errors.Join(firstErr, secondErr); !strings.Contains(err.Error(), "another batty fanout") {
		t.Errorf("the refusal %q does not say why", err)
	}
	winner := first
	if winner == nil {
		winner = second
	}
	if err := winner.Record(Record{Row: 0, Values: []string{"x"}, Status: StatusDone, Result: `{}`}); err != nil {
		t.Fatal(err)
	}
	// The journal at its name is the winner's: locked, holding its row.
	if _, err := OpenStore(out, tb); err == nil || !strings.Contains(err.Error(), "is locked") {
		t.Errorf("a third job: err %v, want the journal locked", err)
	}
	b, err := os.ReadFile(out + JournalSuffix)
	if err != nil || !strings.Contains(string(b), `"row":0`) {
		t.Errorf("journal %q, %v: want the winner's row in it", b, err)
	}
	if err := winner.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := os.ReadDir(filepath.Dir(out))
	if len(names) != 1 || names[0].Name() != "out.csv" {
		t.Errorf("files left: %v, want only OUT", names)
	}
}

// TestStoreLeavesNoLockFile: a job that ends removes OUT.lock, whether it
// ran or OpenStore refused the output after taking the lock.
func TestStoreLeavesNoLockFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.csv")
	tb := table(t, "a\nx\n")
	s, err := OpenStore(out, tb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(out + LockSuffix); err != nil {
		t.Fatalf("no lock file while the job runs: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(out + LockSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock file after the job: %v, want none", err)
	}
	// Refused under the lock: an OUT of other columns.
	other := filepath.Join(dir, "other.csv")
	os.WriteFile(other, []byte("q,status,result,error,thread_id,tokens,duration_s\n"), 0o600)
	if _, err := OpenStore(other, tb); err == nil {
		t.Fatal("an output of other columns was taken")
	}
	if _, err := os.Lstat(other + LockSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock file after a refused job: %v, want none", err)
	}
}

// TestStoreLockRemovedWhileASecondJobOpensIt: job B opens OUT.lock while
// job A holds it; A ends (removing the file), job C creates and locks a
// new one; B's lock of the removed file must not count, or B and C would
// run at once on the same output.
func TestStoreLockRemovedWhileASecondJobOpensIt(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.csv")
	tb := table(t, "a\nx\n")
	a, err := OpenStore(out, tb)
	if err != nil {
		t.Fatal(err)
	}
	var c *Store
	var cErr, aErr error
	lockOpened = func() {
		lockOpened = func() {}
		// B has the old file open, not yet locked.
		aErr = a.Close()
		c, cErr = OpenStore(out, tb)
	}
	t.Cleanup(func() { lockOpened = func() {} })
	b, bErr := OpenStore(out, tb)
	if aErr != nil || cErr != nil {
		t.Fatalf("job A closing: %v; job C: %v", aErr, cErr)
	}
	defer c.Close()
	if bErr == nil {
		b.Close()
		t.Fatal("jobs B and C both hold the output")
	}
	if !strings.Contains(bErr.Error(), "another batty fanout") {
		t.Errorf("job B refused with %v", bErr)
	}
}

// TestStoreJobsRacingLeaveNoLockFile: jobs opening and closing the same
// output at once never hold it together, and none leaves OUT.lock.
func TestStoreJobsRacingLeaveNoLockFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.csv")
	tb := table(t, "a\nx\n")
	var holders, most, opened atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for range 200 {
				s, err := OpenStore(out, tb)
				if err != nil {
					if !strings.Contains(err.Error(), "another batty fanout") {
						errs <- err
						return
					}
					continue
				}
				opened.Add(1)
				n := holders.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				// A record (an fsync) while it holds the output.
				rerr := s.Record(Record{Row: 0, Values: []string{"x"}, Status: StatusDone, Result: `{}`})
				holders.Add(-1)
				if rerr != nil {
					errs <- rerr
				}
				if err := s.Close(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if most.Load() != 1 || opened.Load() == 0 {
		t.Errorf("at most %d jobs held the output at once (%d opened), want 1", most.Load(), opened.Load())
	}
	if _, err := os.Lstat(out + LockSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock file after the jobs: %v, want none", err)
	}
}

// TestStoreOneJobPerOutput: two jobs starting together on an output with
// no journal yet never both run: without the job lock, the one that
// started second could remove the first's live journal (it removes the
// journal it merged, by name) and run every row beside it.
func TestStoreOneJobPerOutput(t *testing.T) {
	var in strings.Builder
	in.WriteString("a\n")
	for i := range 5000 {
		fmt.Fprintf(&in, "row-%d\n", i)
	}
	tb := table(t, in.String())
	for try := range 50 {
		out := filepath.Join(t.TempDir(), "out.csv")
		var wg sync.WaitGroup
		stores := make([]*Store, 2)
		errs := make([]error, 2)
		for j := range 2 {
			wg.Go(func() { stores[j], errs[j] = OpenStore(out, tb) })
		}
		wg.Wait()
		opened := 0
		for j, s := range stores {
			if s == nil {
				if !strings.Contains(errs[j].Error(), "another batty fanout") {
					t.Fatalf("try %d: refused with %v", try, errs[j])
				}
				continue
			}
			opened++
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if opened != 1 {
			t.Fatalf("try %d: %d jobs opened the same output at once, want 1", try, opened)
		}
	}
}

// TestStoreRowWithCRLFInAValueIsDoneOnRerun: a quoted value holding a CR
// LF after the CSV reader's own line-break handling ("\r\r\n" in the file,
// a common corruption of Windows line ends) comes back from OUT equal to
// the input, so the finished row is not run again.
func TestStoreRowWithCRLFInAValueIsDoneOnRerun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.csv")
	in := "a,b\r\n\"x\r\r\ny\",\"p\r\r\r\nq\"\r\n"
	tb := table(t, in)
	s, err := OpenStore(out, tb)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record(Record{Row: 0, Values: tb.Rows[0], Status: StatusDone, Result: `{}`}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenStore(out, table(t, in))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if !s2.Done(0) {
		t.Errorf("the finished row %q is to run again", tb.Rows[0])
	}
}
