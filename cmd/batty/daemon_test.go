package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/atomicfile/linktest"
)

// `batty start` and `batty daemon` never append the daemon's log through a
// link planted at .batty or .batty/daemon.log.
func TestDaemonLogIsNeverOpenedThroughALink(t *testing.T) {
	for _, linked := range []string{".batty", ".batty/daemon.log"} {
		t.Run(linked, func(t *testing.T) {
			out, victim := linktest.Outside(t)
			projDir := t.TempDir()
			l := layoutOf(t, projDir)
			target := out
			if linked != ".batty" {
				target = victim
				if err := os.Mkdir(l.Dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			at := filepath.Join(projDir, linked)
			if err := os.Symlink(target, at); err != nil {
				t.Fatal(err)
			}
			f, err := openDaemonLog(l)
			if err == nil {
				f.WriteString("daemon output\n")
				f.Close()
			}
			var le *atomicfile.LinkError
			if !errors.Is(err, atomicfile.ErrSymlink) || !errors.As(err, &le) || le.Path != at {
				t.Errorf("openDaemonLog = %v; want the link %s refused", err, at)
			}
			linktest.AssertUntouched(t, out, victim)
		})
	}
}
