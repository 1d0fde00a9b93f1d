package hosts

import "testing"

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
