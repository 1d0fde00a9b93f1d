package writable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/team"
)

// ErrProgramWritable is wrapped by the error of ProgramsError: a program
// the team file names lives where an agent may write.
var ErrProgramWritable = errors.New("a program the team file names lives where an agent may write")

// maxLinks bounds the symbolic links followed on the way to one program,
// as the kernel's own limit does.
const maxLinks = 40

// Finding is a program the team file names (team.Program) that an agent
// could replace: the program, a directory or link on the way to it, a
// PATH directory searched before the one that holds it, or a file named
// by one of its arguments lies in a Root.
type Finding struct {
	Program team.Program
	// Path is the program as found (its path, or the PATH directory or the
	// argument in question).
	Path string
	// Via is the symbolic link on the way to Path through which it leads
	// into Root; "" when Path as written lies there.
	Via string
	// Arg is the index in Program.Argv of the argument in question; 0 for
	// the program itself.
	Arg int
	// PathDir is set when At is a PATH directory searched before the
	// program's own (or, the program being found nowhere, any): an agent
	// may put a program of that name there.
	PathDir bool
	// Root is the root At lies in.
	Root Root
}

// Problem is f as a problem of cfg's team file, with the fix.
func (f Finding) Problem(cfg *team.Config) team.Problem {
	p := f.Program
	where := fmt.Sprintf("%s (%s)", f.Root.Dir, f.Root.Why)
	via := ""
	if f.Via != "" {
		via = fmt.Sprintf(" (through the symbolic link %s)", f.Via)
	}
	var msg, hint string
	name := filepath.Base(p.Argv[0])
	switch {
	case f.PathDir:
		msg = fmt.Sprintf("%s looks %q up on PATH, and PATH directory %s%s lies in %s: an agent may put a %s of its own there, which batty would run as you, outside any sandbox",
			p.Key, p.Argv[0], f.Path, via, where, name)
		hint = fmt.Sprintf("remove %s from PATH, or name the program by its absolute path outside every directory an agent may write", f.Path)
	case f.Arg > 0:
		msg = fmt.Sprintf("%s hands %s (argument %d) to %s; it lies%s in %s: an agent may rewrite it, and batty would run what it wrote as you, outside any sandbox",
			p.Key, f.Path, f.Arg, p.Argv[0], via, where)
		hint = "move it outside the project and every directory an agent may write, e.g. to ~/.config/batty/" + filepath.Base(f.Path) + ", and name that path"
	default:
		msg = fmt.Sprintf("%s runs %s, which lies%s in %s: an agent may rewrite it, and batty would run what it wrote as you, outside any sandbox",
			p.Key, f.Path, via, where)
		hint = "move it outside the project and every directory an agent may write, e.g. to ~/.config/batty/" + name + ", and name that path"
		if strings.HasSuffix(p.Key, "codex.bin") {
			hint = "install codex outside the project and every directory an agent may write (npm install -g @openai/codex) and set codex.bin to its path, or leave codex.bin out"
		}
	}
	return cfg.ProblemAt(p.Line, msg, hint)
}

// ProgramsError is the error for findings of cfg's team file (nil for
// none): a *team.ValidationError of their problems, wrapped with
// ErrProgramWritable.
func ProgramsError(cfg *team.Config, findings []Finding) error {
	if len(findings) == 0 {
		return nil
	}
	verr := &team.ValidationError{}
	for _, f := range findings {
		verr.Problems = append(verr.Problems, f.Problem(cfg))
	}
	return fmt.Errorf("%w:\n%w", ErrProgramWritable, verr)
}

// Resolve returns roots with, after each, the same directory with its
// symbolic links resolved when that differs (a root reached through a
// link is also where the link leads). A root that cannot be resolved (it
// does not exist yet) is kept as written.
func Resolve(roots []Root) []Root {
	out := make([]Root, 0, len(roots))
	for _, r := range roots {
		out = append(out, r)
		if real, err := filepath.EvalSymlinks(r.Dir); err == nil && real != r.Dir {
			out = append(out, Root{Dir: real, Why: r.Why})
		}
	}
	return out
}

// CheckPrograms returns a finding for each program of progs that an agent
// could replace, roots (as Roots returns them) being where agents may
// write and pathEnv the PATH batty runs with:
//
//   - the program: a path (made absolute against its Dir) is walked one
//     element at a time as exec would, following symbolic links; the path
//     as written, each directory and link on the way, and where each link
//     leads must lie outside every root. A name is looked up on pathEnv
//     as exec.LookPath does (relative PATH entries skipped, as Go refuses
//     them): every PATH directory searched up to the one that holds it
//     must lie outside, then the program found is walked as a path.
//   - each further argument that names an existing file, not a
//     directory (made absolute against Dir), is walked the same way.
//
// A Remote program (a codex.bin resolved on another host) is checked as
// written only. The file system is read, never written.
func CheckPrograms(progs []team.Program, roots []Root, pathEnv string) []Finding {
	roots = Resolve(roots)
	var out []Finding
	for _, p := range progs {
		if len(p.Argv) == 0 || p.Argv[0] == "" {
			continue
		}
		prog := p.Argv[0]
		if p.Remote {
			if strings.ContainsRune(prog, '/') {
				if r, ok := Within(absIn(p.Dir, prog), roots); ok {
					out = append(out, Finding{Program: p, Path: absIn(p.Dir, prog), Root: r})
				}
			}
			continue
		}
		if !strings.ContainsRune(prog, '/') {
			found, f, bad := lookPath(prog, pathEnv, roots)
			if bad {
				f.Program = p
				out = append(out, f)
				continue
			}
			if found == "" {
				continue // not found: running it fails, nothing runs
			}
			prog = found
		}
		prog = absIn(p.Dir, prog)
		if via, r, ok := reach(prog, roots); ok {
			out = append(out, Finding{Program: p, Path: prog, Via: via, Root: r})
		}
		for i, a := range p.Argv[1:] {
			if a == "" || strings.HasPrefix(a, "-") {
				continue
			}
			path := absIn(p.Dir, a)
			if st, err := os.Stat(path); err != nil || st.IsDir() {
				continue // names no file
			}
			if via, r, ok := reach(path, roots); ok {
				out = append(out, Finding{Program: p, Path: path, Via: via, Arg: i + 1, Root: r})
			}
		}
	}
	return out
}

// absIn is path made absolute against dir, cleaned.
func absIn(dir, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(dir, path)
}

// lookPath looks name up on pathEnv as exec.LookPath does. It returns the
// executable found ("" for none) or, bad set, the finding of the first
// PATH directory searched that an agent could put name into.
func lookPath(name, pathEnv string, roots []Root) (found string, f Finding, bad bool) {
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		dir = filepath.Clean(dir)
		if via, r, ok := reach(dir, roots); ok {
			return "", Finding{Path: dir, Via: via, PathDir: true, Root: r}, true
		}
		cand := filepath.Join(dir, name)
		if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return cand, Finding{}, false
		}
	}
	return "", Finding{}, false
}

// reach walks the absolute path p one element at a time, as the kernel
// resolves it, following symbolic links, and reports whether a path on
// the way — a directory, a link, where a link leads, p itself — lies in
// one of roots, that root, and via, the last link followed before ("" for
// none: p as written lies there). What does not exist is taken as
// written from there on. A loop of links (more than maxLinks) ends the
// walk: exec fails on it too.
func reach(p string, roots []Root) (via string, root Root, ok bool) {
	rest := strings.Split(filepath.Clean(p), "/")
	cur := "/"
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur has no links left: .. is its parent
			continue
		}
		next := filepath.Join(cur, c)
		if _, ok := Within(next, roots); ok {
			// Name the first root listed that holds the whole path
			// (the project before /tmp, which holds it).
			r, _ := Within(filepath.Join(append([]string{next}, rest...)...), roots)
			if r.Dir == "" {
				r, _ = Within(next, roots)
			}
			return via, r, true
		}
		st, err := os.Lstat(next)
		if err != nil {
			r, ok := Within(filepath.Join(append([]string{next}, rest...)...), roots)
			return via, r, ok
		}
		if st.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", Root{}, false
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", Root{}, false
		}
		if !filepath.IsAbs(target) {
			target = cur + "/" + target // walked element by element: not cleaned here
		}
		via = next
		rest = append(strings.Split(target, "/"), rest...)
		cur = "/"
	}
	return "", Root{}, false
}

// CheckTeam refuses a team whose named programs an agent could replace:
// CheckPrograms of cfg's programs, with the roots of cfg under l and this
// environment's $TMPDIR and $PATH (getenv, e.g. os.Getenv), as an error
// from ProgramsError; nil when there is none. `batty validate`, `batty
// start`, `batty restart` and the daemon's start all call it.
func CheckTeam(cfg *team.Config, l project.Layout, getenv func(string) string) error {
	roots := Roots(cfg, l, Env{TmpDir: getenv("TMPDIR")})
	return ProgramsError(cfg, CheckPrograms(cfg.Programs(), roots, getenv("PATH")))
}
