package ptylog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/atomicfile/linktest"
)

// writeSome opens path, writes a line and closes, returning Open's error.
func writeSome(path string, opts Options) error {
	w, err := Open(path, opts)
	if err != nil {
		return err
	}
	w.Notice("secret message text")
	return w.Close()
}

func TestOpenRefusesSymlinkedTranscript(t *testing.T) {
	out, victim := linktest.Outside(t)
	path := filepath.Join(t.TempDir(), "logs", "a.log")
	if err := os.Mkdir(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	err := writeSome(path, Options{})
	if !errors.Is(err, atomicfile.ErrSymlink) {
		t.Errorf("Open = %v; want a refusal of the link", err)
	}
	linktest.AssertUntouched(t, out, victim)
}

func TestOpenRefusesSymlinkedDirectories(t *testing.T) {
	for _, linked := range []string{".batty", ".batty/logs"} {
		t.Run(linked, func(t *testing.T) {
			out, victim := linktest.Outside(t)
			project := t.TempDir()
			if err := os.MkdirAll(filepath.Join(project, filepath.Dir(linked)), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(out, filepath.Join(project, linked)); err != nil {
				t.Fatal(err)
			}
			err := writeSome(filepath.Join(project, ".batty", "logs", "a.log"), Options{Root: project})
			if !errors.Is(err, atomicfile.ErrSymlink) {
				t.Errorf("Open = %v; want a refusal of the link", err)
			}
			linktest.AssertUntouched(t, out, victim)
		})
	}
}

// A link swapped in for the transcript directory after Open does not
// redirect the rotated files: every operation is relative to the directory
// Open checked.
func TestRotationDoesNotFollowSwappedDirectory(t *testing.T) {
	out, victim := linktest.Outside(t)
	project := t.TempDir()
	logs := filepath.Join(project, ".batty", "logs")
	path := filepath.Join(logs, "a.log")
	w, err := Open(path, Options{Root: project, MaxBytes: 200, Keep: 2, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	w.Notice("before the swap")
	if err := os.Rename(logs, logs+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, logs); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		w.Notice(fmt.Sprintf("secret line %02d", i))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	linktest.AssertUntouched(t, out, victim)
	if got := len(readLines(t, filepath.Join(logs+".real", "a.log"))); got == 0 {
		t.Error("nothing written to the real transcript directory")
	}
}

// A link planted at the transcript's name while the Writer runs is refused
// at the reopen after rotation (reported, lines dropped), never written
// through.
func TestReopenRefusesPlantedLink(t *testing.T) {
	out, victim := linktest.Outside(t)
	var reports atomic.Int32
	var lastErr atomic.Value
	opts := Options{MaxBytes: 200, Keep: 2, Now: fixedNow, OnError: func(err error) { reports.Add(1); lastErr.Store(err) }}
	// The rename of path to path.1 is where the planter strikes: right
	// after it, a link takes the transcript's name.
	var path string
	opts.hooks.rename = func(oldpath, newpath string) error {
		if err := os.Rename(oldpath, newpath); err != nil {
			return err
		}
		if oldpath == path {
			return os.Symlink(victim, path)
		}
		return nil
	}
	w, p := openTest(t, opts)
	path = p
	for i := range 20 {
		w.Notice(fmt.Sprintf("secret line %02d", i))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	linktest.AssertUntouched(t, out, victim)
	if reports.Load() == 0 || !errors.Is(lastErr.Load().(error), atomicfile.ErrSymlink) {
		t.Errorf("OnError saw %d reports, last %v; want the link refused", reports.Load(), lastErr.Load())
	}
	if w.Dropped() == 0 {
		t.Error("no lines counted as dropped")
	}
}
