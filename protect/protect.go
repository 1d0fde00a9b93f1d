// Package protect names the paths of a repository that tools run or obey
// by themselves once a branch reaches a checkout: agents' configuration and
// instructions (.codex/, AGENTS.md), CI workflows, editor tasks, direnv's
// .envrc, git hook directories and attributes. The merge queue holds every
// landing that changes one of them for the human's review, whatever the
// team's review setting says (see package landing).
//
// A pattern is written as in .gitignore, a subset of it:
//
//   - components are separated by "/"; "*", "?" and "[…]" match within
//     one component (path.Match), "**" is not supported;
//   - a pattern with a "/" at its start or in its middle is anchored at the
//     repository's top level; any other matches a name at any depth;
//   - a trailing "/" only says that the pattern names a directory (it
//     matches the same paths: everything below, and an entry of that name
//     that replaces the directory, such as a symbolic link).
//
// A path matches a pattern when it, or one of its parent directories,
// matches; a path that sits where an anchored pattern's parent directory
// would be (a file or link named .github, against .github/workflows/)
// matches too, since it can stand in for the directory. Matching is made
// for the file systems a checkout may live on: letters' case is ignored
// (macOS and Windows ignore it), the code points that macOS ignores in a
// name (zero-width and direction marks) are dropped, and trailing dots
// and spaces of a name (which Windows drops) too. Every rule can only make
// more paths match.
package protect

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// MaxPattern bounds a pattern's length in bytes.
const MaxPattern = 256

// Defaults returns the default protected patterns, a new slice each call.
// docs/config.md says why each is there.
func Defaults() []string {
	return []string{
		// Agents' configuration and instructions.
		".codex/", ".agents/", "AGENTS.md", "AGENTS.override.md",
		".claude/", "CLAUDE.md", ".mcp.json",
		".cursor/", ".cursorrules", ".gemini/", "GEMINI.md",
		// CI that runs on a push, with the repository's secrets.
		".github/", ".gitlab-ci.yml", ".gitlab/", ".circleci/", ".buildkite/",
		".travis.yml", "azure-pipelines.yml", "bitbucket-pipelines.yml",
		"Jenkinsfile", ".drone.yml", ".woodpecker/", ".woodpecker.yml",
		// The shell's environment on entering a directory.
		".envrc", ".env", "mise*.toml", ".mise*.toml", ".mise/",
		// Editors that run the project's tasks and settings on opening it.
		".vscode/", "*.code-workspace", ".idea/", ".zed/",
		".devcontainer/", ".devcontainer.json",
		".nvim.lua", ".nvimrc", ".exrc", ".dir-locals.el",
		// Git: hooks, drivers, submodules, LFS.
		".gitattributes", ".gitmodules", ".lfsconfig",
		".githooks/", ".git-hooks/", ".husky/",
		".pre-commit-config.yaml", "lefthook*", ".lefthook*",
		// batty's own team file.
		"/team.yaml", "/.batty/",
	}
}

// pattern is one compiled pattern.
type pattern struct {
	parts    []string // normalized components, each a path.Match pattern
	anchored bool
}

// Set is a compiled list of patterns. The zero Set matches nothing.
type Set struct {
	pats []pattern
}

// Check reports what is wrong with p as a protected pattern, nil when
// nothing is. It is a pure function.
func Check(p string) error {
	_, err := compile(p)
	return err
}

// Compile compiles patterns into a Set; the error names the first invalid
// one and why. It is a pure function.
func Compile(patterns []string) (Set, error) {
	s := Set{pats: make([]pattern, 0, len(patterns))}
	for _, p := range patterns {
		c, err := compile(p)
		if err != nil {
			return Set{}, fmt.Errorf("protected path %.80q: %w", p, err)
		}
		s.pats = append(s.pats, c)
	}
	return s, nil
}

// compile parses one pattern. Pure.
func compile(p string) (pattern, error) {
	switch {
	case strings.TrimSpace(p) == "":
		return pattern{}, errors.New("it is empty")
	case len(p) > MaxPattern:
		return pattern{}, fmt.Errorf("it is longer than %d bytes", MaxPattern)
	case !utf8.ValidString(p):
		return pattern{}, errors.New("it is not valid UTF-8")
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return pattern{}, errors.New("it contains a control character")
	case strings.Contains(p, `\`):
		return pattern{}, errors.New(`it contains "\": write paths with "/"`)
	case strings.Contains(p, "**"):
		return pattern{}, errors.New(`"**" is not supported: a pattern without "/" (but a trailing one) matches at any depth`)
	}
	body := strings.TrimSuffix(p, "/")
	anchored := strings.HasPrefix(body, "/")
	body = strings.TrimPrefix(body, "/")
	anchored = anchored || strings.Contains(body, "/")
	if body == "" {
		return pattern{}, errors.New("it names the whole repository")
	}
	var parts []string
	for part := range strings.SplitSeq(body, "/") {
		switch part {
		case "":
			return pattern{}, errors.New(`it contains "//"`)
		case ".", "..":
			return pattern{}, fmt.Errorf("it contains %q", part)
		}
		n := normalize(part)
		if _, err := path.Match(n, ""); err != nil {
			return pattern{}, fmt.Errorf("component %.60q: %w", part, err)
		}
		parts = append(parts, n)
	}
	return pattern{parts: parts, anchored: anchored}, nil
}

// Match reports whether the repository path p ("/"-separated, relative to
// the top level, as git prints it) is protected by s (see the package
// documentation). It is a pure function.
func (s Set) Match(p string) bool {
	if len(s.pats) == 0 {
		return false
	}
	var comps []string
	for c := range strings.SplitSeq(p, "/") {
		if c != "" {
			comps = append(comps, normalize(c))
		}
	}
	for _, pat := range s.pats {
		if pat.match(comps) {
			return true
		}
	}
	return false
}

// match reports whether the path of normalized components comps matches
// pat. Pure.
func (pat pattern) match(comps []string) bool {
	if !pat.anchored {
		// One component, at any depth: the path or a parent directory.
		for _, c := range comps {
			if ok, _ := path.Match(pat.parts[0], c); ok {
				return true
			}
		}
		return false
	}
	// Anchored: the path lies at or below the pattern, or (a shorter path)
	// sits where one of the pattern's parent directories would be.
	n := min(len(comps), len(pat.parts))
	if n == 0 {
		return false
	}
	for i := range n {
		if ok, _ := path.Match(pat.parts[i], comps[i]); !ok {
			return false
		}
	}
	return true
}

// normalize is a path component as the file systems a checkout may live
// on see it: lower case, without the code points macOS ignores in names,
// without trailing dots and spaces (which Windows drops). Pure.
func normalize(c string) string {
	c = strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, c)
	if t := strings.TrimRight(c, ". "); t != "" && t != c && c != "." && c != ".." {
		c = t
	}
	return strings.ToLower(c)
}

// hfsIgnorable reports whether macOS's HFS+ ignores r in a file name (the
// list git checks for ".git", utf8.c is_hfs_dotgit).
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}
