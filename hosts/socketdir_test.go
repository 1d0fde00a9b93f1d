package hosts

import (
	"os"
	"path/filepath"
	"testing"
)

// tmux's socket directory is made as tmux makes it when missing, a
// placeholder file a killed sandboxed command left there is replaced, and
// anything else there is left alone.
func TestEnsureSocketDir(t *testing.T) {
	root := t.TempDir()
	isDir := func(p string) bool {
		fi, err := os.Lstat(p)
		return err == nil && fi.IsDir() && fi.Mode().Perm() == 0o700
	}

	missing := filepath.Join(root, "tmpdir", "tmux-1000")
	if err := EnsureSocketDir(missing); err != nil || !isDir(missing) {
		t.Fatalf("missing: %v; a 0700 directory made: %v", err, isDir(missing))
	}
	if err := EnsureSocketDir(missing); err != nil {
		t.Fatalf("again: %v", err)
	}

	placeholder := filepath.Join(root, "tmux-1001")
	if err := os.WriteFile(placeholder, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := EnsureSocketDir(placeholder); err != nil || !isDir(placeholder) {
		t.Fatalf("placeholder: %v; replaced by a directory: %v", err, isDir(placeholder))
	}

	file := filepath.Join(root, "tmux-1002")
	if err := os.WriteFile(file, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := EnsureSocketDir(file); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "mine" {
		t.Fatalf("a file with content was touched: %q, %v", b, err)
	}
}
