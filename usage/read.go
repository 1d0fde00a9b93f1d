package usage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/project"
)

// Skip is a line of the ledger that was not read: its file, its line
// number (1-based) and why.
type Skip struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

func (s Skip) String() string { return fmt.Sprintf("%s:%d: %s", s.File, s.Line, s.Reason) }

// Data is what the ledger holds in a time range: the turns (each key
// once, the first line of it) and the rate-limit samples, in the order
// they were written, and the lines skipped.
type Data struct {
	Turns  []Turn
	Limits []LimitSample
	Skips  []Skip
	// Duplicates counts the lines of a turn already read (a write whose
	// fsync failed and was tried again), counted once.
	Duplicates int
}

// Read reads the ledger of the project in l: the entries whose time is in
// [since, until) (a zero bound is none). It needs no daemon and takes no
// lock: the ledger is append-only, and a line being written as it is read
// is reported as cut. A ledger that does not exist yet is empty.
func Read(l project.Layout, since, until time.Time) (Data, error) {
	dir, err := l.OpenDir(project.UsageName, false)
	if errors.Is(err, fs.ErrNotExist) {
		return Data{}, nil
	}
	if err != nil {
		return Data{}, fmt.Errorf("open usage ledger: %w", err)
	}
	defer dir.Close()
	return readDir(dir, since, until)
}

func readDir(dir *atomicfile.Dir, since, until time.Time) (Data, error) {
	var d Data
	in := func(t time.Time) bool {
		return (since.IsZero() || !t.Before(since)) && (until.IsZero() || t.Before(until))
	}
	seen := map[string]bool{}
	err := eachLine(dir, turnsPrefix, &d.Skips, func(line []byte) error {
		t, err := DecodeTurn(line)
		if err != nil {
			return err
		}
		if seen[t.Key] {
			d.Duplicates++
			return nil
		}
		seen[t.Key] = true
		if in(t.At) {
			d.Turns = append(d.Turns, t)
		}
		return nil
	})
	if err != nil {
		return Data{}, err
	}
	err = eachLine(dir, limitsPrefix, &d.Skips, func(line []byte) error {
		s, err := DecodeLimit(line)
		if err == nil && in(s.At) {
			d.Limits = append(d.Limits, s)
		}
		return err
	})
	if err != nil {
		return Data{}, err
	}
	return d, nil
}

// eachLine passes every line of the family's segments, oldest first, to
// f; a line f refuses, too long, or cut (no line break: being written, or
// cut by a crash) is added to skips. A segment removed meanwhile (the
// oldest, by the writer) is passed over.
func eachLine(dir *atomicfile.Dir, prefix string, skips *[]Skip, f func([]byte) error) error {
	seqs, err := list(dir, prefix)
	if err != nil {
		return fmt.Errorf("usage ledger: %w", err)
	}
	for _, seq := range seqs {
		name := segmentName(prefix, seq)
		file, err := dir.OpenFile(name, os.O_RDONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("usage ledger: %w", err)
		}
		err = linesOf(file, func(n int, line []byte, problem string) {
			if problem == "" {
				if err := f(line); err != nil {
					problem = err.Error()
				}
			}
			if problem != "" {
				*skips = append(*skips, Skip{File: name, Line: n, Reason: problem})
			}
		})
		file.Close()
		if err != nil {
			return fmt.Errorf("read usage ledger %s: %w", name, err)
		}
	}
	return nil
}

// linesOf passes each line of r to f with its number, or the problem that
// keeps it from being read ("" when none). It holds at most MaxLine bytes
// of a line.
func linesOf(r io.Reader, f func(n int, line []byte, problem string)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	long := false
	for n := 1; ; {
		chunk, err := br.ReadSlice('\n')
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
			if long {
				f(n, nil, fmt.Sprintf("cut line over %d bytes", MaxLine))
			} else if len(buf) > 0 {
				f(n, nil, "cut last line (no line break: being written, or cut by a crash)")
			}
			return nil
		case err != nil:
			return err
		}
		if long {
			f(n, nil, fmt.Sprintf("line over %d bytes", MaxLine))
		} else {
			f(n, slices.Clone(buf[:len(buf)-1]), "")
		}
		buf, long = buf[:0], false
		n++
	}
}
