package writable

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/team"
)

// tree makes a project directory (the one root) and a directory outside
// it, with programs, links and PATH directories in both.
func tree(t *testing.T) (proj, out string) {
	t.Helper()
	dir := t.TempDir()
	proj, out = filepath.Join(dir, "proj"), filepath.Join(dir, "outside")
	for _, d := range []string{proj + "/bin", proj + "/tools", out + "/bin", out + "/empty"} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{proj + "/alert.sh", proj + "/bin/prog", proj + "/tools/x", out + "/alert.sh", out + "/bin/prog"} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		out + "/link.sh":    proj + "/alert.sh", // outside, leading inside
		out + "/rel.sh":     "../proj/alert.sh", // the same, relative
		out + "/dirlink":    proj + "/tools",    // a directory on the way
		proj + "/outlink":   out + "/bin",       // inside, leading outside
		out + "/chain":      proj + "/hop",      // through a link inside
		proj + "/hop":       out + "/alert.sh",
		out + "/loop":       out + "/loop2",
		out + "/loop2":      out + "/loop",
		out + "/binlink":    proj + "/bin", // a PATH directory leading inside
		out + "/fine.sh":    out + "/alert.sh",
		out + "/bin/linked": out + "/alert.sh",
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return proj, out
}

func TestCheckPrograms(t *testing.T) {
	proj, out := tree(t)
	roots := []Root{{Dir: proj, Why: "the project checkout"}}
	type want struct {
		path    string
		via     string
		arg     int
		pathDir bool
	}
	for _, tc := range []struct {
		name   string
		argv   []string
		remote bool
		path   string
		want   *want
	}{
		{"a program in the project", []string{proj + "/alert.sh"}, false, "", &want{path: proj + "/alert.sh"}},
		{"a relative program", []string{"alert.sh"}, false, "", nil}, // a name: looked up on (an empty) PATH
		{"a program outside", []string{out + "/alert.sh", "--to", "me"}, false, "", nil},
		{"a link outside leading inside", []string{out + "/link.sh"}, false, "", &want{path: out + "/link.sh", via: out + "/link.sh"}},
		{"a relative link leading inside", []string{out + "/rel.sh"}, false, "", &want{path: out + "/rel.sh", via: out + "/rel.sh"}},
		{"a directory link on the way", []string{out + "/dirlink/x"}, false, "", &want{path: out + "/dirlink/x", via: out + "/dirlink"}},
		{"inside as written, outside resolved", []string{proj + "/outlink/prog"}, false, "", &want{path: proj + "/outlink/prog"}},
		{"through a link inside", []string{out + "/chain"}, false, "", &want{path: out + "/chain", via: out + "/chain"}},
		{"a link outside leading outside", []string{out + "/fine.sh"}, false, "", nil},
		{"a loop of links", []string{out + "/loop"}, false, "", nil},
		{"a missing program inside", []string{proj + "/gone/alert.sh"}, false, "", &want{path: proj + "/gone/alert.sh"}},
		{"an argument inside", []string{"/bin/sh", proj + "/alert.sh"}, false, "", &want{path: proj + "/alert.sh", arg: 1}},
		{"an argument relative to the team file", []string{"/bin/sh", "-e", "alert.sh"}, false, "", &want{path: proj + "/alert.sh", arg: 2}},
		{"a shell's script that names a file", []string{"/bin/sh", "-c", "./alert.sh"}, false, "", &want{path: proj + "/alert.sh", arg: 2}},
		{"an argument that names no file", []string{"/bin/sh", "-c", "echo hi"}, false, "", nil},
		{"an argument outside", []string{"/bin/sh", out + "/alert.sh"}, false, "", nil},
		{"found on PATH outside", []string{"prog"}, false, out + "/bin:" + proj + "/bin", nil},
		{"found on PATH inside", []string{"prog"}, false, proj + "/bin:" + out + "/bin", &want{path: proj + "/bin", pathDir: true}},
		{"a PATH directory before it, inside", []string{"prog"}, false, out + "/empty:" + proj + "/tools:" + out + "/bin", &want{path: proj + "/tools", pathDir: true}},
		{"a PATH directory leading inside", []string{"prog"}, false, out + "/binlink:" + out + "/bin", &want{path: out + "/binlink", via: out + "/binlink", pathDir: true}},
		{"not on PATH, a PATH directory inside", []string{"nowhere"}, false, out + "/bin:" + proj + "/tools", &want{path: proj + "/tools", pathDir: true}},
		{"relative PATH entries are skipped", []string{"prog"}, false, "bin:" + out + "/bin", nil},
		{"found through a link on PATH outside", []string{"linked"}, false, out + "/bin", nil},
		{"remote: as written only", []string{proj + "/codex"}, true, "", &want{path: proj + "/codex"}},
		{"remote: a name", []string{"codex"}, true, proj + "/bin", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := team.Program{Key: "on_alert", Argv: tc.argv, Dir: proj, Remote: tc.remote}
			got := CheckPrograms([]team.Program{p}, roots, tc.path)
			if tc.want == nil {
				if len(got) != 0 {
					t.Fatalf("findings %+v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("findings %+v, want one", got)
			}
			f := got[0]
			if f.Path != tc.want.path || f.Via != tc.want.via || f.Arg != tc.want.arg || f.PathDir != tc.want.pathDir || f.Root.Dir != proj {
				t.Errorf("finding %+v, want %+v", f, *tc.want)
			}
		})
	}
}

// A root reached through a link is also where the link leads.
func TestCheckProgramsResolvesRoots(t *testing.T) {
	proj, out := tree(t)
	link := filepath.Join(t.TempDir(), "proj")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	p := team.Program{Key: "on_alert", Argv: []string{proj + "/alert.sh"}}
	if got := CheckPrograms([]team.Program{p}, []Root{{Dir: link}}, ""); len(got) != 1 {
		t.Fatalf("findings %+v, want one", got)
	}
	p.Argv = []string{out + "/alert.sh"}
	if got := CheckPrograms([]team.Program{p}, []Root{{Dir: link}}, ""); len(got) != 0 {
		t.Fatalf("findings %+v, want none", got)
	}
}

// The refusal names the team file's line, the program, the root and why,
// and the fix.
func TestProgramsErrorSaysTheFix(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alert.sh"), []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "team.yaml")
	cfg, err := team.Parse(path, []byte("name: t\non_alert: [./alert.sh]\nroles:\n  - name: a\n    codex:\n      bin: ./codex\n"))
	if err != nil {
		t.Fatal(err)
	}
	// The project is named, not /tmp, which holds it too.
	roots := []Root{{Dir: dir, Why: "the project checkout"}, {Dir: filepath.Dir(dir), Why: "writable in role a's workspace-write sandbox"}}
	err = ProgramsError(cfg, CheckPrograms(cfg.Programs(), roots, ""))
	if !errors.Is(err, ErrProgramWritable) {
		t.Fatalf("err = %v, want ErrProgramWritable", err)
	}
	var verr *team.ValidationError
	if !errors.As(err, &verr) || len(verr.Problems) != 2 {
		t.Fatalf("err = %v, want two problems", err)
	}
	for i, want := range []string{
		path + ":2: on_alert runs " + dir + "/alert.sh, which lies in " + dir + " (the project checkout): an agent may rewrite it",
		path + ":6: roles.a.codex.bin runs " + dir + "/codex, which lies in " + dir + " (the project checkout)",
	} {
		if got := verr.Problems[i].String(); !strings.HasPrefix(got, want) {
			t.Errorf("problem %d = %q\nwant prefix %q", i, got, want)
		}
	}
	if !strings.Contains(verr.Problems[0].Hint, "~/.config/batty/alert.sh") || !strings.Contains(verr.Problems[1].Hint, "npm install -g @openai/codex") {
		t.Errorf("hints %q, %q", verr.Problems[0].Hint, verr.Problems[1].Hint)
	}
	if ProgramsError(cfg, nil) != nil {
		t.Error("no findings, an error")
	}
}
