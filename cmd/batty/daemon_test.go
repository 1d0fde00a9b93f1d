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
// link planted at the state directory or its daemon.log.
func TestDaemonLogIsNeverOpenedThroughALink(t *testing.T) {
	for _, linked := range []string{"", "daemon.log"} {
		t.Run("state/"+linked, func(t *testing.T) {
			out, victim := linktest.Outside(t)
			projDir := t.TempDir()
			l := layoutOf(t, projDir)
			if err := os.MkdirAll(filepath.Dir(l.Dir), 0o700); err != nil {
				t.Fatal(err)
			}
			target := out
			if linked != "" {
				target = victim
				if err := os.Mkdir(l.Dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			at := filepath.Join(l.Dir, linked)
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
