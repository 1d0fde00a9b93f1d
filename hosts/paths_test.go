package hosts

import (
	"reflect"
	"strings"
	"testing"

	"github.com/battyhq/batty/sandbox"
)

func TestHomePath(t *testing.T) {
	tests := []struct{ local, home, want string }{
		{"/home/ann/bin/codex", "/home/ann", "~/bin/codex"},
		{"/home/ann", "/home/ann", "~"},
		{"/home/ann/", "/home/ann/", "~"},
		{"/home/annex/codex", "/home/ann", "/home/annex/codex"},
		{"/usr/bin/codex", "/home/ann", "/usr/bin/codex"},
		{"codex", "/home/ann", "codex"},
		{"", "/home/ann", ""},
		{"/home/ann/x", "", "/home/ann/x"},
		{"/x", "/", "/x"},
	}
	for _, tt := range tests {
		if got := HomePath(tt.local, tt.home); got != tt.want {
			t.Errorf("HomePath(%q, %q) = %q, want %q", tt.local, tt.home, got, tt.want)
		}
	}
}

func TestProjectPath(t *testing.T) {
	tests := []struct{ hostDir, root, local, want string }{
		{"~/src/p", "/work/p", "/work/p", "~/src/p"},
		{"~/src/p", "/work/p", "/work/p/sub/dir", "~/src/p/sub/dir"},
		{"/srv/p", "/work/p", "/work/other", "/srv/p"},
		{"/srv/p", "/work/p", "/work/pp", "/srv/p"},
		{"/work/p", "/work/p", "/work/p/a", "/work/p/a"},
	}
	for _, tt := range tests {
		if got := ProjectPath(tt.hostDir, tt.root, tt.local); got != tt.want {
			t.Errorf("ProjectPath(%q, %q, %q) = %q, want %q", tt.hostDir, tt.root, tt.local, got, tt.want)
		}
		if in := InProject(tt.root, tt.local); in != (tt.want != tt.hostDir || tt.local == tt.root) {
			t.Errorf("InProject(%q, %q) = %v", tt.root, tt.local, in)
		}
	}
}

// The setup's sandbox goes to a host with its paths under the home here
// as paths under the home there, and comes back whole on the host, its
// CODEX_HOMEs the host's; off stays off.
func TestSandboxThereAndHere(t *testing.T) {
	here := &sandbox.Policy{Bin: "/home/ann/.local/bin/codex", Homes: "/home/ann/.cache/batty/sandbox",
		Writable: []string{"/home/ann/.cache/go-build", "/opt/cache"}, Network: true,
		Deny: []string{"/home/ann/.local/state/batty/projects/p", "/run/user/1000"}, HideEnv: []string{"SSH_AUTH_SOCK"}}
	there := SandboxThere(here, "/home/ann")
	// The directories denied here are not the host's: it names its own.
	want := &sandbox.Policy{Bin: "~/.local/bin/codex", Writable: []string{"~/.cache/go-build", "/opt/cache"}, Network: true, HideEnv: []string{"SSH_AUTH_SOCK"}}
	if !reflect.DeepEqual(there, want) {
		t.Fatalf("SandboxThere = %+v, want %+v", there, want)
	}
	if here.Bin != "/home/ann/.local/bin/codex" || here.Writable[0] != "/home/ann/.cache/go-build" {
		t.Fatalf("SandboxThere changed its argument: %+v", here)
	}
	got := SandboxHere(there, "/home/bob", "/home/bob/.cache/batty/sandbox")
	want = &sandbox.Policy{Bin: "/home/bob/.local/bin/codex", Homes: "/home/bob/.cache/batty/sandbox",
		Writable: []string{"/home/bob/.cache/go-build", "/opt/cache"}, Network: true, HideEnv: []string{"SSH_AUTH_SOCK"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SandboxHere = %+v, want %+v", got, want)
	}
	if SandboxThere(nil, "/home/ann") != nil || SandboxHere(nil, "/home/bob", "/x") != nil {
		t.Fatal("sandbox: off did not stay off")
	}
}

// A host's project directory that holds the state directory there is
// refused: the agents working in the project there could write it.
func TestCheckProjectDir(t *testing.T) {
	for _, tc := range []struct {
		dir string
		ok  bool
	}{
		{"~", false},
		{"~/", false},
		{"~/.local", false},
		{"~/.local/state", false},
		{"~/.local/state/batty", false},
		{"~/src/p", true},
		{"~/.localx", true},
		{"~/.local/share", true},
		{"/home/u", true}, // the home there is not known here
		{"/srv/p", true},
	} {
		err := CheckProjectDir("gpu", tc.dir)
		if (err == nil) != tc.ok {
			t.Errorf("CheckProjectDir(%q) = %v, want ok %v", tc.dir, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "host gpu") {
			t.Errorf("CheckProjectDir(%q): %v does not name the host", tc.dir, err)
		}
	}
}
