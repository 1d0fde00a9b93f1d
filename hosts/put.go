package hosts

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/battyhq/batty/shellword"
	"github.com/battyhq/batty/team"
)

// writeScript is a script that writes its stdin, size bytes, to the file
// name in the directory dir on a host, atomically: in a umask of 077 it
// makes dir, writes a temporary file there, checks its size, runs check
// (shell lines that may refer to the file as "$t" and exit non-zero to
// refuse it), and only then moves it over name (mv -f: a rename, so a
// reader, or a program running from the old file, keeps the old one). A
// cut write leaves nothing. dir is a RemotePath-style path. Pure.
func writeScript(dir, name string, size int64, check ...string) string {
	lines := []string{
		"set -e",
		"umask 077",
		"d=" + RemotePath(dir),
		`mkdir -p "$d"`,
		`t="$d/.batty-put.$$"`,
		`trap 'rm -f "$t"' EXIT`,
		`cat > "$t"`,
		fmt.Sprintf(`n=$(wc -c < "$t" | tr -d ' '); if [ "$n" != %d ]; then echo "batty: upload cut short: $n of %d bytes arrived" >&2; exit 1; fi`, size, size),
	}
	lines = append(lines, check...)
	return strings.Join(append(lines, `mv -f "$t" "$d"/`+shellword.Quote(name), `trap - EXIT`), "; ")
}

// Put writes data to the file name on h ("~/" is the home directory
// there), 0600 in a directory made 0700 if missing, atomically (see
// writeScript), over t. data must hold no secret the host's user may not
// read. It blocks until done or ctx ends.
func Put(ctx context.Context, t *Transport, h team.Host, name string, data []byte) error {
	script := writeScript(path.Dir(name), path.Base(name), int64(len(data)))
	if _, err := t.Run(ctx, h, script, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("write %s on host %s: %w", name, h.Name, err)
	}
	return nil
}
