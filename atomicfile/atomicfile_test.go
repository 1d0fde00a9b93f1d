package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// entries returns the names in dir, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	for _, content := range []string{"one\n", "two, longer\n", ""} {
		if err := WriteFile(path, []byte(content), 0); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != content {
			t.Fatalf("content %q, want %q", got, content)
		}
		if names := entries(t, dir); len(names) != 1 || names[0] != "f.txt" {
			t.Fatalf("directory holds %q, want only f.txt", names)
		}
	}
}

func TestPerm(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	tests := []struct {
		name string
		perm os.FileMode
		want os.FileMode
	}{
		{"default", 0, 0o600},
		{"0600", 0o600, 0o600},
		{"0644", 0o644, 0o644},
		{"0666 ignores umask", 0o666, 0o666},
		{"0400", 0o400, 0o400},
		{"mode bits dropped", os.ModeDir | 0o640, 0o640},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for j, write := range []func(string) error{
				func(p string) error { return WriteFile(p, []byte("x"), tt.perm) },
				func(p string) error { return WriteNew(p, "", []byte("x"), tt.perm) },
				func(p string) error { return WriteJSON(p, 1, tt.perm) },
			} {
				path := filepath.Join(dir, fmt.Sprintf("f%d-%d", i, j))
				if err := write(path); err != nil {
					t.Fatal(err)
				}
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm(); got != tt.want {
					t.Errorf("writer %d: perm %o, want %o", j, got, tt.want)
				}
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.json")
	v := map[string]any{"a": 1, "b": "<x>"}
	if err := WriteJSON(path, v, 0); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": 1,\n  \"b\": \"<x>\"\n}\n"
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// A value that does not encode writes nothing and keeps the old file.
	err = WriteJSON(path, map[string]any{"c": make(chan int)}, 0)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want one naming %s", err, path)
	}
	if got2, _ := os.ReadFile(path); !bytes.Equal(got, got2) {
		t.Fatalf("file changed to %q", got2)
	}
}

func TestErrorsLeaveNothingBehind(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) (path, tmpDir string)
		write func(path, tmpDir string) error
	}{
		{
			name: "missing directory",
			setup: func(t *testing.T, dir string) (string, string) {
				return filepath.Join(dir, "missing", "f"), ""
			},
			write: func(p, _ string) error { return WriteFile(p, []byte("x"), 0) },
		},
		{
			name: "missing temp directory",
			setup: func(t *testing.T, dir string) (string, string) {
				return filepath.Join(dir, "f"), filepath.Join(dir, "missing")
			},
			write: func(p, tmp string) error { return WriteFileVia(p, tmp, []byte("x"), 0) },
		},
		{
			name: "path is a non-empty directory",
			setup: func(t *testing.T, dir string) (string, string) {
				p := filepath.Join(dir, "d")
				if err := os.MkdirAll(filepath.Join(p, "child"), 0o700); err != nil {
					t.Fatal(err)
				}
				return p, ""
			},
			write: func(p, _ string) error { return WriteFile(p, []byte("x"), 0) },
		},
		{
			name: "path is a non-empty directory, temp elsewhere",
			setup: func(t *testing.T, dir string) (string, string) {
				p := filepath.Join(dir, "d")
				if err := os.MkdirAll(filepath.Join(p, "child"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
					t.Fatal(err)
				}
				return p, filepath.Join(dir, "tmp")
			},
			write: func(p, tmp string) error { return WriteFileVia(p, tmp, []byte("x"), 0) },
		},
		{
			name: "WriteNew onto an existing file",
			setup: func(t *testing.T, dir string) (string, string) {
				p := filepath.Join(dir, "f")
				if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
					t.Fatal(err)
				}
				return p, ""
			},
			write: func(p, _ string) error { return WriteNew(p, "", []byte("new"), 0) },
		},
		{
			name: "read-only directory",
			setup: func(t *testing.T, dir string) (string, string) {
				if os.Geteuid() == 0 {
					t.Skip("root writes into read-only directories")
				}
				ro := filepath.Join(dir, "ro")
				if err := os.Mkdir(ro, 0o500); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Chmod(ro, 0o700) })
				return filepath.Join(ro, "f"), ""
			},
			write: func(p, _ string) error { return WriteFile(p, []byte("x"), 0) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, tmpDir := tt.setup(t, dir)
			before := snapshot(t, dir)
			err := tt.write(path, tmpDir)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("tree changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// snapshot describes every file and directory under root with its content.
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			fmt.Fprintf(&b, "%s/\n", rel)
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %q\n", rel, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteNew(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := MkdirAll(tmp); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f")
	if err := WriteNew(path, tmp, []byte("first"), 0); err != nil {
		t.Fatal(err)
	}
	err := WriteNew(path, tmp, []byte("second"), 0)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second WriteNew: %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "first" {
		t.Fatalf("content %q", got)
	}
	if names := entries(t, tmp); len(names) != 0 {
		t.Fatalf("temporary files left: %q", names)
	}
}

func TestWriteNewConcurrentOneWins(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = WriteNew(path, "", []byte(fmt.Sprint(i)), 0) })
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, fs.ErrExist):
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d writers won, want 1", wins)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %q", names)
	}
}

func TestConcurrentWritersLeaveOneCompleteVersion(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	const writers, rounds, size = 8, 25, 64 << 10
	version := func(w int) []byte { return bytes.Repeat([]byte{byte('a' + w)}, size) }
	if err := WriteFile(path, version(0), 0); err != nil {
		t.Fatal(err)
	}
	complete := func(data []byte) bool {
		return len(data) == size && bytes.Count(data, data[:1]) == size
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("read: %v", err)
				return
			}
			if !complete(data) {
				t.Errorf("read a partial version (%d bytes)", len(data))
				return
			}
		}
	})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for range rounds {
				if err := WriteFile(path, version(w), 0o644); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !complete(data) {
		t.Fatalf("final file is not one complete version")
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %q", names)
	}
}

func TestMkdirAll(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c")
	for range 2 { // idempotent
		if err := MkdirAll(deep); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"a", "a/b", "a/b/c"} {
		fi, err := os.Stat(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want drwx------", d, fi.Mode())
		}
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, filepath.Join(file, "sub")} {
		if err := MkdirAll(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("MkdirAll(%s) = %v, want an error naming it", p, err)
		}
	}
}

func TestMkdirAllConcurrent(t *testing.T) {
	root := t.TempDir()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := MkdirAll(filepath.Join(root, "x", "y", fmt.Sprint(i%2))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	if err := SyncDir(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("SyncDir(missing) = %v", err)
	}
}
