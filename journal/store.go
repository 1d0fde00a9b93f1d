package journal

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/project"
)

// DirName is the journal's directory in the state directory.
const DirName = "journal"

// ext ends a journal's file name: <agent>.jsonl.
const ext = ".jsonl"

// FileName is the name of agent's journal in DirName.
func FileName(agent string) string { return agent + ext }

// AgentOf is the agent whose journal file name is, false when name is not
// a journal's. Pure.
func AgentOf(name string) (string, bool) {
	a, ok := strings.CutSuffix(name, ext)
	return a, ok && ValidAgent(a)
}

// Append writes r as one line at the end of its agent's journal
// (<state>/journal/<agent>.jsonl, made 0600 in a 0700 directory when
// missing, never through a symbolic link) and makes it durable (fsync)
// before it returns; it returns the line's offset and length (its line
// break not counted). A last line cut short by a crash is ended first, so
// the new line starts a line of its own. Appends to one journal are
// serialised by a lock on its file (flock), so any goroutine or process
// may call it, though only the daemon does.
//
// The daemon calls it once per turn that ran, as the turn's end reaches
// it (with the commit its edits made), before the outcome is recorded.
func Append(l project.Layout, r Record) (offset, length int64, err error) {
	line, err := Encode(r)
	if err != nil {
		return 0, 0, err
	}
	d, err := l.OpenDir(DirName, true)
	if err != nil {
		return 0, 0, fmt.Errorf("open the turn journal: %w", err)
	}
	defer d.Close()
	name := FileName(r.Agent)
	f, err := d.OpenFile(name, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o600)
	if err != nil {
		return 0, 0, fmt.Errorf("open the turn journal: %w", err)
	}
	defer f.Close()
	if err := flock(f); err != nil {
		return 0, 0, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	st, err := f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	size := st.Size()
	buf := make([]byte, 0, len(line)+2)
	if size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			return 0, 0, fmt.Errorf("read the end of %s: %w", f.Name(), err)
		}
		if last[0] != '\n' {
			buf = append(buf, '\n')
		}
	}
	offset = size + int64(len(buf))
	buf = append(append(buf, line...), '\n')
	if _, err := f.Write(buf); err != nil {
		return 0, 0, fmt.Errorf("append to %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return 0, 0, fmt.Errorf("sync %s: %w", f.Name(), err)
	}
	if size == 0 {
		if err := d.Sync(); err != nil {
			return 0, 0, fmt.Errorf("sync %s: %w", d.Path(), err)
		}
	}
	return offset, int64(len(line)), nil
}

// flock takes f's exclusive lock, released when f is closed.
func flock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// Skip is a line that was not read: its file, where it starts and why.
type Skip struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Reason string `json:"reason"`
}

func (s Skip) String() string { return fmt.Sprintf("%s@%d: %s", s.File, s.Offset, s.Reason) }

// Dir is the project's journal directory opened for reading, nil-safe:
// a project without a journal yet reads as empty.
type Dir struct{ d *atomicfile.Dir }

// Open opens the journal directory of the project in l for reading,
// never through a symbolic link. A missing one is empty.
func Open(l project.Layout) (*Dir, error) {
	d, err := l.OpenDir(DirName, false)
	if errors.Is(err, fs.ErrNotExist) {
		return &Dir{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the turn journal: %w", err)
	}
	return &Dir{d: d}, nil
}

// Close closes the directory.
func (j *Dir) Close() error {
	if j.d == nil {
		return nil
	}
	return j.d.Close()
}

// Path is the directory's path ("" when there is none).
func (j *Dir) Path() string {
	if j.d == nil {
		return ""
	}
	return j.d.Path()
}

// Agents lists the agents that have a journal, sorted.
func (j *Dir) Agents() ([]string, error) {
	if j.d == nil {
		return nil, nil
	}
	names, err := j.d.Names()
	if err != nil {
		return nil, fmt.Errorf("list the turn journal: %w", err)
	}
	var agents []string
	for _, n := range names {
		if a, ok := AgentOf(n); ok {
			agents = append(agents, a)
		}
	}
	slices.Sort(agents)
	return agents, nil
}

// File is one agent's journal opened for reading.
type File struct {
	f    *os.File
	Name string
	// Ino and Size identify what was opened: the file's inode and its
	// size when opened.
	Ino  uint64
	Size int64
}

// OpenFile opens agent's journal for reading; fs.ErrNotExist when it has
// none.
func (j *Dir) OpenFile(agent string) (*File, error) {
	if j.d == nil {
		return nil, fs.ErrNotExist
	}
	if !ValidAgent(agent) {
		return nil, fmt.Errorf("%q is not an agent's name: %w", agent, fs.ErrNotExist)
	}
	f, err := j.d.OpenFile(FileName(agent), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	return &File{f: f, Name: FileName(agent), Ino: st.Ino, Size: st.Size}, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// ReadAt reads and decodes the line at offset of length bytes (its line
// break not counted), checking that the line ends there.
func (f *File) ReadAt(offset, length int64) (Record, error) {
	if offset < 0 || length <= 0 || length > MaxLine {
		return Record{}, fmt.Errorf("%s: no line at %d+%d", f.Name, offset, length)
	}
	b := make([]byte, length+1)
	if _, err := f.f.ReadAt(b, offset); err != nil {
		return Record{}, fmt.Errorf("%s: read the line at %d: %w", f.Name, offset, err)
	}
	if b[length] != '\n' || (offset > 0 && !f.lineStart(offset)) {
		return Record{}, fmt.Errorf("%s: no line at %d+%d", f.Name, offset, length)
	}
	return Decode(b[:length])
}

// lineStart reports whether offset starts a line (the byte before it is a
// line break).
func (f *File) lineStart(offset int64) bool {
	b := make([]byte, 1)
	_, err := f.f.ReadAt(b, offset-1)
	return err == nil && b[0] == '\n'
}

// Head is up to n bytes of the file's start, to recognise it again.
func (f *File) Head(n int) ([]byte, error) {
	b := make([]byte, n)
	k, err := f.f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", f.Name, err)
	}
	return b[:k], nil
}

// Scan passes every whole line from offset from up to the size the file
// had when opened to fn, decoded, with its offset and length; a line that
// does not decode is passed to skip. A last line without its line break
// (being written, or cut by a crash) is not passed: Scan returns the
// offset where it starts, the end of what was read whole.
func (f *File) Scan(from int64, fn func(off, length int64, r Record) error, skip func(Skip)) (end int64, err error) {
	return f.ScanWhere(from, nil, fn, skip)
}

// ScanWhere is Scan that decodes only the lines keep accepts (keep sees
// the line as it is in the file, without its line break; nil keeps every
// line): a lookup by an id that the line must hold verbatim (a message
// id, a commit's SHA) skips the cost of decoding the others. A line keep
// refuses is neither passed nor skipped.
func (f *File) ScanWhere(from int64, keep func(line []byte) bool, fn func(off, length int64, r Record) error, skip func(Skip)) (end int64, err error) {
	if from < 0 || from > f.Size {
		return from, fmt.Errorf("%s: scan from %d, the file has %d bytes", f.Name, from, f.Size)
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f.f, from, f.Size-from), 256<<10)
	off, consumed := from, from
	var buf []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		consumed += int64(len(chunk))
		if !long {
			buf = append(buf, chunk...)
			if len(buf) > MaxLine+1 {
				long, buf = true, buf[:0]
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return off, nil
		case err != nil:
			return off, fmt.Errorf("read %s: %w", f.Name, err)
		}
		switch n := int64(len(buf)) - 1; {
		case long:
			skip(Skip{File: f.Name, Offset: off, Reason: fmt.Sprintf("line over %d bytes", MaxLine)})
		case n == 0:
			// An empty line: a cut line's end written after it.
		case keep != nil && !keep(buf[:n]):
		default:
			r, derr := Decode(buf[:n])
			if derr != nil {
				skip(Skip{File: f.Name, Offset: off, Reason: derr.Error()})
			} else if err := fn(off, n, r); err != nil {
				return off, err
			}
		}
		off = consumed
		buf, long = buf[:0], false
	}
}

// Read reads agent's whole journal: its records in the order written and
// the lines skipped. An agent without a journal has none.
func (j *Dir) Read(agent string) ([]Record, []Skip, error) {
	f, err := j.OpenFile(agent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var recs []Record
	var skips []Skip
	end, err := f.Scan(0, func(_, _ int64, r Record) error {
		recs = append(recs, r)
		return nil
	}, func(s Skip) { skips = append(skips, s) })
	if err != nil {
		return nil, nil, err
	}
	if end < f.Size {
		skips = append(skips, Skip{File: f.Name, Offset: end, Reason: "cut last line (no line break: being written, or cut by a crash)"})
	}
	return recs, skips, nil
}
