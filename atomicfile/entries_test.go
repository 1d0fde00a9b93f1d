package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/atomicfile/linktest"
)

// openTemp opens a new temporary directory as a Dir.
func openTemp(t *testing.T) (*Dir, string) {
	t.Helper()
	root := t.TempDir()
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, root
}

func TestDirLstatDescribesLinksWithoutFollowing(t *testing.T) {
	out, victim := linktest.Outside(t)
	d, root := openTemp(t)
	before := time.Now().Add(-time.Second)
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("12345"), 0o640); err != nil {
		t.Fatal(err)
	}
	linktest.Symlink(t, victim, filepath.Join(root, "link"))
	linktest.Symlink(t, out, filepath.Join(root, "dirlink"))

	fi, err := d.Lstat("f")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Name() != "f" || fi.Size() != 5 || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 || fi.IsDir() {
		t.Errorf("f: %s %d %v", fi.Name(), fi.Size(), fi.Mode())
	}
	if ct, mt := fi.ChangeTime(), fi.ModTime(); ct.Before(before) || mt.Before(before) || ct.After(time.Now().Add(time.Second)) {
		t.Errorf("f: ctime %v, mtime %v; want about now", ct, mt)
	}
	for _, name := range []string{"link", "dirlink"} {
		fi, err := d.Lstat(name)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 || fi.IsDir() {
			t.Errorf("Lstat(%s) = %v, %v; want the link itself", name, fi.Mode(), err)
		}
	}
	if _, err := d.Lstat("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lstat(missing) = %v, want not-exist", err)
	}
	if _, err := d.Lstat("dirlink/victim"); err == nil {
		t.Error("a name with a slash was accepted")
	}
	linktest.AssertUntouched(t, out, victim)
}

func TestDirNames(t *testing.T) {
	out, _ := linktest.Outside(t)
	d, root := openTemp(t)
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(root, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	linktest.Symlink(t, out, filepath.Join(root, "link"))
	// Twice: reading must not leave the directory's offset at its end.
	for range 2 {
		names, err := d.Names()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		if want := []string{"a", "b", "link", "sub"}; !slices.Equal(names, want) {
			t.Fatalf("Names = %v, want %v (a link is listed, not followed)", names, want)
		}
	}
}

func TestDirLock(t *testing.T) {
	d, root := openTemp(t)
	if err := d.Lock(false); err != nil {
		t.Fatal(err)
	}
	if err := d.Lock(false); err != nil {
		t.Fatalf("locking again through the same Dir: %v", err)
	}
	other, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Lock(false); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Dir's Lock = %v, want ErrLocked", err)
	}
	locked := make(chan error, 1)
	go func() { locked <- other.Lock(true) }()
	d.Close() // releases the lock
	select {
	case err := <-locked:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Lock with wait did not return after the holder closed")
	}
}

func TestDirReadText(t *testing.T) {
	out, victim := linktest.Outside(t)
	d, root := openTemp(t)
	if err := os.WriteFile(filepath.Join(root, "t"), []byte("héllo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := d.ReadText("t", 6); err != nil || s != "héllo" {
		t.Errorf("ReadText(t, 6) = %q, %v", s, err)
	}
	if s, err := d.ReadText("t", -1); err != nil || s != "héllo" {
		t.Errorf("ReadText(t, -1) = %q, %v", s, err)
	}
	if _, err := d.ReadText("t", 5); err == nil || !strings.Contains(err.Error(), "6 bytes, want 5") {
		t.Errorf("a size mismatch: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "bad"), []byte{'a', 0xff}, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadText("bad", 2); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
	link := filepath.Join(root, "link")
	linktest.Symlink(t, victim, link)
	_, err := d.ReadText("link", -1)
	wantLink(t, err, link)
	if _, err := d.ReadText("missing", -1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	linktest.AssertUntouched(t, out, victim)
}

func TestDirRemoveTakesLinksAndEmptyDirectories(t *testing.T) {
	out, victim := linktest.Outside(t)
	d, root := openTemp(t)
	linktest.Symlink(t, out, filepath.Join(root, "dirlink"))
	linktest.Symlink(t, victim, filepath.Join(root, "link"))
	if err := os.MkdirAll(filepath.Join(root, "full", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"dirlink", "link", "empty"} {
		if err := d.Remove(name); err != nil {
			t.Errorf("Remove(%s): %v", name, err)
		}
	}
	if err := d.Remove("full"); err == nil {
		t.Error("a directory that is not empty was removed")
	}
	if got := entries(t, root); !slices.Equal(got, []string{"full"}) {
		t.Errorf("left: %v", got)
	}
	linktest.AssertUntouched(t, out, victim)
}
