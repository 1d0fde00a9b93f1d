package team

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// templates holds the example team written by `batty init`. The repository's
// top-level team.yaml and prompts/ are byte-for-byte copies (a test keeps
// them in sync).
//
//go:embed templates
var templates embed.FS

// templateFiles lists the template files, relative to templates/ and to the
// target directory, in the order they are written.
var templateFiles = []string{
	"team.yaml",
	"prompts/architect.md",
	"prompts/manager.md",
	"prompts/engineer.md",
}

// WriteTemplate writes the example team into dir: dir/team.yaml (a commented
// team file with the roles architect, manager and engineer, the latter with
// two instances) and dir/prompts/{architect,manager,engineer}.md. With
// worktrees (dir is in a git repository with a commit) the engineers get a
// git worktree each (workspace: worktree); else they work in the project
// checkout, the key commented out.
//
// Unless force is set, nothing is written when any of those files already
// exists; the error then names every existing file. Missing directories are
// created with mode 0755 and files are written with mode 0644 (each file is
// written to a temporary file and renamed into place). The returned paths
// are the written files, joined onto dir, in the order listed above.
func WriteTemplate(dir string, force, worktrees bool) ([]string, error) {
	if !force {
		var existing []string
		for _, name := range templateFiles {
			p := filepath.Join(dir, filepath.FromSlash(name))
			_, err := os.Lstat(p)
			switch {
			case err == nil:
				existing = append(existing, p)
			case !errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("checking %s: %w", p, err)
			}
		}
		if len(existing) > 0 {
			return nil, fmt.Errorf("refusing to overwrite existing %s (use --force to overwrite)", strings.Join(existing, ", "))
		}
	}
	var written []string
	for _, name := range templateFiles {
		data, err := templates.ReadFile("templates/" + name)
		if err != nil {
			return written, fmt.Errorf("reading embedded template %s: %w", name, err)
		}
		if name == "team.yaml" && worktrees {
			if data, err = withWorktrees(data); err != nil {
				return written, err
			}
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := mkdirAll(filepath.Dir(p)); err != nil {
			return written, err
		}
		if err := writeFile(p, data); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}

// engineerWorkspace is the template's line of the engineer's workspace,
// commented out, and what withWorktrees makes of it.
const (
	engineerWorkspace = "    # workspace: worktree          # worktree (a git worktree each) | shared (the project checkout)\n"
	engineerWorktree  = "    workspace: worktree            # worktree (a git worktree each) | shared (the project checkout)\n"
)

// withWorktrees is the template team.yaml with the engineer's workspace
// key set to worktree. It is a pure function.
func withWorktrees(data []byte) ([]byte, error) {
	if strings.Count(string(data), engineerWorkspace) != 1 {
		return nil, errors.New("the embedded template lacks the engineer's workspace line")
	}
	return []byte(strings.Replace(string(data), engineerWorkspace, engineerWorktree, 1)), nil
}

// mkdirAll creates dir and its missing parents with mode 0755, regardless
// of the umask.
func mkdirAll(dir string) error {
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("creating directory %s: not a directory", dir)
		}
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return fmt.Errorf("creating directory: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("setting mode of %s: %w", dir, err)
	}
	return nil
}

// writeFile atomically replaces path with data, mode 0644.
func writeFile(path string, data []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
