// Package logtail prints the end of a log file and follows it like
// `tail -F`: the last lines are found by reading the file backwards from
// its end in chunks (never the whole file), and new bytes are read from the
// offset reached, woken by fsnotify events on the file's directory (with a
// slow rescan as a safety net). It follows the writer's rotation (the file
// renamed to path.1, path.1 to path.2 ..., and a new file created at path):
// it finishes the old file, then moves to the next one, so no line is lost
// or printed twice. A truncated file is printed again from its start, and a
// file that does not exist yet is waited for.
//
// It is the reading side of the transcripts ptylog writes (`batty logs`),
// and refuses a file or directory that is a symbolic link.
package logtail

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/fsnotify/fsnotify"

	"github.com/battyhq/batty/atomicfile"
)

// File is an open log file as Tail reads it. *os.File implements it.
type File interface {
	io.ReaderAt
	Stat() (os.FileInfo, error)
	Close() error
}

// OpenFile opens path for reading without following a symbolic link at the
// file or its directory (atomicfile.OpenFile). It is the default Tail.Open.
func OpenFile(path string) (File, error) {
	f, err := atomicfile.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err // already names the path
	}
	return f, nil
}

// Tail prints, and follows, one log file. Set its fields, then call
// PrintLast or Follow once. A Tail is used by one goroutine at a time; it
// starts none of its own.
type Tail struct {
	// Path is the log file; its rotated generations are Path.1, Path.2 ...
	Path string
	// Label names the log in notices, e.g. "transcript for engineer-1".
	Label string
	// Out receives the log's bytes as they are.
	Out io.Writer
	// Notice receives notes for the person watching (missing file,
	// truncation), one line each; nil discards them.
	Notice io.Writer
	// DimNotices writes the notices dim (SGR 2), for a terminal: they are
	// asides, not the log.
	DimNotices bool
	// Open opens a file for reading; it returns an error satisfying
	// errors.Is(err, os.ErrNotExist) for a missing file. Default OpenFile;
	// tests count the bytes read through it.
	Open func(path string) (File, error)
	// HistoryDone, if set, is called once by Follow, on its goroutine, when
	// the last n lines are printed (or the file was found missing) and
	// before any line written later: what came before it is the history,
	// what comes after is new.
	HistoryDone func()

	f    File  // the file being followed, or nil
	off  int64 // bytes of f already printed
	last byte  // last byte printed, 0 before any
	buf  []byte

	w           *fsnotify.Watcher
	watched     string      // directory watched: the log's directory or its nearest existing ancestor
	watchedInfo os.FileInfo // to notice a watched directory that was replaced
}

// ErrNoFile is returned by PrintLast when the log file does not exist.
var ErrNoFile = errors.New("no log file")

// PrintLast prints the last n lines of the log file as far as it reaches
// now, reading only its end. It returns an error wrapping ErrNoFile when
// the file does not exist.
func (t *Tail) PrintLast(n int) error {
	f, err := t.openExisting(t.Path)
	if err != nil {
		return err
	}
	if f == nil {
		return fmt.Errorf("%w: %s", ErrNoFile, t.Path)
	}
	defer f.Close()
	return t.printTail(f, n)
}

// notef writes one notice line.
func (t *Tail) notef(format string, args ...any) {
	if t.Notice == nil {
		return
	}
	if t.DimNotices {
		fmt.Fprintf(t.Notice, "\x1b[2m"+format+"\x1b[0m\n", args...)
		return
	}
	fmt.Fprintf(t.Notice, format+"\n", args...)
}

// printTail prints the last n lines of f, as far as f reaches now.
func (t *Tail) printTail(f File, n int) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", t.Path, err)
	}
	size := st.Size()
	start, err := LastLines(f, size, n)
	if err != nil {
		return fmt.Errorf("read %s: %w", t.Path, err)
	}
	return t.emit(f, start, size)
}

// chunkSize is how much LastLines reads at a time, backwards from the end.
const chunkSize = 64 << 10

// LastLines returns the offset at which the last n lines of the first size
// bytes of r start, reading r backwards from size in chunks of 64 KiB: it
// reads only as much as those lines span, rounded up to a chunk. A final
// line without a newline counts as a line.
func LastLines(r io.ReaderAt, size int64, n int) (int64, error) {
	if n <= 0 || size <= 0 {
		return max(size, 0), nil
	}
	buf := make([]byte, min(chunkSize, size))
	found := 0
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		chunk := buf[:end-start]
		if _, err := r.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' || start+int64(i) == size-1 {
				continue // not a line break, or the one ending the last line
			}
			if found++; found == n {
				return start + int64(i) + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}

// emit prints bytes [from, to) of f, or to its end when to is negative,
// and records how far it got in off.
func (t *Tail) emit(f File, from, to int64) error {
	if t.buf == nil {
		t.buf = make([]byte, 32<<10)
	}
	for to < 0 || from < to {
		chunk := t.buf
		if to >= 0 && to-from < int64(len(chunk)) {
			chunk = chunk[:to-from]
		}
		n, err := f.ReadAt(chunk, from)
		if n > 0 {
			if _, werr := t.Out.Write(chunk[:n]); werr != nil {
				return fmt.Errorf("write %s: %w", t.Label, werr)
			}
			t.last = chunk[n-1]
			from += int64(n)
			t.off = from
		}
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", t.Path, err)
		}
	}
	return nil
}

// open opens path with t.Open, or OpenFile.
func (t *Tail) open(path string) (File, error) {
	if t.Open != nil {
		return t.Open(path)
	}
	return OpenFile(path)
}

// openExisting opens path for reading; it returns nil when path does not
// exist.
func (t *Tail) openExisting(path string) (File, error) {
	f, err := t.open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", t.Label, err)
	}
	return f, nil
}

// generation returns the name of rotated generation i (Path.i; Path for 0).
func (t *Tail) generation(i int) string {
	if i == 0 {
		return t.Path
	}
	return t.Path + "." + strconv.Itoa(i)
}

// endLine finishes a partial last line before output from another file.
func (t *Tail) endLine() {
	if t.last != 0 && t.last != '\n' {
		if _, err := t.Out.Write([]byte{'\n'}); err == nil {
			t.last = '\n'
		}
	}
}
