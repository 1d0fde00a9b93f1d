package fanout

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/textclip"
)

// Row statuses in the output file.
const (
	StatusDone    = "done"    // the worker answered with a JSON object
	StatusFailed  = "failed"  // it did not, or its turn failed: retried by a rerun
	StatusPending = "pending" // not run (yet): the job stopped before it
)

// ExtraColumns follow the input columns in the output file.
var ExtraColumns = []string{"status", "result", "error", "thread_id", "tokens", "duration_s"}

// JournalSuffix names the journal next to the output file.
const JournalSuffix = ".journal"

// LockSuffix names the job's lock file next to the output file: held
// (flock) from OpenStore to the end of Close, so that one job at a time
// reads, writes and removes OUT and its journal. The job removes it at its
// end, still holding it; a job counts as holding the lock only when the
// file it locked is still the one at the name (see lockJob), so a job that
// opened the removed file cannot run beside one that creates it anew. A
// killed job leaves it; the next job takes it over and removes it.
const LockSuffix = ".lock"

// maxLockTries bounds how often lockJob opens the lock file again after
// the file it locked was removed or replaced meanwhile (each time by a job
// that ended): far more than racing jobs can cause.
const maxLockTries = 100

// journalVersion marks the first line of a journal.
const journalVersion = 1

// Record is the outcome of one row.
type Record struct {
	// Row is the row's index in the input (0 = the first row after the
	// header).
	Row int `json:"row"`
	// Values are the row's input values, so that an edited input row is
	// not taken for the one that was run.
	Values   []string `json:"values"`
	Status   string   `json:"status"`
	Result   string   `json:"result,omitempty"` // the JSON object, compact
	Error    string   `json:"error,omitempty"`
	ThreadID string   `json:"thread_id,omitempty"`
	Tokens   int64    `json:"tokens"`
	Duration float64  `json:"duration_s"`
}

// journalHeader is a journal's first line.
type journalHeader struct {
	Version int      `json:"batty_fanout"`
	Columns []string `json:"columns"`
}

// Store keeps the outcomes of a job's rows durable. Every finished row is
// appended to the journal (OUT.journal, fsynced) as it finishes; Close
// merges the journal into OUT, written atomically (temporary file, fsync,
// rename, fsync of the directory), and removes the journal. A job killed
// before Close leaves the journal; the next OpenStore merges it. Neither
// file is ever opened through a symbolic link. Record is safe for
// concurrent use; Close must be called once, after the last Record.
type Store struct {
	dir     *atomicfile.Dir
	name    string // OUT's base name
	table   *Table
	prior   map[int]Record // by input row: OUT, then the journal over it
	journal *os.File
	old     *os.File // a journal an earlier job left, open while it is merged
	lock    *os.File // OUT.lock, locked by this job until Close has ended

	mu      sync.Mutex
	cond    *sync.Cond // signalled when a sync ends
	buf     []byte     // records not yet written
	seq     int        // records taken
	synced  int        // records written and synced
	syncing bool       // a Record call is writing
	err     error      // the first write or sync error: the journal is unusable
}

// OpenStore reads what earlier runs recorded in out (and in its journal,
// left by a job that was killed) for the input t, and opens the journal
// for this run. It refuses an out (or journal) that is not a fan-out output
// for t's columns, naming it, and writes nothing then.
func OpenStore(out string, t *Table) (*Store, error) {
	dir, err := atomicfile.OpenDir(filepath.Dir(out))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("output %s: the directory %s does not exist: create it, or choose another --output: %w", out, filepath.Dir(out), err)
	}
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", out, err)
	}
	s := &Store{dir: dir, name: filepath.Base(out), table: t, prior: map[int]Record{}}
	s.cond = sync.NewCond(&s.mu)
	fail := func(err error) (*Store, error) {
		if s.old != nil {
			s.old.Close()
		}
		if s.lock != nil {
			err = errors.Join(err, s.unlock())
		}
		dir.Close()
		return nil, err
	}
	if err := s.lockJob(); err != nil {
		return fail(err)
	}
	if err := s.load(); err != nil {
		return fail(err)
	}
	// A journal left by a killed job goes into OUT first, so that this
	// run's journal starts whole (a line the crash cut is dropped).
	if err := s.writeOut(); err != nil {
		return fail(err)
	}
	if s.old != nil {
		s.old.Close()
		s.old = nil
	}
	if err := s.createJournal(); err != nil {
		return fail(err)
	}
	return s, nil
}

// lockJob takes the job's lock, OUT.lock (created when missing, never
// through a link), without waiting: held by another job, the output is
// refused. The lock counts only when the file locked is still the one at
// the name: a job that ended removed it (under its lock) after this one
// opened it, so another job may lock a new file at the name; then this
// one opens the name again.
func (s *Store) lockJob() error {
	name := s.name + LockSuffix
	for range maxLockTries {
		f, err := s.dir.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("open the lock %s: %w", filepath.Join(s.dir.Path(), name), err)
		}
		lockOpened()
		if err := flock(f); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return fmt.Errorf("%s is locked: another batty fanout is writing this output; wait for it to end, or choose another --output", f.Name())
			}
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		same, err := s.sameFile(f, name)
		if err != nil {
			f.Close()
			return err
		}
		if same {
			s.lock = f
			return nil
		}
		f.Close() // removed or replaced since it was opened: open the name again
	}
	return fmt.Errorf("lock %s: the lock file was removed or replaced %d times while this job tried to take it", filepath.Join(s.dir.Path(), name), maxLockTries)
}

// flock takes f's exclusive lock without waiting (EWOULDBLOCK when another
// open file holds it).
func flock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// sameFile reports whether the entry name of s.dir is the open file f (the
// same device and inode); a missing entry is not.
func (s *Store) sameFile(f *os.File, name string) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false, fmt.Errorf("stat the lock %s: %w", f.Name(), err)
	}
	fi, err := s.dir.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stat the lock: %w", err)
	}
	at := fi.Sys().(*unix.Stat_t)
	return at.Dev == st.Dev && at.Ino == st.Ino, nil
}

// unlock removes the lock file, still holding its lock, then releases it:
// a job that opened the file meanwhile finds it gone once it gets the lock
// (lockJob), so it cannot take the removed file for the live lock.
func (s *Store) unlock() error {
	var err error
	if rerr := s.dir.Remove(s.name + LockSuffix); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = fmt.Errorf("remove the lock file: %w", rerr)
	}
	if cerr := s.lock.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("release the lock %s: %w", s.lock.Name(), cerr))
	}
	s.lock = nil
	return err
}

// lockOpened is called between opening the lock file and locking it (a
// test's hook into that moment).
var lockOpened = func() {}

// journalCreated is called once this run's journal file exists (a test's
// hook into that moment).
var journalCreated = func() {}

// createJournal starts this run's journal: created (never replacing a
// file, never through a link) and given its header, fsynced. The job lock
// keeps other jobs away from it; a header a crash cut short reads as a
// journal with no rows.
func (s *Store) createJournal() error {
	f, err := s.dir.OpenFile(s.name+JournalSuffix, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create the journal of %s: %w", s.path(), err)
	}
	journalCreated()
	s.journal = f
	if err := s.appendLine(journalHeader{Version: journalVersion, Columns: s.table.Columns}); err != nil {
		f.Close()
		s.dir.Remove(s.name + JournalSuffix)
		return fmt.Errorf("start the journal of %s: %w", s.path(), err)
	}
	return nil
}

// path is OUT's path; journalPath the journal's.
func (s *Store) path() string        { return filepath.Join(s.dir.Path(), s.name) }
func (s *Store) journalPath() string { return s.path() + JournalSuffix }

// load reads OUT and the journal into prior. Both are decoded as they are
// read, whatever their size: OUT holds every row's whole result, so it may
// be much larger than the input (a file this job cannot read back would
// make the job impossible to resume).
func (s *Store) load() error {
	f, err := s.dir.OpenFile(s.name, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read %s: %w", s.path(), err)
	default:
		recs, err := decodeOutput(f, s.table.Columns)
		f.Close()
		if err != nil {
			return fmt.Errorf("output %s exists but is not a batty fanout output for these columns (%s): %w; choose another --output or remove it", s.path(), strings.Join(s.table.Columns, ", "), err)
		}
		for _, r := range recs {
			s.prior[r.Row] = r
		}
	}
	if err := s.openJournal(); err != nil || s.old == nil {
		return err
	}
	recs, err := decodeJournal(s.old, s.table.Columns)
	if err != nil {
		return fmt.Errorf("journal %s: %w; remove it to start the rows it recorded again", s.journalPath(), err)
	}
	for _, r := range recs {
		s.prior[r.Row] = r
	}
	return nil
}

// openJournal opens the journal an earlier job left as s.old (nil when
// there is none): a job holds the job lock while it writes its journal, so
// one found under the lock is a killed job's.
func (s *Store) openJournal() error {
	f, err := s.dir.OpenFile(s.name+JournalSuffix, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", s.journalPath(), err)
	}
	s.old = f
	return nil
}

// Done reports whether input row i was recorded done, with the same input
// values, by an earlier run: then it is not run again.
func (s *Store) Done(i int) bool {
	r, ok := s.prior[i]
	return ok && r.Status == StatusDone && slices.Equal(r.Values, s.table.Rows[i])
}

// Prior returns what an earlier run recorded for input row i with the same
// values.
func (s *Store) Prior(i int) (Record, bool) {
	r, ok := s.prior[i]
	if !ok || !slices.Equal(r.Values, s.table.Rows[i]) {
		return Record{}, false
	}
	return r, true
}

// Record makes r durable: appended to the journal and fsynced before it
// returns. Records of concurrent calls share one fsync (group commit).
// After a write or sync error (a full disk) nothing more is written: a
// write the error cut short stays the journal's last line, which a crash
// could also have cut, so the journal stays readable.
func (s *Store) Record(r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("record row %d: %w", r.Row+1, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.buf = append(append(s.buf, line...), '\n')
	s.seq++
	mine := s.seq
	for s.synced < mine && s.err == nil {
		if s.syncing {
			s.cond.Wait()
			continue
		}
		// This call writes and syncs everything buffered so far, its own
		// record included, without the lock.
		buf, upto := s.buf, s.seq
		s.buf, s.syncing = nil, true
		s.mu.Unlock()
		_, err := s.journal.Write(buf)
		if err == nil {
			err = s.journal.Sync()
		}
		s.mu.Lock()
		s.syncing, s.synced = false, upto
		if err != nil && s.err == nil {
			s.err = fmt.Errorf("record rows in %s: %w", s.journalPath(), err)
		}
		s.cond.Broadcast()
	}
	if s.err != nil {
		return s.err
	}
	s.prior[r.Row] = r
	return nil
}

func (s *Store) appendLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := s.journal.Write(append(b, '\n')); err != nil {
		return err
	}
	return s.journal.Sync()
}

// Close writes OUT (every input row in input order: its recorded outcome,
// or pending), then removes the journal, whose rows OUT now holds, and
// last the lock file. On an error the journal stays, so nothing recorded
// is lost.
func (s *Store) Close() (err error) {
	defer s.dir.Close()
	defer func() { err = errors.Join(err, s.unlock()) }() // last: the lock holds until OUT is written
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.journal.Close(); err != nil {
		return fmt.Errorf("close the journal %s: %w", s.journalPath(), err)
	}
	return s.writeOut()
}

// writeOut writes OUT from prior, then removes the journal, whose rows OUT
// now holds. On an error the journal stays, so nothing recorded is lost.
func (s *Store) writeOut() error {
	data, err := EncodeOutput(s.table, s.prior)
	if err != nil {
		return fmt.Errorf("write %s: %w", s.path(), err)
	}
	if err := s.dir.WriteFile(s.name, data, 0o600); err != nil {
		return err
	}
	if err := s.dir.Remove(s.name + JournalSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the journal %s: %w", s.journalPath(), err)
	}
	if err := s.dir.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", s.dir.Path(), err)
	}
	return nil
}

// EncodeOutput renders the output file: t's columns and ExtraColumns, one
// line per input row in input order, with the outcome recorded for it when
// its input values match, else pending.
func EncodeOutput(t *Table, recs map[int]Record) ([]byte, error) {
	header := append(slices.Clone(t.Columns), ExtraColumns...)
	rows := make([][]string, len(t.Rows))
	for i, values := range t.Rows {
		r, ok := recs[i]
		if !ok || !slices.Equal(r.Values, values) {
			r = Record{Status: StatusPending}
		}
		rows[i] = append(slices.Clone(values), r.Status, r.Result, r.Error, r.ThreadID,
			strconv.FormatInt(r.Tokens, 10), strconv.FormatFloat(r.Duration, 'f', 3, 64))
	}
	return writeCSV(header, rows)
}

// DecodeOutput reads an output file written for columns: its header must be
// columns followed by ExtraColumns. Row k is input row k. It never panics.
func DecodeOutput(data []byte, columns []string) ([]Record, error) {
	return decodeOutput(bytes.NewReader(data), columns)
}

// decodeOutput is DecodeOutput reading from r.
func decodeOutput(r io.Reader, columns []string) ([]Record, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if bom, err := br.Peek(3); err == nil && string(bom) == "\ufeff" {
		br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("it is empty")
	}
	if err != nil {
		return nil, fmt.Errorf("its header: %w", err)
	}
	want := append(slices.Clone(columns), ExtraColumns...)
	if !slices.Equal(header, want) {
		return nil, fmt.Errorf("its header is %q, a fan-out output of this input has %q", textclip.Bytes(strings.Join(header, ","), 200+len(textclip.Ellipsis), textclip.Ellipsis), strings.Join(want, ","))
	}
	n := len(columns)
	var recs []Record
	for row := 0; ; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return recs, nil
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(want) {
			return nil, fmt.Errorf("line %d: %d fields, want %d", line, len(rec), len(want))
		}
		r := Record{Row: row, Values: rec[:n:n], Status: rec[n], Result: rec[n+1], Error: rec[n+2], ThreadID: rec[n+3]}
		if err := checkStatus(r.Status); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if r.Tokens, err = strconv.ParseInt(rec[n+4], 10, 64); err != nil || r.Tokens < 0 {
			return nil, fmt.Errorf("line %d: tokens %q is not a count", line, textclip.Bytes(rec[n+4], 40+len(textclip.Ellipsis), textclip.Ellipsis))
		}
		if r.Duration, err = strconv.ParseFloat(rec[n+5], 64); err != nil {
			return nil, fmt.Errorf("line %d: duration_s %q is not a number", line, textclip.Bytes(rec[n+5], 40+len(textclip.Ellipsis), textclip.Ellipsis))
		}
		if r.Status == StatusPending {
			continue
		}
		recs = append(recs, r)
	}
}

func checkStatus(s string) error {
	switch s {
	case StatusDone, StatusFailed, StatusPending:
		return nil
	}
	return fmt.Errorf("status %q is not done, failed or pending", textclip.Bytes(s, 40+len(textclip.Ellipsis), textclip.Ellipsis))
}

// decodeJournal reads a journal written for columns from r: a header
// line, then one record per line. A last line without its line break (cut
// by a crash while it was written) is ignored; any other bad line is an
// error naming it. It never panics.
func decodeJournal(r io.Reader, columns []string) ([]Record, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var recs []Record
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return recs, nil // b, if any, is a cut last line: never recorded
		}
		if err != nil {
			return nil, err
		}
		if line == 1 {
			var h journalHeader
			if err := json.Unmarshal(b, &h); err != nil || h.Version != journalVersion {
				return nil, errors.New("line 1 is not a batty fanout journal header")
			}
			if !slices.Equal(h.Columns, columns) {
				return nil, fmt.Errorf("it was written for the columns %q, not %q", textclip.Bytes(strings.Join(h.Columns, ","), 200+len(textclip.Ellipsis), textclip.Ellipsis), strings.Join(columns, ","))
			}
			continue
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if r.Row < 0 || len(r.Values) != len(columns) || r.Tokens < 0 {
			return nil, fmt.Errorf("line %d: not a row of this input", line)
		}
		if err := checkStatus(r.Status); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		recs = append(recs, r)
	}
}
