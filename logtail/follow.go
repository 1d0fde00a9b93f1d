package logtail

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultRescan is how often Follow looks at the file even without a file
// system event: a safety net for missed or overflowed events, not the way
// new lines are normally noticed.
const DefaultRescan = 5 * time.Second

// maxGenerations bounds the rotated generations (Path.1 ... Path.N) looked
// at.
const maxGenerations = 100

// Follow prints the last n lines, then every byte written later, until ctx
// is done (it then returns nil). File system events on the log's directory
// wake it; a look every rescan (DefaultRescan when not positive) is the
// safety net. It follows rotations, truncation, and a file that does not
// exist yet (saying so on Notice). It blocks; the watcher it creates is
// closed when it returns.
func (t *Tail) Follow(ctx context.Context, n int, rescan time.Duration) error {
	if rescan <= 0 {
		rescan = DefaultRescan
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("follow %s: %w", t.Label, err)
	}
	defer w.Close()
	t.w = w
	defer func() {
		if t.f != nil {
			t.f.Close()
			t.f = nil
		}
	}()
	// Watch first, then look: whatever happens after the look is an event.
	if err := t.arm(); err != nil {
		return err
	}
	f, err := t.openExisting(t.Path)
	switch {
	case err != nil:
		return err
	case f == nil:
		t.notef("batty: no %s yet; waiting", t.Label)
	default:
		t.f = f
		if err := t.printTail(f, n); err != nil {
			return err
		}
	}
	if t.HistoryDone != nil {
		t.HistoryDone()
	}
	if err := t.poll(); err != nil {
		return err
	}
	safety := time.NewTicker(rescan)
	defer safety.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return fmt.Errorf("follow %s: file system watcher closed", t.Label)
			}
			if !t.relevant(ev) {
				continue
			}
		case err, ok := <-w.Errors:
			if !ok {
				return fmt.Errorf("follow %s: file system watcher closed", t.Label)
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				return fmt.Errorf("follow %s: watching %s: %w", t.Label, t.watched, err)
			}
		case <-safety.C:
		}
		if err := t.poll(); err != nil {
			return err
		}
	}
}

// relevant reports whether ev may concern the log: any event while an
// ancestor of its directory is watched, else events on the file, its first
// rotated generation or the directory itself. Events of other files in the
// directory (the other agents' transcripts) wake nothing.
func (t *Tail) relevant(ev fsnotify.Event) bool {
	if t.watched != filepath.Dir(t.Path) {
		return true
	}
	switch ev.Name {
	case t.Path, t.Path + ".1", t.watched:
		return true
	}
	return false
}

// arm points the watch at the log's directory, or at its nearest existing
// ancestor while it does not exist, and re-adds it when the directory was
// replaced. It looks again after every change of watch: a directory created
// between the look and the new watch made no event.
func (t *Tail) arm() error {
	for range 100 {
		dir, st, err := nearestDir(filepath.Dir(t.Path))
		if err != nil {
			return fmt.Errorf("follow %s: %w", t.Label, err)
		}
		if dir == t.watched && os.SameFile(st, t.watchedInfo) {
			return nil
		}
		if t.watched != "" {
			_ = t.w.Remove(t.watched) // fails when the directory is gone, which is fine
			t.watched, t.watchedInfo = "", nil
		}
		if err := t.w.Add(dir); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // removed meanwhile
			}
			return fmt.Errorf("follow %s: watch %s: %w", t.Label, dir, err)
		}
		t.watched, t.watchedInfo = dir, st
	}
	return fmt.Errorf("follow %s: the directories above %s keep changing", t.Label, t.Path)
}

// nearestDir returns dir, or its nearest ancestor that exists, and its
// file info.
func nearestDir(dir string) (string, os.FileInfo, error) {
	for {
		st, err := os.Stat(dir)
		if err == nil && st.IsDir() {
			return dir, st, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", nil, err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil, fmt.Errorf("no directory of %s exists", dir)
		}
		dir = parent
	}
}

// poll prints what was appended to the file followed and moves on to the
// newer files when it was rotated, replaced or created. It reads from the
// offset reached, never the whole file again (but for a truncated one).
func (t *Tail) poll() error {
	if err := t.arm(); err != nil {
		return err
	}
	for range maxGenerations + 2 {
		if t.f != nil {
			if err := t.emit(t.f, t.off, -1); err != nil {
				return err
			}
			if st, err := t.f.Stat(); err == nil && st.Size() < t.off {
				t.notef("batty: %s was truncated; printing it from the start", t.Label)
				t.endLine()
				if err := t.emit(t.f, 0, -1); err != nil {
					return err
				}
			}
		}
		next, err := t.next()
		if err != nil || next == nil {
			return err
		}
		if t.f != nil {
			// The writer closes a file before it renames it, so this read,
			// after the rename was seen, gets its last lines.
			err := t.emit(t.f, t.off, -1)
			t.f.Close()
			if err != nil {
				next.Close()
				t.f = nil
				return err
			}
			t.endLine()
		}
		t.f, t.off = next, 0
	}
	return nil // more at the next wake-up
}

// next opens the file written after the one followed so far, or returns nil
// when that is the newest (or there is none yet).
//
// After a rotation the followed file is Path.k and the next one Path.k-1
// (Path itself for k = 1); with a fast writer several rotations can happen
// between two wake-ups, and going one file at a time prints them all. When
// the followed file is not among the generations (removed, or rotated out of
// reach), the next one is the log itself.
func (t *Tail) next() (File, error) {
	if t.f == nil {
		return t.openExisting(t.Path)
	}
	cur, err := t.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", t.Label, err)
	}
	// A rotation while looking shifts the names; look again then.
	for range 10 {
		var newer os.FileInfo // the generation before the one looked at
		found := false
		for i := 0; i <= maxGenerations; i++ {
			st, err := os.Stat(t.generation(i))
			if err != nil {
				if i == 0 {
					return nil, nil // rotated or removed, and not recreated yet
				}
				break
			}
			if !os.SameFile(st, cur) {
				newer = st
				continue
			}
			if i == 0 {
				return nil, nil // still the newest
			}
			f, err := t.openExisting(t.generation(i - 1))
			if err != nil || f == nil {
				return f, err
			}
			if fst, err := f.Stat(); err == nil && os.SameFile(fst, newer) {
				return f, nil
			}
			f.Close()
			found = true
			break
		}
		if !found {
			return t.openExisting(t.Path)
		}
	}
	return t.openExisting(t.Path)
}
