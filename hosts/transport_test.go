package hosts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/team"
)

func TestArgv(t *testing.T) {
	tr := &Transport{ControlDir: "/tmp/batty-ssh-7", Owner: "42"}
	got, err := tr.Argv(team.Host{Name: "b", SSH: "dev@b.example.com"}, "echo 'hi'")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ssh", "-T", "-o", "BatchMode=yes", "-o", "ControlMaster=auto", "-o", "ControlPath=%C-42",
		"-o", "ControlPersist=60s", "--", "dev@b.example.com", `sh -c 'echo '\''hi'\'''`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ssh argv = %q\nwant %q", got, want)
	}
	if slices.ContainsFunc(got, func(a string) bool { return strings.Contains(a, "StrictHostKeyChecking") }) {
		t.Fatalf("argv turns host key checking off: %q", got)
	}

	tr = &Transport{SSH: "/usr/bin/ssh", ConfigFile: "/x/config"}
	got, _ = tr.Argv(team.Host{Name: "b", SSH: "b"}, "true")
	if got[0] != "/usr/bin/ssh" || got[1] != "-T" || got[2] != "-F" || got[3] != "/x/config" {
		t.Fatalf("argv with ssh and config file = %q", got)
	}

	got, err = tr.Argv(team.Host{Name: "k", Command: []string{"kubectl", "exec", "-i", "p", "--"}}, "echo $HOME")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"kubectl", "exec", "-i", "p", "--", "sh", "-c", "echo $HOME"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("command argv = %q, want %q", got, want)
	}

	for _, h := range []team.Host{{Name: "none"}, {Name: "both", SSH: "x", Command: []string{"y"}}, {Name: "opt", SSH: "-oProxyCommand=x"}, {Name: "empty", Command: []string{""}}} {
		if argv, err := tr.Argv(h, "true"); err == nil {
			t.Errorf("Argv(%+v) = %q, want an error", h, argv)
		}
	}
}

func TestControlDirFor(t *testing.T) {
	for _, c := range []struct {
		runtime, home, tmp, want string
	}{
		{"/run/user/1000", "/home/me", "", "/run/user/1000/batty-ssh"},
		{"", "/home/me", "", "/home/me/.ssh/batty"},
		{"relative", "/home/me", "", "/home/me/.ssh/batty"},
		// Codex's sandbox lets agents write /tmp and $TMPDIR by default.
		{"/tmp/runtime-me", "/home/me", "", "/home/me/.ssh/batty"},
		{"/tmp", "/home/me", "", "/home/me/.ssh/batty"},
		{"/run/user/1000", "/home/me", "/run/user/1000", "/home/me/.ssh/batty"},
		{"/run/user/1000/", "/home/me", "/run/user", "/home/me/.ssh/batty"},
		{"/tmpfs/run", "/home/me", "", "/tmpfs/run/batty-ssh"},
		{"", "/tmp/home", "", ""},
		{"", "/scratch/me", "/scratch", ""},
		{"", "", "", ""},
	} {
		if got := ControlDirFor(c.runtime, c.home, c.tmp); got != c.want {
			t.Errorf("ControlDirFor(%q, %q, %q) = %q; want %q", c.runtime, c.home, c.tmp, got, c.want)
		}
	}
}

func TestRemotePath(t *testing.T) {
	for in, want := range map[string]string{
		"~":                         `"$HOME"`,
		"~/":                        `"$HOME"`,
		"~/.cache/batty/v1/batty":   `"$HOME"/.cache/batty/v1/batty`,
		"~/my proj":                 `"$HOME"/'my proj'`,
		"/srv/it's":                 `'/srv/it'\''s'`,
		"~bob/x":                    `'~bob/x'`,
		"/usr/local/bin/batty":      "/usr/local/bin/batty",
		"$(touch /tmp/pwned)":       `'$(touch /tmp/pwned)'`,
		"~/$(touch /tmp/pwned)/`x`": `"$HOME"/'$(touch /tmp/pwned)/` + "`x`'",
	} {
		if got := RemotePath(in); got != want {
			t.Errorf("RemotePath(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestRemotePathShell checks with a real sh that RemotePath and
// ShellCommand give back each word as it was, a leading "~/" expanded.
func TestRemotePathShell(t *testing.T) {
	home := t.TempDir()
	words := []string{"~/a b", "it's", "$(echo no)", "`echo no`", "a\"b", "semi;colon", "new\nline", "*", ""}
	script := "for w in " + ShellCommand(words...) + "; do printf '%s\\0' \"$w\"; done"
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	want := append([]string{home + "/a b"}, words[1:]...)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("words = %q\nwant %q", got, want)
	}
}

func TestEnsureControlDir(t *testing.T) {
	base := shortTempDir(t)
	dir := filepath.Join(base, "c")
	if err := EnsureControlDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("control dir: %v, %v", fi, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := EnsureControlDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v not tightened to 0700", fi.Mode().Perm())
	}

	link := filepath.Join(base, "l")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := EnsureControlDir(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("symlink: %v", err)
	}
	file := filepath.Join(base, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := EnsureControlDir(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("file: %v", err)
	}
	nested := filepath.Join(base, "h", ".ssh", "batty")
	if err := EnsureControlDir(nested); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Dir(nested)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the control dir's parent: %v, %v", fi, err)
	}
	if err := EnsureControlDir(""); err == nil || !strings.Contains(err.Error(), "outside /tmp") {
		t.Fatalf("no directory fit: %v", err)
	}
	long := base
	for len(long) < 220 {
		long = filepath.Join(long, strings.Repeat("x", 50))
	}
	if err := EnsureControlDir(long); err != nil {
		t.Fatalf("a control directory of %d bytes: %v", len(long), err)
	}
	if os.Getuid() == 0 {
		other := filepath.Join(base, "o")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := EnsureControlDir(other); err == nil || !strings.Contains(err.Error(), "another user") {
			t.Fatalf("dir of another user: %v", err)
		}
	}
}

// shortTempDir is a temporary directory with a path short enough for
// control sockets, removed at the end of the test.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "bh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// localHost is a host reached through a command that runs its words
// here, with HOME set to home: the transport's command-host path, with
// no ssh.
func localHost(home string) team.Host {
	return team.Host{Name: "here", Command: []string{"env", "HOME=" + home}}
}

func TestRunCommandHost(t *testing.T) {
	home := t.TempDir()
	tr := &Transport{}
	out, err := tr.Run(context.Background(), localHost(home), `cat; printf ' %s' "$HOME"`, strings.NewReader("in"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != "in "+home {
		t.Fatalf("out = %q", got)
	}
	_, err = tr.Run(context.Background(), localHost(home), "echo broken >&2; exit 3", nil)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("failing command: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := tr.Run(ctx, localHost(home), "sleep 30", nil); err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("cancelled run: %v after %s", err, time.Since(start))
	}
}
