package usage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/atomicfile/linktest"
	"github.com/battyhq/batty/project"
)

var t0 = time.Date(2030, 3, 4, 10, 0, 0, 0, time.UTC)

func testLayout(t *testing.T) project.Layout {
	return project.Layout{Dir: filepath.Join(t.TempDir(), "proj-0123456789ab")}
}

func turn(agent, msg string, attempt int, at time.Time, in, out int64) Turn {
	return Turn{Agent: agent, Role: strings.TrimRight(agent, "-0123456789"), Message: msg, Attempt: attempt, At: at,
		Tokens: Tokens{Input: in, CachedInput: in / 2, Output: out}, DurationMS: 1500, Status: "completed"}
}

func openLedger(t *testing.T, l project.Layout) *Ledger {
	t.Helper()
	lg, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	return lg
}

func mustAppend(t *testing.T, lg *Ledger, tr Turn) bool {
	t.Helper()
	added, err := lg.AppendTurn(tr)
	if err != nil {
		t.Fatal(err)
	}
	return added
}

func mustRead(t *testing.T, l project.Layout) Data {
	t.Helper()
	d, err := Read(l, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A turn appended twice — by the same ledger, or by a ledger opened again
// after a restart — is in the ledger once.
func TestAppendTurnOnce(t *testing.T) {
	l := testLayout(t)
	lg := openLedger(t, l)
	if !mustAppend(t, lg, turn("eng-1", "m1", 1, t0, 100, 10)) {
		t.Fatal("first append not added")
	}
	if mustAppend(t, lg, turn("eng-1", "m1", 1, t0.Add(time.Second), 100, 10)) {
		t.Fatal("second append of the same turn added")
	}
	// The next attempt of the message is another turn.
	if !mustAppend(t, lg, turn("eng-1", "m1", 2, t0.Add(time.Minute), 50, 5)) {
		t.Fatal("attempt 2 not added")
	}
	lg.Close()
	lg2 := openLedger(t, l)
	// What it held at its opening is given once, as Read gives it.
	if opened := lg2.TakeOpened(); len(opened) != 2 || opened[0].Key != "eng-1/m1/1" || lg2.TakeOpened() != nil {
		t.Fatalf("the turns read at the opening: %+v", opened)
	}
	if mustAppend(t, lg2, turn("eng-1", "m1", 2, t0.Add(time.Hour), 50, 5)) {
		t.Fatal("a reopened ledger added a turn it holds")
	}
	d := mustRead(t, l)
	if len(d.Turns) != 2 || len(d.Skips) != 0 {
		t.Fatalf("read %d turns, skips %v; want 2, none", len(d.Turns), d.Skips)
	}
	if got := Sum(d.Turns, time.Time{}, time.Time{}, nil); got.Input != 150 || got.Output != 15 {
		t.Fatalf("sum %+v", got)
	}
	if d.Turns[0].Key != "eng-1/m1/1" || d.Turns[0].V != Version {
		t.Fatalf("turn %+v", d.Turns[0])
	}
}

// A line written twice (an append whose fsync failed, tried again) is
// counted once by the reader.
func TestReadCountsAKeyOnce(t *testing.T) {
	l := testLayout(t)
	lg := openLedger(t, l)
	tr := turn("qa", "m1", 1, t0, 100, 10)
	mustAppend(t, lg, tr)
	lg.Close()
	dir := openUsageDir(t, l)
	b, err := dir.ReadFile(segmentName(turnsPrefix, 1))
	if err != nil {
		t.Fatal(err)
	}
	f, err := dir.OpenFile(segmentName(turnsPrefix, 1), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b)
	f.Close()
	d := mustRead(t, l)
	if len(d.Turns) != 1 || d.Duplicates != 1 {
		t.Fatalf("turns %d, duplicates %d; want 1, 1", len(d.Turns), d.Duplicates)
	}
}

func openUsageDir(t *testing.T, l project.Layout) *atomicfile.Dir {
	t.Helper()
	dir, err := l.OpenDir(project.UsageName, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	return dir
}

// A cut last line (power lost mid-append) and a corrupt line are skipped
// and reported; the next append starts a line of its own and is read.
func TestCutAndCorruptLinesSkipped(t *testing.T) {
	l := testLayout(t)
	lg := openLedger(t, l)
	mustAppend(t, lg, turn("qa", "m1", 1, t0, 100, 10))
	lg.Close()
	dir := openUsageDir(t, l)
	f, err := dir.OpenFile(segmentName(turnsPrefix, 1), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{\"v\":1,\"key\":\"x\"\n\x00\xff garbage\n{\"v\":1,\"key\":\"qa/m2/1\",\"at\":\"2030-03-04T10:00:00Z\",\"ag")
	f.Close()

	d := mustRead(t, l)
	if len(d.Turns) != 1 || len(d.Skips) != 3 {
		t.Fatalf("turns %d, skips %v; want 1 and 3", len(d.Turns), d.Skips)
	}
	if !strings.Contains(d.Skips[2].Reason, "cut last line") || d.Skips[2].Line != 4 {
		t.Fatalf("last skip %v", d.Skips[2])
	}
	lg2 := openLedger(t, l)
	mustAppend(t, lg2, turn("qa", "m2", 1, t0, 7, 1))
	d = mustRead(t, l)
	if len(d.Turns) != 2 || len(d.Skips) != 3 {
		t.Fatalf("after an append: turns %d, skips %v; want 2 and 3", len(d.Turns), d.Skips)
	}
}

// The ledger is bounded: past a segment's size a new one starts, and the
// oldest go past the count kept; the reader reads them in order.
func TestRotation(t *testing.T) {
	l := testLayout(t)
	lg := openLedger(t, l)
	lg.turns.max, lg.turns.keep = 1000, 3
	for i := range 40 {
		mustAppend(t, lg, turn("eng", "m"+string(rune('a'+i%26))+string(rune('a'+i/26)), 1, t0.Add(time.Duration(i)*time.Minute), 10, 1))
	}
	dir := openUsageDir(t, l)
	seqs, err := list(dir, turnsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 3 || seqs[0] == 1 {
		t.Fatalf("segments %v: want the newest 3", seqs)
	}
	for _, s := range seqs {
		fi, err := dir.Lstat(segmentName(turnsPrefix, s))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 1000 {
			t.Fatalf("segment %d of %d bytes", s, fi.Size())
		}
	}
	d := mustRead(t, l)
	if len(d.Turns) == 0 || len(d.Turns) >= 40 || len(d.Skips) != 0 {
		t.Fatalf("read %d turns, skips %v", len(d.Turns), d.Skips)
	}
	for i := 1; i < len(d.Turns); i++ {
		if !d.Turns[i].At.After(d.Turns[i-1].At) {
			t.Fatalf("turns out of order at %d", i)
		}
	}
	if last := d.Turns[len(d.Turns)-1]; !last.At.Equal(t0.Add(39 * time.Minute)) {
		t.Fatalf("last turn at %s", last.At)
	}
}

// A limit window is sampled when it changes, or an hour after its last
// sample; a reopened ledger goes on from the last sample written.
func TestAppendLimits(t *testing.T) {
	l := testLayout(t)
	lg := openLedger(t, l)
	reset := t0.Add(5 * time.Hour)
	s := func(at time.Time, pct float64) LimitSample {
		return LimitSample{At: at, Account: "work", Agent: "eng", Window: "primary", UsedPct: pct, WindowMinutes: 300, ResetsAt: reset}
	}
	want := []int{1, 0, 1, 0, 1}
	for i, in := range []LimitSample{s(t0, 10), s(t0.Add(time.Minute), 10), s(t0.Add(2*time.Minute), 12), s(t0.Add(3*time.Minute), 12), s(t0.Add(2*time.Hour), 12)} {
		n, err := lg.AppendLimits([]LimitSample{in})
		if err != nil || n != want[i] {
			t.Fatalf("sample %d: wrote %d, %v; want %d", i, n, err, want[i])
		}
	}
	lg.Close()
	lg2 := openLedger(t, l)
	if n, _ := lg2.AppendLimits([]LimitSample{s(t0.Add(2*time.Hour+time.Minute), 12)}); n != 0 {
		t.Fatalf("a reopened ledger wrote an unchanged sample")
	}
	d := mustRead(t, l)
	if len(d.Limits) != 3 || !d.Limits[2].ResetsAt.Equal(reset) {
		t.Fatalf("limits %+v", d.Limits)
	}
}

// A symbolic link planted at the usage directory or at a segment is
// refused, never written through.
func TestLinksRefused(t *testing.T) {
	t.Run("directory", func(t *testing.T) {
		l := testLayout(t)
		if err := os.MkdirAll(l.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		out, victim := linktest.Outside(t)
		linktest.Symlink(t, out, l.UsageDir())
		_, err := Open(l)
		if !errors.Is(err, atomicfile.ErrSymlink) {
			t.Fatalf("Open through a link: %v", err)
		}
		if _, err := Read(l, time.Time{}, time.Time{}); !errors.Is(err, atomicfile.ErrSymlink) {
			t.Fatalf("Read through a link: %v", err)
		}
		linktest.AssertUntouched(t, out, victim)
	})
	t.Run("segment", func(t *testing.T) {
		l := testLayout(t)
		if err := os.MkdirAll(l.UsageDir(), 0o700); err != nil {
			t.Fatal(err)
		}
		out, victim := linktest.Outside(t)
		linktest.Symlink(t, victim, filepath.Join(l.UsageDir(), segmentName(turnsPrefix, 1)))
		if _, err := Open(l); !errors.Is(err, atomicfile.ErrSymlink) {
			t.Fatalf("Open with a link for a segment: %v", err)
		}
		linktest.AssertUntouched(t, out, victim)
	})
}

// A turn whose append fails is held and written with the next one.
func TestPendingWrittenLater(t *testing.T) {
	l := testLayout(t)
	lg := openLedger(t, l)
	name := filepath.Join(l.UsageDir(), segmentName(turnsPrefix, 1))
	// A directory where the segment goes: the append fails.
	if err := os.Mkdir(name, 0o700); err != nil {
		t.Fatal(err)
	}
	added, err := lg.AppendTurn(turn("eng", "m1", 1, t0, 5, 1))
	if !added || err == nil {
		t.Fatalf("append onto a directory: added %v, %v", added, err)
	}
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
	if _, err := lg.AppendTurn(turn("eng", "m2", 1, t0, 7, 1)); err != nil {
		t.Fatal(err)
	}
	d := mustRead(t, l)
	if len(d.Turns) != 2 || d.Turns[0].Message != "m1" {
		t.Fatalf("turns %+v", d.Turns)
	}
}

// The observer hears of each turn the ledger adds, once.
func TestObserverHearsEachTurnOnce(t *testing.T) {
	lg := openLedger(t, testLayout(t))
	var heard []string
	lg.SetObserver(func(tr Turn) { heard = append(heard, tr.Key) })
	mustAppend(t, lg, turn("eng-1", "m1", 1, t0, 100, 10))
	mustAppend(t, lg, turn("eng-1", "m1", 1, t0, 100, 10))
	mustAppend(t, lg, turn("eng-1", "m1", 2, t0, 100, 10))
	if strings.Join(heard, " ") != "eng-1/m1/1 eng-1/m1/2" {
		t.Fatalf("heard %v", heard)
	}
}
