package inbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/battyhq/batty/atomicfile"
)

// Texts too long for a message file — a reply to the human, an agent's
// answer in its done/ record — are kept whole in the box's texts/
// directory, next to the message that names them:
//
//	<box>/texts/<id>.body    the whole body of <box>/*/<id>.json
//	<box>/texts/<id>.reply   the whole reply of its outcome in done/
//
// A text file is written durably (temporary file in tmp/, fsync, rename,
// fsync of texts/) before the message file that names it, so a message
// never names a text file that is not there; a crash in between leaves
// only a text file that no message names, which the next write for that id
// replaces. Text files are 0600 and never read or written through a
// symbolic link.

// Subdirectory of a box that holds texts, and their extensions.
const (
	dirTexts = "texts"
	bodyExt  = "body"
	replyExt = "reply"
)

// textFile is the name of a text file relative to the box directory.
func textFile(id, ext string) string { return dirTexts + "/" + id + "." + ext }

// preview is the first PreviewLen bytes of s, cut at a UTF-8 boundary.
func preview(s string) string {
	n := PreviewLen
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// textsDir creates texts/ if missing and checks that it is a real
// directory, not a link.
func (b *Box) textsDir() (string, error) {
	dir := b.path(dirTexts)
	if err := atomicfile.MkdirAll(dir); err != nil {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory (%v)", dir, fi.Mode().Type())
	}
	return dir, nil
}

// writeText stores text as texts/<id>.<ext>, replacing a file of that name,
// atomically and durably. text is written from its own memory, not copied.
func (b *Box) writeText(id, ext, text string) (err error) {
	dir, err := b.textsDir()
	if err != nil {
		return fmt.Errorf("write %s text of %s: %w", ext, id, err)
	}
	path := filepath.Join(b.Dir, textFile(id, ext))
	f, err := os.CreateTemp(b.path(dirTmp), "."+id+"."+ext+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.WriteString(text); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// rename(2) replaces a link at path itself, never its target.
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readText returns the content of the text file rel (relative to the box
// directory), which must be a regular file of size bytes holding UTF-8.
func (b *Box) readText(rel string, size int64) (string, error) {
	path := filepath.Join(b.Dir, filepath.FromSlash(rel))
	if fi, err := os.Lstat(b.path(dirTexts)); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("read %s: %s is not a directory (%v)", path, b.path(dirTexts), fi.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
			return "", fmt.Errorf("read %s: not a regular file (%v)", path, fi.Mode().Type())
		}
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("read %s: not a regular file (%v)", path, fi.Mode().Type())
	}
	if fi.Size() != size {
		return "", fmt.Errorf("read %s: %d bytes, the message says %d", path, fi.Size(), size)
	}
	var sb strings.Builder
	sb.Grow(int(size))
	n, err := io.Copy(&sb, io.LimitReader(f, size+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if n != size {
		return "", fmt.Errorf("read %s: %d bytes, the message says %d", path, n, size)
	}
	s := sb.String()
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("read %s: not valid UTF-8", path)
	}
	return s, nil
}

// FullBody returns the whole body of m, a message of this box: m.Body, or
// the content of its body file when m.BodyFile is set. It only reads; safe
// for concurrent use. It holds the text once in memory.
func (b *Box) FullBody(m Message) (string, error) {
	if m.BodyFile == "" {
		return m.Body, nil
	}
	return b.readText(m.BodyFile, m.BodySize)
}

// FullReply returns the whole reply of m's outcome: Outcome.Reply, or the
// content of its reply file when Outcome.ReplyFile is set ("" without an
// outcome). It only reads; safe for concurrent use.
func (b *Box) FullReply(m Message) (string, error) {
	if m.Outcome == nil {
		return "", nil
	}
	if m.Outcome.ReplyFile == "" {
		return m.Outcome.Reply, nil
	}
	return b.readText(m.Outcome.ReplyFile, m.Outcome.ReplySize)
}

// removeText removes texts/<id>.<ext> if it exists.
func (b *Box) removeText(id, ext string) error {
	err := os.Remove(filepath.Join(b.Dir, textFile(id, ext)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
