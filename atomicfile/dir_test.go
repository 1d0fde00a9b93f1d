package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/battyhq/batty/atomicfile/linktest"
)

// wantLink fails the test unless err is a refusal naming path.
func wantLink(t *testing.T, err error, path string) {
	t.Helper()
	var le *LinkError
	if !errors.Is(err, ErrSymlink) || !errors.As(err, &le) || le.Path != path {
		t.Fatalf("err = %v; want a *LinkError for %s", err, path)
	}
	if !strings.Contains(err.Error(), "remove it") {
		t.Errorf("error %q does not say how to fix it", err)
	}
}

func TestWriteFileRefusesSymlinkedTarget(t *testing.T) {
	out, victim := linktest.Outside(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	linktest.Symlink(t, victim, path)
	wantLink(t, WriteFile(path, []byte("new"), 0), path)
	linktest.AssertUntouched(t, out, victim)
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link itself was replaced: %v, %v", fi, err)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("left behind: %v", got)
	}
}

func TestWritesRefuseSymlinkedDir(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(dir, tmp string) error
	}{
		{"WriteFile", func(dir, _ string) error { return WriteFile(filepath.Join(dir, "f"), []byte("x"), 0) }},
		{"WriteJSON", func(dir, _ string) error { return WriteJSON(filepath.Join(dir, "f"), 1, 0) }},
		{"WriteNew", func(dir, _ string) error { return WriteNew(filepath.Join(dir, "f"), "", []byte("x"), 0) }},
		{"WriteFileVia dir", func(dir, tmp string) error { return WriteFileVia(filepath.Join(dir, "f"), tmp, []byte("x"), 0) }},
		{"WriteNew dir", func(dir, tmp string) error { return WriteNew(filepath.Join(dir, "f"), tmp, []byte("x"), 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, victim := linktest.Outside(t)
			root := t.TempDir()
			dir, tmp := filepath.Join(root, "box"), filepath.Join(root, "tmp")
			linktest.Symlink(t, out, dir)
			if err := os.Mkdir(tmp, 0o700); err != nil {
				t.Fatal(err)
			}
			wantLink(t, tc.write(dir, tmp), dir)
			linktest.AssertUntouched(t, out, victim)
		})
	}
	// The temporary directory is checked as well.
	for _, tc := range []struct {
		name  string
		write func(dir, tmp string) error
	}{
		{"WriteFileVia tmp", func(dir, tmp string) error { return WriteFileVia(filepath.Join(dir, "f"), tmp, []byte("x"), 0) }},
		{"WriteNew tmp", func(dir, tmp string) error { return WriteNew(filepath.Join(dir, "f"), tmp, []byte("x"), 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, victim := linktest.Outside(t)
			root := t.TempDir()
			dir, tmp := filepath.Join(root, "box"), filepath.Join(root, "tmp")
			linktest.Symlink(t, out, tmp)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			wantLink(t, tc.write(dir, tmp), tmp)
			linktest.AssertUntouched(t, out, victim)
			if got := entries(t, dir); len(got) != 0 {
				t.Errorf("written although refused: %v", got)
			}
		})
	}
}

func TestSyncDirAndMkdirAllRefuseLink(t *testing.T) {
	out, victim := linktest.Outside(t)
	link := filepath.Join(t.TempDir(), "logs")
	linktest.Symlink(t, out, link)
	wantLink(t, MkdirAll(link), link)
	wantLink(t, SyncDir(link), link)
	linktest.AssertUntouched(t, out, victim)
}

func TestOpenDirBeneathRefusesLinkInAnyComponent(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for _, linked := range []string{".batty", ".batty/logs"} {
		t.Run(linked, func(t *testing.T) {
			out, victim := linktest.Outside(t)
			project := t.TempDir()
			if linked == ".batty/logs" {
				if err := os.Mkdir(filepath.Join(project, ".batty"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			link := filepath.Join(project, linked)
			linktest.Symlink(t, out, link)
			for _, create := range []bool{false, true} {
				d, err := OpenDirBeneath(project, ".batty/logs", create)
				if err == nil {
					d.Close()
				}
				wantLink(t, err, link)
			}
			linktest.AssertUntouched(t, out, victim)
		})
	}
	t.Run("creates 0700", func(t *testing.T) {
		project := t.TempDir()
		d, err := OpenDirBeneath(project, ".batty/state", true)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if d.Path() != filepath.Join(project, ".batty/state") {
			t.Errorf("Path() = %s", d.Path())
		}
		for _, p := range []string{".batty", ".batty/state"} {
			if fi, err := os.Lstat(filepath.Join(project, p)); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v, %v; want a 0700 directory", p, fi.Mode(), err)
			}
		}
		if _, err := OpenDirBeneath(project, "../x", true); err == nil {
			t.Error("\"..\" accepted")
		}
	})
}

func TestDirOpenFileRefusesLinkAndFIFO(t *testing.T) {
	out, victim := linktest.Outside(t)
	root := t.TempDir()
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	link := filepath.Join(root, "a.log")
	linktest.Symlink(t, victim, link)
	_, err = d.OpenFile("a.log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	wantLink(t, err, link)
	_, err = d.ReadFile("a.log")
	wantLink(t, err, link)
	wantLink(t, d.Chmod("a.log", 0o600), link)
	wantLink(t, d.WriteFile("a.log", []byte("x"), 0), link)
	_, err = OpenFile(link, os.O_WRONLY|os.O_APPEND, 0)
	wantLink(t, err, link)
	linkedDir := filepath.Join(root, "logs")
	linktest.Symlink(t, out, linkedDir)
	_, err = OpenFile(filepath.Join(linkedDir, "victim"), os.O_WRONLY|os.O_APPEND, 0)
	wantLink(t, err, linkedDir)
	linktest.AssertUntouched(t, out, victim)

	// A FIFO must not block the opener (there is no reader).
	fifo := filepath.Join(root, "b.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.OpenFile("b.log", os.O_RDONLY, 0); !errors.Is(err, ErrSymlink) {
		t.Errorf("FIFO opened: %v", err)
	}
	if _, err := d.OpenFile("../x", os.O_RDONLY, 0); err == nil {
		t.Error("a name with a slash was accepted")
	}
}

func TestDirOpenFileSetsPermExactly(t *testing.T) {
	old := syscall.Umask(0o277)
	defer syscall.Umask(old)
	root := t.TempDir()
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.WriteFile(filepath.Join(root, "old.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"new.log", "old.log"} {
		f, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if fi, err := os.Stat(filepath.Join(root, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", name, fi.Mode(), err)
		}
	}
}

func TestDirRenameRemoveChmod(t *testing.T) {
	root := t.TempDir()
	d, err := OpenDirBeneath(root, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.WriteFile("a", []byte("1"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := d.Rename("a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := d.Chmod("b", 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(root, "b")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("b: %v, %v", fi.Mode(), err)
	}
	if b, err := d.ReadFile("b"); err != nil || string(b) != "1" {
		t.Errorf("ReadFile(b) = %q, %v", b, err)
	}
	if err := d.Remove("b"); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove("b"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("second Remove = %v, want not-exist", err)
	}
	if got := entries(t, root); len(got) != 0 {
		t.Errorf("left: %v", got)
	}
}
