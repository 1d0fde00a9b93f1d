package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/orchestrator"
)

// defaultRescan is how often `batty logs -f` checks the transcript even
// without a file system event: a safety net for missed or overflowed
// events, not the way new lines are normally noticed.
const defaultRescan = 5 * time.Second

// newLogsCmd returns `batty logs`: print or follow an agent's transcript.
func newLogsCmd() *cobra.Command {
	var (
		teamFile string
		lines    int
		follow   bool
		rescan   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "logs <agent> [-f] [-n N] [--team TEAMFILE]",
		Short: "Print an agent's transcript; -f follows it",
		Long: `logs prints the last lines of an agent's transcript (.batty/logs/<agent>.log).
With -f (--follow) it keeps printing new lines as they are written, like
` + "`tail -F`" + `: it follows the transcript across rotations (the file renamed to
<agent>.log.1 and recreated) and waits for a transcript that does not exist
yet. It runs until interrupted.

Note: in this command -f means --follow; name the team file with --team.`,
		Example: `  batty logs engineer-1
  batty logs -f -n 200 manager
  batty logs --team ~/proj/team.yaml -f architect`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lines < 0 {
				return usageError(cmd, "-n must not be negative, got %d", lines)
			}
			if rescan <= 0 {
				return usageError(cmd, "--rescan must be positive, got %s", rescan)
			}
			p, cfg, err := loadTeamProject(teamFile)
			if err != nil {
				return err
			}
			agent := args[0]
			if _, ok := cfg.Agent(agent); !ok {
				return unknownAgentError(cfg, agent)
			}
			t := &transcriptTail{
				agent:  agent,
				path:   p.Layout.Transcript(agent),
				out:    cmd.OutOrStdout(),
				notice: cmd.ErrOrStderr(),
			}
			if !follow {
				return t.printLast(lines)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return t.follow(ctx, lines, rescan)
		},
	}
	cmd.Flags().StringVar(&teamFile, "team", "", "team file (default ./team.yaml or ./.batty/team.yaml, or the team of $"+orchestrator.EnvDir+"); -f means --follow here")
	cmd.Flags().IntVarP(&lines, "lines", "n", 50, "print the last N lines")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until interrupted")
	cmd.Flags().DurationVar(&rescan, "rescan", defaultRescan, "with -f, check the transcript this often even without file system events")
	_ = cmd.Flags().MarkHidden("rescan")
	return withUsageExit(cmd)
}

// transcriptTail prints, and follows, one agent's transcript.
type transcriptTail struct {
	agent  string
	path   string
	out    io.Writer
	notice io.Writer // stderr: notes for the person watching

	f    *os.File // the transcript being followed, or nil
	off  int64    // bytes of f already printed
	last byte     // last byte printed, 0 before any
	buf  []byte

	w           *fsnotify.Watcher
	watched     string      // directory watched: the logs directory or its nearest existing ancestor
	watchedInfo os.FileInfo // to notice a watched directory that was replaced
}

// printLast prints the last n lines of the transcript, or says there is none.
func (t *transcriptTail) printLast(n int) error {
	f, err := atomicfile.OpenFile(t.path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(t.notice, "batty: no transcript for %s yet (%s)\n", t.agent, t.path)
		return nil
	}
	if err != nil {
		return fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	return t.printTail(f, n)
}

// printTail prints the last n lines of f, as far as f reaches now.
func (t *transcriptTail) printTail(f *os.File, n int) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat transcript: %w", err)
	}
	size := st.Size()
	start, err := tailStart(f, size, n)
	if err != nil {
		return fmt.Errorf("read transcript %s: %w", f.Name(), err)
	}
	return t.emit(f, start, size)
}

// tailStart returns the offset at which the last n lines of the first size
// bytes of r start. A final line without a newline counts as a line.
func tailStart(r io.ReaderAt, size int64, n int) (int64, error) {
	if n <= 0 || size <= 0 {
		return max(size, 0), nil
	}
	buf := make([]byte, 64<<10)
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
func (t *transcriptTail) emit(f *os.File, from, to int64) error {
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
			if _, werr := t.out.Write(chunk[:n]); werr != nil {
				return fmt.Errorf("write transcript: %w", werr)
			}
			t.last = chunk[n-1]
			from += int64(n)
			t.off = from
		}
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read transcript %s: %w", f.Name(), err)
		}
	}
	return nil
}

// follow prints the last n lines, then every line written later, until ctx
// is done. File system events on the transcript's directory wake it; a
// timer every rescan is the safety net.
func (t *transcriptTail) follow(ctx context.Context, n int, rescan time.Duration) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("follow transcript: %w", err)
	}
	defer w.Close()
	t.w = w
	defer func() {
		if t.f != nil {
			t.f.Close()
		}
	}()
	// Watch first, then look: whatever happens after the look is an event.
	if err := t.arm(); err != nil {
		return err
	}
	f, err := atomicfile.OpenFile(t.path, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(t.notice, "batty: no transcript for %s yet; waiting for %s\n", t.agent, t.path)
	case err != nil:
		return fmt.Errorf("open transcript: %w", err)
	default:
		t.f = f
		if err := t.printTail(f, n); err != nil {
			return err
		}
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
				return errors.New("follow transcript: file system watcher closed")
			}
			if !t.relevant(ev) {
				continue
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("follow transcript: file system watcher closed")
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				return fmt.Errorf("follow transcript: watching %s: %w", t.watched, err)
			}
		case <-safety.C:
		}
		if err := t.poll(); err != nil {
			return err
		}
	}
}

// relevant reports whether ev may concern the transcript: any event while
// an ancestor of the logs directory is watched, else events on the
// transcript, its first rotated generation or the directory itself.
func (t *transcriptTail) relevant(ev fsnotify.Event) bool {
	if t.watched != filepath.Dir(t.path) {
		return true
	}
	switch ev.Name {
	case t.path, t.path + ".1", t.watched:
		return true
	}
	return false
}

// arm points the watch at the transcript's directory, or at its nearest
// existing ancestor while it does not exist, and re-adds it when the
// directory was replaced. It looks again after every change of watch: a
// directory created between the look and the new watch made no event.
func (t *transcriptTail) arm() error {
	for range 100 {
		dir, st, err := nearestDir(filepath.Dir(t.path))
		if err != nil {
			return fmt.Errorf("follow transcript: %w", err)
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
			return fmt.Errorf("follow transcript: watch %s: %w", dir, err)
		}
		t.watched, t.watchedInfo = dir, st
	}
	return fmt.Errorf("follow transcript: the directories above %s keep changing", t.path)
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

// poll prints what was appended to the transcript and moves on to the
// newer files when it was rotated, replaced or created.
func (t *transcriptTail) poll() error {
	if err := t.arm(); err != nil {
		return err
	}
	for range maxGenerations + 2 {
		if t.f != nil {
			if err := t.emit(t.f, t.off, -1); err != nil {
				return err
			}
			if st, err := t.f.Stat(); err == nil && st.Size() < t.off {
				fmt.Fprintf(t.notice, "batty: %s was truncated; printing it from the start\n", t.path)
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

// maxGenerations bounds the rotated generations (path.1 ... path.N) looked
// at.
const maxGenerations = 100

// next opens the file written after the one followed so far, or returns nil
// when that is the newest (or there is none yet).
//
// After a rotation the followed file is path.k and the next one path.k-1
// (path itself for k = 1); with a fast writer several rotations can happen
// between two wake-ups, and going one file at a time prints them all. When
// the followed file is not among the generations (removed, or rotated out of
// reach), the next one is the transcript itself.
func (t *transcriptTail) next() (*os.File, error) {
	if t.f == nil {
		return openExisting(t.path)
	}
	cur, err := t.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("follow transcript: %w", err)
	}
	name := func(i int) string {
		if i == 0 {
			return t.path
		}
		return t.path + "." + strconv.Itoa(i)
	}
	// A rotation while looking shifts the names; look again then.
	for range 10 {
		var newer os.FileInfo // the generation before the one looked at
		found := false
		for i := 0; i <= maxGenerations; i++ {
			st, err := os.Stat(name(i))
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
			f, err := openExisting(name(i - 1))
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
			return openExisting(t.path)
		}
	}
	return openExisting(t.path)
}

// openExisting opens path for reading; it returns nil when path does not
// exist. A transcript or logs directory that is a symbolic link is refused.
func openExisting(path string) (*os.File, error) {
	f, err := atomicfile.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open transcript: %w", err)
	}
	return f, nil
}

// endLine finishes a partial last line before output from another file.
func (t *transcriptTail) endLine() {
	if t.last != 0 && t.last != '\n' {
		if _, err := t.out.Write([]byte{'\n'}); err == nil {
			t.last = '\n'
		}
	}
}
