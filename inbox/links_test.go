package inbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/atomicfile"
)

type env struct {
	s     *Store
	b     *Box
	queue *Box
	id    string
}

// TestLinksAreRefused replaces, for every path of the package that writes,
// a directory under the store's root with a symbolic link to a victim
// directory outside it, and checks that the operation is refused with
// atomicfile.ErrSymlink and that nothing was written (or removed) in the victim.
func TestLinksAreRefused(t *testing.T) {
	tests := []struct {
		name string
		// prepare runs before the link is made.
		prepare func(t *testing.T, e *env)
		// link is the directory replaced by a link, relative to the root.
		link string
		// op is the operation that must refuse the link.
		op func(e *env) error
	}{
		{"Deliver through new/", nil, "eng/new", func(e *env) error {
			_, err := e.b.Deliver(msg("x"))
			return err
		}},
		{"Deliver through tmp/", nil, "eng/tmp", func(e *env) error {
			_, err := e.b.Deliver(msg("x"))
			return err
		}},
		{"Deliver with a limit through the box", nil, "eng", func(e *env) error {
			e.b.Limit = 10
			_, err := e.b.Deliver(msg("x"))
			return err
		}},
		{"Claim through cur/", deliverOne, "eng/cur", func(e *env) error {
			_, err := e.b.Claim(e.id)
			return err
		}},
		{"Complete through done/", claimOne, "eng/done", func(e *env) error {
			_, err := e.b.Complete(e.id, validOutcome())
			return err
		}},
		{"Requeue through new/", claimOne, "eng/new", func(e *env) error {
			return e.b.Requeue(e.id)
		}},
		{"MoveTo through the destination's new/", func(t *testing.T, e *env) {
			e.id = deliver(t, e.queue, msg("routed")).ID
		}, "eng/new", func(e *env) error {
			_, err := e.queue.MoveTo(e.id, e.b)
			return err
		}},
		{"quarantine through bad/", func(t *testing.T, e *env) {
			e.s.Grace = -1
			if err := os.WriteFile(filepath.Join(e.b.Dir, "new", "junk.json"), []byte("{"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "eng/bad", func(e *env) error {
			_, errs := e.b.Pending()
			for _, err := range errs {
				var bad *BadFileError
				if errors.As(err, &bad) {
					return bad.MoveErr
				}
			}
			return errors.Join(errs...)
		}},
		{"Complete with a long reply through texts/", claimOne, "eng/texts", func(e *env) error {
			o := validOutcome()
			o.Reply = strings.Repeat("r", MaxReplyLen+1)
			_, err := e.b.Complete(e.id, o)
			return err
		}},
		{"Deliver a long body through texts/", nil, "eng/texts", func(e *env) error {
			_, err := e.b.Deliver(Message{From: "eng", To: "human", Body: strings.Repeat("b", MaxInlineBody+1)})
			return err
		}},
		{"Recover through tmp/", nil, "eng/tmp", func(e *env) error {
			_, errs := e.b.Recover()
			return errors.Join(errs...)
		}},
		{"Store.Box through a subdirectory", nil, "eng/done", func(e *env) error {
			_, err := e.s.Box("eng")
			return err
		}},
		{"Store.Box through the box", nil, "eng", func(e *env) error {
			_, err := e.s.Box("eng")
			return err
		}},
		{"Open through the root", nil, "", func(e *env) error {
			_, err := Open(e.s.Root)
			return err
		}},
		{"Reconcile through done/", func(t *testing.T, e *env) {
			m := deliver(t, e.queue, msg("twice"))
			copyFile(t, e.queue.file(dirNew, m.ID), e.b.file(dirNew, m.ID))
		}, "eng/done", func(e *env) error {
			_, errs := Reconcile([]*Box{e.b, e.queue})
			return errors.Join(errs...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, b := newBox(t, "eng")
			queue, err := s.Box("@eng")
			if err != nil {
				t.Fatal(err)
			}
			e := &env{s: s, b: b, queue: queue}
			if tt.prepare != nil {
				tt.prepare(t, e)
			}
			victim := t.TempDir()
			if err := os.Chmod(victim, 0o755); err != nil {
				t.Fatal(err)
			}
			canary := filepath.Join(victim, "canary")
			if err := os.WriteFile(canary, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			// An old file, which Recover would remove from a real tmp/.
			old := filepath.Join(victim, ".old.tmp")
			if err := os.WriteFile(old, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			aged := time.Now().Add(-2 * StaleTempAge)
			if err := os.Chtimes(old, aged, aged); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(s.Root, tt.link)
			if err := os.RemoveAll(link); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, link); err != nil {
				t.Fatal(err)
			}
			err = tt.op(e)
			if !errors.Is(err, atomicfile.ErrSymlink) {
				t.Fatalf("error %v, want one matching atomicfile.ErrSymlink", err)
			}
			if got := dirNames(t, victim); !slices.Equal(got, []string{".old.tmp", "canary"}) {
				t.Fatalf("the link's target now holds %q", got)
			}
			if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o755 {
				t.Fatalf("the link's target: %v, %v", fi.Mode(), err)
			}
		})
	}
}

func deliverOne(t *testing.T, e *env) { e.id = deliver(t, e.b, msg("one")).ID }

func claimOne(t *testing.T, e *env) {
	deliverOne(t, e)
	if _, err := e.b.Claim(e.id); err != nil {
		t.Fatal(err)
	}
}
