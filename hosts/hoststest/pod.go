package hoststest

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Pod stands for a pod reached with `kubectl exec -i POD --`
// (docs/scaling.md): a directory of the test's with a home of its own,
// the Codex CLI as the pod's image would hold it, and a command that runs
// its arguments there with HOME set to that home, as the pod's shell
// would. Everything the pod runs is started by Command, so a process
// whose working directory lies under Root is the pod's.
type Pod struct {
	Root  string // everything of the pod's
	Home  string // its HOME (Root/home)
	Codex string // the image's Codex CLI (Root/image/codex)
	// Command is the wrapper script to name as the host's command; it
	// appends each command line it runs to Calls.
	Command, Calls string
}

// NewPod makes a Pod in a temporary directory, with a copy of the Codex
// CLI codex (the native binary) in its image. Its home is empty. The
// directory is in /var/tmp, removed when the test ends: not in /tmp, where
// agents in Codex's workspace-write sandbox may write (batty refuses a
// host's command or a codex.bin there), nor under the home directory,
// whose paths batty maps onto the host's home.
func NewPod(t testing.TB, codex string) *Pod {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "batty-pod-")
	if err != nil {
		t.Fatalf("hoststest: no directory for the pod outside /tmp and the home directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	p := &Pod{Root: root, Home: filepath.Join(root, "home"), Codex: filepath.Join(root, "image", "codex"),
		Command: filepath.Join(root, "pod-exec"), Calls: filepath.Join(root, "calls")}
	for _, dir := range []string{p.Home, filepath.Dir(p.Codex)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	CopyFile(t, codex, p.Codex, 0o755)
	script := "#!/bin/sh\necho \"$*\" >> " + p.Calls + "\nexport HOME=" + p.Home + "\nexec \"$@\"\n"
	if err := os.WriteFile(p.Command, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// CopyFile copies the file from to to (made with perm, its directory
// made if missing); a failure fails t.
func CopyFile(t testing.TB, from, to string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
