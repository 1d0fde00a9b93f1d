package hosts

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/battyhq/batty/team"
)

// putScript is the script Put runs: in a umask of 077 it makes the
// directory of name, writes stdin to a temporary file next to it, checks
// its size and moves it over name (a rename: a reader sees the old file
// or the new one, whole). A cut write leaves nothing. Pure.
func putScript(name string, size int) string {
	return strings.Join([]string{
		"set -e",
		"umask 077",
		"d=" + RemotePath(path.Dir(name)),
		`mkdir -p "$d"`,
		`t="$d/.batty-put.$$"`,
		`trap 'rm -f "$t"' EXIT`,
		`cat > "$t"`,
		fmt.Sprintf(`n=$(wc -c < "$t" | tr -d ' '); if [ "$n" != %d ]; then echo "batty: write cut short: $n of %d bytes arrived" >&2; exit 1; fi`, size, size),
		`mv -f "$t" "$d"/` + RemotePath(path.Base(name)),
		`trap - EXIT`,
	}, "; ")
}

// Put writes data to the file name on h ("~/" is the home directory
// there), 0600 in a directory made 0700 if missing, atomically (see
// putScript), over t. data must hold no secret the host's user may not
// read. It blocks until done or ctx ends.
func Put(ctx context.Context, t *Transport, h team.Host, name string, data []byte) error {
	if _, err := t.Run(ctx, h, putScript(name, len(data)), bytes.NewReader(data)); err != nil {
		return fmt.Errorf("write %s on host %s: %w", name, h.Name, err)
	}
	return nil
}
