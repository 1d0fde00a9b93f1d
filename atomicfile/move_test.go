package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/battyhq/batty/atomicfile/linktest"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func TestDirWriteViaReplacesALinkNotItsTarget(t *testing.T) {
	out, victim := linktest.Outside(t)
	old := syscall.Umask(0o277)
	defer syscall.Umask(old)
	d, root := openTemp(t)
	tmp, tmpRoot := openTemp(t)
	link := filepath.Join(root, "r")
	linktest.Symlink(t, victim, link)
	if err := d.WriteVia(tmp, "r", 0o640, writeString("reply")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 {
		t.Fatalf("r: %v, %v; want a regular file 0640", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(link); string(b) != "reply" {
		t.Errorf("r = %q", b)
	}
	// nil tmp: the temporary file is made in d itself; perm 0 is 0600.
	if err := d.WriteVia(nil, "r", 0, writeString("again")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode().Perm() != DefaultPerm {
		t.Errorf("r: %v, %v; want 0600", fi.Mode(), err)
	}
	// A failing write leaves the name as it was and no temporary file.
	boom := errors.New("boom")
	if err := d.WriteVia(tmp, "r", 0, func(io.Writer) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("WriteVia = %v, want the write's error", err)
	}
	if b, _ := os.ReadFile(link); string(b) != "again" {
		t.Errorf("r after a failed write = %q", b)
	}
	if got := entries(t, tmpRoot); len(got) != 0 {
		t.Errorf("temporary files left: %v", got)
	}
	if got := entries(t, root); !slices.Equal(got, []string{"r"}) {
		t.Errorf("left: %v", got)
	}
	linktest.AssertUntouched(t, out, victim)
}

func TestDirCreateViaNeverReplaces(t *testing.T) {
	out, victim := linktest.Outside(t)
	d, root := openTemp(t)
	tmp, tmpRoot := openTemp(t)
	if err := d.CreateVia(tmp, "m", 0, writeString("first")); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateVia(tmp, "m", 0, writeString("second")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second CreateVia = %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "m")); string(b) != "first" {
		t.Errorf("m = %q", b)
	}
	link := filepath.Join(root, "link")
	linktest.Symlink(t, victim, link)
	if err := d.CreateVia(tmp, "link", 0, writeString("x")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateVia over a link = %v, want fs.ErrExist", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi.Mode(), err)
	}
	if got := entries(t, tmpRoot); len(got) != 0 {
		t.Errorf("temporary files left: %v", got)
	}
	linktest.AssertUntouched(t, out, victim)
}

func TestDirRenameNoReplace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rename func(src *Dir, name string, dst *Dir, newName string) error
	}{
		{"RenameNoReplace", (*Dir).RenameNoReplace},
		// The fallback where renameat2(RENAME_NOREPLACE) is missing.
		{"link then unlink", func(src *Dir, name string, dst *Dir, newName string) error {
			return linkThenUnlink(src.fd(), name, dst.fd(), newName)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, victim := linktest.Outside(t)
			src, srcRoot := openTemp(t)
			dst, dstRoot := openTemp(t)
			for _, n := range []string{"a", "b"} {
				if err := os.WriteFile(filepath.Join(srcRoot, n), []byte(n), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.rename(src, "a", dst, "a2"); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(dstRoot, "a2")); string(b) != "a" {
				t.Errorf("a2 = %q", b)
			}
			// An existing name, a link to elsewhere included, is never
			// replaced nor written through.
			if err := os.WriteFile(filepath.Join(dstRoot, "taken"), []byte("kept"), 0o600); err != nil {
				t.Fatal(err)
			}
			linktest.Symlink(t, victim, filepath.Join(dstRoot, "link"))
			for _, to := range []string{"taken", "link", "a2"} {
				if err := tc.rename(src, "b", dst, to); !errors.Is(err, fs.ErrExist) {
					t.Errorf("onto %s: %v, want fs.ErrExist", to, err)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(dstRoot, "taken")); string(b) != "kept" {
				t.Errorf("taken = %q", b)
			}
			if err := tc.rename(src, "missing", dst, "x"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a missing source: %v, want fs.ErrNotExist", err)
			}
			// A link is moved as the link.
			linktest.Symlink(t, out, filepath.Join(srcRoot, "dirlink"))
			if err := tc.rename(src, "dirlink", dst, "moved"); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Lstat(filepath.Join(dstRoot, "moved")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("moved: %v, %v; want the link", fi.Mode(), err)
			}
			if got := entries(t, srcRoot); !slices.Equal(got, []string{"b"}) {
				t.Errorf("source left with %v", got)
			}
			linktest.AssertUntouched(t, out, victim)
		})
	}
	d, _ := openTemp(t)
	if err := d.RenameNoReplace("a", d, "../b"); err == nil {
		t.Error("a name with a slash was accepted")
	}
}
