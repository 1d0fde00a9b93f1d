package inbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/battyhq/batty/textclip"
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
	return textclip.Bytes(s, PreviewLen, "")
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
	// A link at the name itself is replaced, never written through.
	err = texts.WriteVia(tmp, name, filePerm, func(w io.Writer) error {
		_, err := io.WriteString(w, text)
		return err
	})
	if err != nil {
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
	defer d.Close()
	if size < 0 {
		return "", fmt.Errorf("read %s: the message gives a negative size (%d)", path, size)
	}
	text, err := d.ReadText(name, size)
	if err != nil {
		if fi, lerr := d.Lstat(name); lerr == nil && !fi.Mode().IsRegular() {
			return "", fmt.Errorf("read %s: not a regular file (%v): %w", path, fi.Mode().Type(), err)
		}
		return "", err
	}
	return text, nil
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
	defer d.Close()
	if err := removeEntry(d, id+"."+ext); err != nil {
		return err
	}
	return d.Sync()
}
