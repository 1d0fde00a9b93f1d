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

	"golang.org/x/sys/unix"
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

// writeText stores text as texts/<id>.<ext>, replacing a file of that name,
// atomically and durably (texts/ is created if missing; a link there is
// refused). text is written from its own memory, not copied.
func (b *Box) writeText(id, ext, text string) error {
	name := id + "." + ext
	ds, err := b.open(false, dirTmp, dirTexts)
	if err != nil {
		return fmt.Errorf("write %s text of %s: %w", ext, id, err)
	}
	defer ds.close()
	tmp, texts := ds.subs[0], ds.subs[1]
	tname, err := tmp.writeTemp(name, filePerm, func(f *os.File) error {
		_, err := f.WriteString(text)
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s text of %s: %w", ext, id, err)
	}
	// renameat(2) replaces a link at the name itself, never its target.
	if err := unix.Renameat(tmp.fd, tname, texts.fd, name); err != nil {
		tmp.remove(tname)
		return fmt.Errorf("write %s: %w", filepath.Join(texts.path, name), err)
	}
	if err := texts.sync(); err != nil {
		return fmt.Errorf("write %s text of %s: %w", ext, id, err)
	}
	return nil
}

// readText returns the content of the text file rel (relative to the box
// directory, "texts/<name>"), which must be a regular file of size bytes
// holding UTF-8. Neither texts/ nor the file is followed if it is a link.
func (b *Box) readText(rel string, size int64) (string, error) {
	path := filepath.Join(b.Dir, filepath.FromSlash(rel))
	sub, name, ok := strings.Cut(rel, "/")
	if !ok || sub != dirTexts || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("read %s: not a text file of the box", path)
	}
	d, err := b.openSub(dirTexts)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	defer d.close()
	f, err := d.openFile(name)
	if err != nil {
		if mode, lerr := d.lstat(name); lerr == nil && !mode.IsRegular() {
			return "", fmt.Errorf("read %s: not a regular file (%v)", path, mode.Type())
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
	d, err := b.openSub(dirTexts)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.close()
	if err := d.remove(id + "." + ext); err != nil {
		return err
	}
	return d.sync()
}
