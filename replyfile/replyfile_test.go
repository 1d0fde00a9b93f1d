package replyfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReadRemove(t *testing.T) {
	root := t.TempDir()
	d, err := OpenUnder(root, true, "replies", "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, dir := range []string{filepath.Join(root, "replies"), filepath.Join(root, "replies", "agent-1")} {
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", dir, fi.Mode(), err)
		}
	}
	text := strings.Repeat("héllo ", 1000)
	name := Name("20261121T125100.123456789Z-1f2e3d4c")
	if err := d.Write(name, text); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(d.File(name))
	if err != nil || fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Fatalf("reply file: %v %v", fi.Mode(), err)
	}
	got, err := d.Read(name, int64(len(text)))
	if err != nil || got != text {
		t.Fatalf("read: %d bytes, %v", len(got), err)
	}
	if _, err := d.Read(name, 3); err == nil {
		t.Fatal("a size mismatch was accepted")
	}
	// Rewriting replaces the file whole.
	if err := d.Write(name, "short"); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Read(name, -1); err != nil || got != "short" {
		t.Fatalf("reread: %q %v", got, err)
	}
	if err := d.Remove(name); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove(name); err != nil {
		t.Fatalf("removing a missing file: %v", err)
	}
	if des, _ := os.ReadDir(d.Path()); len(des) != 0 {
		t.Fatalf("left behind: %v", des)
	}
}

func TestName(t *testing.T) {
	for id, want := range map[string]string{
		"chat-1":                              "chat-1.reply",
		"20261121T125100.123456789Z-1f2e3d4c": "20261121T125100.123456789Z-1f2e3d4c.reply",
	} {
		if got := Name(id); got != want {
			t.Errorf("Name(%q) = %q, want %q", id, got, want)
		}
	}
	for _, id := range []string{"", "../x", ".hidden", "a/b", strings.Repeat("a", 200)} {
		got := Name(id)
		if strings.ContainsAny(got, "/") || strings.HasPrefix(got, ".") || got == Name("other") || len(got) > 100 {
			t.Errorf("Name(%q) = %q", id, got)
		}
	}
}

func TestLinksAreRefused(t *testing.T) {
	root := t.TempDir()
	elsewhere := t.TempDir()
	// A link in place of the agent's directory.
	if err := os.Mkdir(filepath.Join(root, "replies"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "replies", "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenUnder(root, true, "replies", "a"); !errors.Is(err, ErrLink) {
		t.Fatalf("OpenUnder through a linked directory: %v", err)
	}
	if _, err := Open(filepath.Join(root, "replies", "a")); !errors.Is(err, ErrLink) {
		t.Fatalf("Open of a linked directory: %v", err)
	}
	// A link in place of a parent.
	root2 := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(root2, "replies")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenUnder(root2, true, "replies", "a"); !errors.Is(err, ErrLink) {
		t.Fatalf("OpenUnder through a linked parent: %v", err)
	}
	if des, _ := os.ReadDir(elsewhere); len(des) != 0 {
		t.Fatalf("something was created through the link: %v", des)
	}

	// A link in place of the reply file: never read, and a write replaces
	// the link, not its target.
	d, err := OpenUnder(root, true, "replies", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	target := filepath.Join(elsewhere, "secret")
	if err := os.WriteFile(target, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, d.File("m.reply")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read("m.reply", -1); !errors.Is(err, ErrLink) {
		t.Fatalf("read through a link: %v", err)
	}
	if err := d.Write("m.reply", "reply"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "secret" {
		t.Fatalf("the link's target was written: %q", b)
	}
	if fi, _ := os.Lstat(d.File("m.reply")); !fi.Mode().IsRegular() {
		t.Fatalf("the link is still there: %v", fi.Mode())
	}
	// Removing a link removes the link only.
	if err := os.Symlink(target, d.File("n.reply")); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Clear(); err != nil || n != 2 {
		t.Fatalf("Clear: %d, %v", n, err)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the link's target was removed: %v", err)
	}
}

func TestReadRefusesInvalidUTF8(t *testing.T) {
	d, err := OpenUnder(t.TempDir(), true, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.WriteFile(d.File("x.reply"), []byte{0xff, 0xfe}, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read("x.reply", 2); err == nil {
		t.Fatal("invalid UTF-8 was accepted")
	}
}

// TestTake: Take reads the announced reply and removes its file; a path
// that is not the reply's file, or a size that does not match, leaves the
// file where it is.
func TestTake(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const id = "20261121T125100.123456789Z-1f2e3d4c"
	text := strings.Repeat("héllo ", 1000)
	if err := d.Write(Name(id), text); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Take(filepath.Join(t.TempDir(), Name(id)), id, int64(len(text))); err == nil || got != "" {
		t.Fatalf("another path: %d bytes, %v", len(got), err)
	}
	if got, err := d.Take(d.File(Name(id)), id, 3); err == nil || got != "" {
		t.Fatalf("another size: %d bytes, %v", len(got), err)
	}
	if _, err := os.Lstat(d.File(Name(id))); err != nil {
		t.Fatalf("a refused take removed the file: %v", err)
	}
	got, err := d.Take(d.File(Name(id)), id, int64(len(text)))
	if err != nil || got != text {
		t.Fatalf("take: %d bytes, %v", len(got), err)
	}
	if _, err := os.Lstat(d.File(Name(id))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file stays after a take: %v", err)
	}
	if _, err := d.Take(d.File(Name(id)), id, -1); err == nil {
		t.Fatal("a second take succeeded")
	}
}
