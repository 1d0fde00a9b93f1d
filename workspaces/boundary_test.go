package workspaces

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The boundary: no git batty runs reads configuration or runs a program
// that an agent could have written in its worktree. The agent's command
// here touches a marker outside the worktree, as a nested repository's
// fsmonitor hook and clean filter: git runs them when it reads that
// repository's status, which it does for a gitlink it meets in status or
// a worktree diff.

// plantNested makes, in the worktree path, a repository of the agent's
// at rel, as variant says, whose configuration runs `touch marker`:
//
//   - "dir": git init, a file committed in it;
//   - "gitfile": its .git a file "gitdir: ../<name>.git" naming a git
//     directory beside it (also in the worktree);
//   - "empty": git init, nothing committed;
//
// and returns the directory git would record as a gitlink.
func plantNested(t *testing.T, f *fixture, path, rel, variant, marker string) string {
	t.Helper()
	sub := filepath.Join(path, rel)
	hook := "touch " + marker
	switch variant {
	case "dir", "empty":
		f.git(f.root, "init", "-q", "-b", "main", sub)
	case "gitfile":
		gitDir := sub + ".git"
		f.git(f.root, "init", "-q", "-b", "main", "--separate-git-dir", gitDir, sub)
		writeFile(t, filepath.Join(sub, ".git"), "gitdir: ../"+filepath.Base(gitDir)+"\n")
	default:
		t.Fatalf("unknown variant %q", variant)
	}
	if variant != "empty" {
		writeFile(t, filepath.Join(sub, "lib.go"), "package lib\n")
		f.git(sub, "add", "lib.go")
		userCommit(t, f.env, sub, "the agent's own history")
		// A clean filter runs when git must read lib.go to tell whether
		// it changed: its time changes, not its size.
		writeFile(t, filepath.Join(sub, ".gitattributes"), "*.go filter=agent\n")
		f.git(sub, "config", "filter.agent.clean", hook+"; cat")
		later := time.Now().Add(time.Hour)
		if err := os.Chtimes(filepath.Join(sub, "lib.go"), later, later); err != nil {
			t.Fatal(err)
		}
	}
	f.git(sub, "config", "core.fsmonitor", hook)
	return sub
}

// noMarker fails the test when the agent's command ran.
func noMarker(t *testing.T, marker, after string) {
	t.Helper()
	if exists(marker) {
		t.Fatalf("the agent's command ran outside the sandbox, after %s", after)
	}
}

// treePaths lists the paths of ref's tree, "<mode> <path>" lines.
func (f *fixture) treePaths(ref string) string {
	f.t.Helper()
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(f.git(f.top, "ls-tree", "-r", ref), "\n"), "\n") {
		info, path, _ := strings.Cut(l, "\t")
		mode, _, _ := strings.Cut(info, " ")
		b.WriteString(mode + " " + path + "\n")
	}
	return b.String()
}

func TestNestedRepositoryNeitherCommittedNorEntered(t *testing.T) {
	ops := map[string]func(ctx context.Context, f *fixture) error{
		"state": func(ctx context.Context, f *fixture) error {
			_, err := f.repo.State(ctx, "eng", "main")
			return err
		},
		"dirty": func(ctx context.Context, f *fixture) error {
			_, _, err := f.repo.Dirty(ctx, "eng")
			return err
		},
		"diff": func(ctx context.Context, f *fixture) error {
			return f.repo.Diff(ctx, "eng", "main", &bytes.Buffer{}, false)
		},
		"merge base": func(ctx context.Context, f *fixture) error {
			f.mainCommit("later.txt", "later\n")
			res, err := f.repo.MergeBase(ctx, "eng", "main")
			if err == nil && !res.Merged {
				// The nested repository, never committed, does not hold
				// the base back.
				return fmt.Errorf("MergeBase = %+v, want Merged", res)
			}
			return err
		},
		"second commit": func(ctx context.Context, f *fixture) error {
			writeFile(f.t, filepath.Join(f.repo.Path("eng"), "more.txt"), "more\n")
			c, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "more"})
			if err == nil && !c.Made {
				return fmt.Errorf("Commit = %+v, want a commit", c)
			}
			return err
		},
		"prune": func(ctx context.Context, f *fixture) error {
			_, err := f.repo.Prune(ctx, "eng", "main", true, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
			return err
		},
	}
	for _, variant := range []string{"dir", "gitfile", "empty"} {
		for _, rel := range []string{"sub", filepath.Join("deep", "er", "sub")} {
			for name, op := range ops {
				t.Run(variant+"/"+rel+"/"+name, func(t *testing.T) {
					f := newFixture(t, Options{})
					ctx := context.Background()
					path := f.ensure("eng")
					marker := filepath.Join(f.root, "marker")
					plantNested(t, f, path, rel, variant, marker)
					writeFile(t, filepath.Join(path, "top.txt"), "top\n")
					c, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "turn", MessageID: "m1"})
					if err != nil || !c.Made {
						t.Fatalf("Commit = %+v, %v; want a commit", c, err)
					}
					if want := []string{filepath.ToSlash(rel)}; !reflect.DeepEqual(c.Nested, want) {
						t.Fatalf("Committed.Nested = %q, want %q", c.Nested, want)
					}
					tree := f.treePaths(c.Head)
					if !strings.Contains(tree, "100644 top.txt\n") || strings.Contains(tree, "160000") ||
						strings.Contains(tree, " "+filepath.ToSlash(rel)+"\n") || strings.Contains(tree, " "+filepath.ToSlash(rel)+"/") {
						t.Fatalf("the commit's tree:\n%s\nwant top.txt and nothing of the nested repository", tree)
					}
					noMarker(t, marker, "the commit")
					if err := op(ctx, f); err != nil {
						t.Fatal(err)
					}
					noMarker(t, marker, name)
				})
			}
		}
	}
}

func TestProjectSubmoduleKeptAndNotEntered(t *testing.T) {
	// The project has a submodule (a gitlink and a .gitmodules); the agent
	// checks a repository of its own out there, and its .gitmodules asks
	// git to look into it (ignore = none) and to recurse.
	f := newFixture(t, Options{})
	ctx := context.Background()
	lib := strings.Repeat("1", 40)
	f.git(f.top, "update-index", "--add", "--cacheinfo", "160000,"+lib+",lib")
	writeFile(t, filepath.Join(f.top, ".gitmodules"), "[submodule \"lib\"]\n\tpath = lib\n\turl = ./lib\n")
	f.git(f.top, "add", ".gitmodules")
	userCommit(t, f.env, f.top, "a submodule")
	path := f.ensure("eng")
	marker := filepath.Join(f.root, "marker")
	if err := os.Remove(filepath.Join(path, "lib")); err != nil {
		t.Fatal(err)
	}
	plantNested(t, f, path, "lib", "dir", marker)
	writeFile(t, filepath.Join(path, ".gitmodules"), "[submodule \"lib\"]\n\tpath = lib\n\turl = ./lib\n\tignore = none\n\tfetchRecurseSubmodules = true\n")
	c, err := f.repo.Commit(ctx, CommitInfo{Agent: "eng", Subject: "turn"})
	if err != nil || !c.Made {
		t.Fatalf("Commit = %+v, %v", c, err)
	}
	if got := f.git(f.top, "rev-parse", c.Head+":lib"); strings.TrimSpace(got) != lib {
		t.Fatalf("the gitlink lib is %s, want it kept at %s", got, lib)
	}
	noMarker(t, marker, "the commit")
	if _, err := f.repo.State(ctx, "eng", "main"); err != nil {
		t.Fatal(err)
	}
	noMarker(t, marker, "State")
	if err := f.repo.Diff(ctx, "eng", "main", &bytes.Buffer{}, true); err != nil {
		t.Fatal(err)
	}
	noMarker(t, marker, "Diff")
	f.mainCommit("later.txt", "later\n")
	if _, err := f.repo.MergeBase(ctx, "eng", "main"); err != nil {
		t.Fatal(err)
	}
	noMarker(t, marker, "MergeBase")
}

func TestInheritedGitVariablesIgnored(t *testing.T) {
	// batty run from an agent's shell, or from a hook, inherits its GIT_*
	// variables: none of them reaches batty's git.
	for name, vars := range map[string]func(marker string) []string{
		"GIT_CONFIG_PARAMETERS": func(marker string) []string {
			return []string{"GIT_CONFIG_PARAMETERS='core.fsmonitor'='touch " + marker + "'"}
		},
		"GIT_CONFIG_COUNT": func(marker string) []string {
			return []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=touch " + marker}
		},
		"GIT_CONFIG_GLOBAL": func(marker string) []string {
			cfg := filepath.Join(filepath.Dir(marker), "agent.gitconfig")
			if err := os.WriteFile(cfg, []byte("[core]\n\tfsmonitor = touch "+marker+"\n"), 0o644); err != nil {
				panic(err)
			}
			return []string{"GIT_CONFIG_GLOBAL=" + cfg}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, Options{})
			marker := filepath.Join(f.root, "marker")
			env := append(append([]string(nil), f.env...), vars(marker)...)
			r, err := Open(context.Background(), Options{ProjectDir: f.top, WorktreesDir: filepath.Join(f.root, "state", "worktrees"),
				LockFile: filepath.Join(f.root, "state", "state", "git.lock"), Env: env})
			if err != nil {
				t.Fatal(err)
			}
			f.repo = r
			path := f.ensure("eng")
			writeFile(t, filepath.Join(path, "new.txt"), "new\n")
			if _, err := r.State(context.Background(), "eng", "main"); err != nil {
				t.Fatal(err)
			}
			f.commit("eng", "turn")
			noMarker(t, marker, "State and Commit")
		})
	}
}

func TestHarden(t *testing.T) {
	cfg := make([]string, 0, 2*len(safeConfig))
	for _, kv := range safeConfig {
		cfg = append(cfg, "-c", kv)
	}
	for _, tc := range []struct{ args, want []string }{
		{[]string{"status", "-z"}, []string{"status", "--ignore-submodules=all", "-z"}},
		{[]string{"diff", "--stat", "a...b", "--"}, []string{"diff", "--ignore-submodules=all", "--no-ext-diff", "--no-textconv", "--stat", "a...b", "--"}},
		{[]string{"-c", "x.y=1", "diff-files"}, []string{"-c", "x.y=1", "diff-files", "--ignore-submodules=all"}},
		{[]string{"diff-index", "HEAD"}, []string{"diff-index", "--ignore-submodules=all", "HEAD"}},
		{[]string{"add", "--all"}, []string{"add", "--all"}},
		{[]string{"blame", "--porcelain", "HEAD", "--", "f"}, []string{"blame", "--no-textconv", "--porcelain", "HEAD", "--", "f"}},
		{[]string{"--version"}, []string{"--version"}},
		{nil, nil},
	} {
		got := harden(tc.args)
		if want := append(append([]string(nil), cfg...), tc.want...); !reflect.DeepEqual(got, want) {
			t.Errorf("harden(%q) = %q, want %q", tc.args, got[len(cfg):], tc.want)
		}
	}
	for _, want := range []string{"core.fsmonitor=false", "core.hooksPath=/dev/null", "submodule.recurse=false", "protocol.allow=never"} {
		if !strings.Contains(strings.Join(cfg, " "), want) {
			t.Errorf("safeConfig lacks %s", want)
		}
	}
}

func TestGitEnv(t *testing.T) {
	got := gitEnv([]string{"PATH=/bin", "GIT_DIR=/x", "GIT_CONFIG_PARAMETERS='a.b'='c'", "GIT_EXEC_PATH=/agent", "HOME=/h", "GITX=keep"},
		[]string{"GIT_AUTHOR_NAME=eng"})
	want := []string{"PATH=/bin", "HOME=/h", "GITX=keep", "GIT_AUTHOR_NAME=eng", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("gitEnv = %q, want %q", got, want)
	}
}

func TestLsEntry(t *testing.T) {
	sha := strings.Repeat("ab", 20)
	for _, tc := range []struct {
		entry string
		kind  int
		path  string
	}{
		{"sub/", entryNested, "sub"},
		{"deep/er/sub/", entryNested, "deep/er/sub"},
		{"160000 " + sha + " 0\tlib", entryGitlink, "lib"},
		{"160000 " + sha + " 0\tlib dir/x", entryGitlink, "lib dir/x"},
		{"100644 " + sha + " 0\tREADME", entryOther, ""},
		{"README", entryOther, ""},
		{"160000 not-hex 0\tlib", entryOther, ""},
		// A nested repository named like a gitlink entry is a nested
		// repository: the slash decides first.
		{"160000 " + sha + " 0\tx/", entryNested, "160000 " + sha + " 0\tx"},
	} {
		if kind, path := lsEntry(tc.entry); kind != tc.kind || path != tc.path {
			t.Errorf("lsEntry(%q) = %d, %q; want %d, %q", tc.entry, kind, path, tc.kind, tc.path)
		}
	}
}

func TestAddPathspecsAndNulList(t *testing.T) {
	if got := addPathspecs([]string{"a b"}, []string{"lib"}); got != ".\x00:(exclude,literal)a b\x00:(exclude,literal)lib\x00" {
		t.Fatalf("addPathspecs = %q", got)
	}
	var got []string
	l := &nulList{each: func(e string) { got = append(got, e) }}
	for _, chunk := range []string{"x/y\x00su", "b/\x00f", "ile\x00d/e/\x00"} {
		if _, err := l.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.err(); err != nil || !reflect.DeepEqual(got, []string{"x/y", "sub/", "file", "d/e/"}) {
		t.Fatalf("nulList = %q, %v", got, err)
	}
	if _, err := l.Write([]byte("cut")); err != nil || l.err() == nil {
		t.Fatal("an unterminated entry is not an error")
	}
}
