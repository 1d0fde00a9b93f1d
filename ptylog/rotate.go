package ptylog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/battyhq/batty/atomicfile"
)

// file is the part of *os.File the sink uses; tests wrap it to stall or fail.
type file interface {
	Write(p []byte) (int, error)
	Sync() error
	Close() error
	Stat() (os.FileInfo, error)
}

const openFlags = os.O_WRONLY | os.O_CREATE | os.O_APPEND

// sink appends lines to the transcript file and rotates it by size. It is
// used only by the Writer's goroutine (and by Open before that starts).
type sink struct {
	path string
	// dir is the transcript's directory, opened without following links;
	// every file operation is relative to it (owned: closed by close).
	dir      *atomicfile.Dir
	maxBytes int64
	keep     int
	openFile func(name string, flag int, perm os.FileMode) (file, error)
	rename   func(oldpath, newpath string) error

	f    file  // nil after a failure until the next successful reopen
	size int64 // bytes in the current file
	// rotateAt suppresses rotation attempts after a failed one until the
	// file has grown by another maxBytes.
	rotateAt int64
	// partial is set when a failed write left half a line in the file.
	partial bool
	buf     []byte
}

// open opens (or reopens) path for appending and records its size.
func (s *sink) open() error {
	open := s.openFile
	if open == nil {
		open = func(name string, flag int, perm os.FileMode) (file, error) {
			return s.dir.OpenFile(filepath.Base(name), flag, perm)
		}
	}
	f, err := open(s.path, openFlags, 0o600)
	if err != nil {
		return fmt.Errorf("open transcript %s: %w", s.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("stat transcript %s: %w", s.path, err)
	}
	s.f = f
	s.size = fi.Size()
	return nil
}

// write appends each line plus a newline, rotating before any line that
// would push the file past maxBytes. It returns how many lines could not be
// written and the first error met; it keeps going after an error.
func (s *sink) write(lines []string) (lost int, err error) {
	buf := s.buf[:0]
	inBuf := 0
	flush := func() {
		if inBuf == 0 {
			return
		}
		if werr := s.writeRaw(buf); werr != nil {
			lost += inBuf
			err = firstErr(err, werr)
		}
		buf = buf[:0]
		inBuf = 0
	}
	for _, l := range lines {
		n := int64(len(l) + 1)
		used := s.size + int64(len(buf))
		if used > 0 && used+n > s.maxBytes && used >= s.rotateAt {
			flush()
			err = firstErr(err, s.rotate())
		}
		buf = append(buf, l...)
		buf = append(buf, '\n')
		inBuf++
	}
	flush()
	if cap(buf) <= 64<<10 {
		s.buf = buf[:0]
	} else {
		s.buf = nil // do not pin a huge batch's memory
	}
	return lost, err
}

// firstErr keeps the first non-nil error.
func firstErr(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// writeRaw appends p to the file, reopening it first if a previous failure
// closed it.
func (s *sink) writeRaw(p []byte) error {
	if s.f == nil {
		if err := s.open(); err != nil {
			return err
		}
	}
	if s.partial {
		if _, err := s.f.Write([]byte{'\n'}); err != nil {
			return s.fail(fmt.Errorf("write transcript %s: %w", s.path, err))
		}
		s.size++
		s.partial = false
	}
	n, err := s.f.Write(p)
	s.size += int64(n)
	if err != nil {
		s.partial = n > 0 && n < len(p)
		return s.fail(fmt.Errorf("write transcript %s: %w", s.path, err))
	}
	return nil
}

// fail closes the file after an error so the next write reopens it.
func (s *sink) fail(err error) error {
	_ = s.f.Close()
	s.f = nil
	return err
}

// generation returns the name of rotated generation i (path.i).
func (s *sink) generation(i int) string {
	return s.path + "." + strconv.Itoa(i)
}

// rotate shifts path → path.1 → ... → path.keep, deletes older generations
// and opens a fresh file at path. If path cannot be renamed, it keeps
// appending to the current file so that no line is lost.
func (s *sink) rotate() error {
	rename := s.rename
	if rename == nil {
		rename = func(oldpath, newpath string) error {
			return s.dir.Rename(filepath.Base(oldpath), filepath.Base(newpath))
		}
	}
	remove := func(path string) error { return s.dir.Remove(filepath.Base(path)) }
	var errs []error
	if s.f != nil {
		errs = append(errs, s.f.Sync())
		errs = append(errs, s.f.Close())
		s.f = nil
	}
	if err := remove(s.generation(s.keep)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	for i := s.keep - 1; i >= 1; i-- {
		if err := rename(s.generation(i), s.generation(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := rename(s.path, s.generation(1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
		s.rotateAt = s.size + s.maxBytes
		if oerr := s.open(); oerr != nil {
			errs = append(errs, oerr)
		}
		return fmt.Errorf("rotate transcript %s: %w", s.path, errors.Join(errs...))
	}
	// Generations beyond keep, left by an earlier run with a larger Keep.
	for i := s.keep + 1; remove(s.generation(i)) == nil; i++ {
	}
	s.rotateAt = 0
	s.partial = false
	s.size = 0
	if err := s.open(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rotate transcript %s: %w", s.path, err)
	}
	return nil
}

// close syncs and closes the current file, if any, and the directory.
func (s *sink) close() error {
	derr := s.dir.Close()
	if s.f == nil {
		return derr
	}
	err := errors.Join(s.f.Sync(), s.f.Close(), derr)
	s.f = nil
	if err != nil {
		return fmt.Errorf("close transcript %s: %w", s.path, err)
	}
	return nil
}
