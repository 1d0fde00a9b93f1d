package main

import (
	"testing"

	"github.com/battyhq/batty/blame"
)

func TestParseBlameArg(t *testing.T) {
	for _, tc := range []struct {
		arg, path string
		rg        blame.Range
		bad       bool
	}{
		{"a.go", "a.go", blame.Range{}, false},
		{"a.go:12", "a.go", blame.Range{From: 12, To: 12}, false},
		{"dir/a.go:3-7", "dir/a.go", blame.Range{From: 3, To: 7}, false},
		{"c:/x", "c:/x", blame.Range{}, false},
		{"a:b.go", "a:b.go", blame.Range{}, false},
		{":12", ":12", blame.Range{}, false},
		{"a.go:+3", "a.go:+3", blame.Range{}, false},
		{"a.go:0", "", blame.Range{}, true},
		{"a.go:7-3", "", blame.Range{}, true},
		{"a.go:3-x", "", blame.Range{}, true},
	} {
		path, rg, err := parseBlameArg(tc.arg)
		if (err != nil) != tc.bad || !tc.bad && (path != tc.path || rg != tc.rg) {
			t.Errorf("parseBlameArg(%q) = %q %v %v", tc.arg, path, rg, err)
		}
	}
}

func TestRepoPath(t *testing.T) {
	for _, tc := range []struct{ top, cwd, path, want string }{
		{"/p", "/p", "a.go", "a.go"},
		{"/p", "/p/sub", "a.go", "sub/a.go"},
		{"/p", "/p/sub", "../b.go", "b.go"},
		{"/p", "/elsewhere", "sub/a.go", "sub/a.go"},
		{"/p", "/p", "/p/sub/a.go", "sub/a.go"},
		{"/p", "/p", "/other/a.go", "/other/a.go"},
		{"/p", "", "a.go", "a.go"},
	} {
		if got := repoPath(tc.top, tc.cwd, tc.path); got != tc.want {
			t.Errorf("repoPath(%q, %q, %q) = %q, want %q", tc.top, tc.cwd, tc.path, got, tc.want)
		}
	}
}
