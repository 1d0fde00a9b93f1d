package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/battyhq/batty/codex"
)

// ErrNoCodex is wrapped by FindCodex when no Codex CLI was found.
var ErrNoCodex = errors.New("the Codex CLI is not installed")

// FindCodex returns the Codex CLI the demo runs: bin when given (a path, or
// a name on PATH), else the pinned install (codex.PinnedLauncher, where scripts/demo.sh
// and scripts/test.sh install it) when it is there,
// else `codex` on PATH — checked the way batty checks every agent's
// binary (codex.ResolveBinary: an npm launcher must have its native
// binary). The error wraps ErrNoCodex and says how to get the CLI.
func FindCodex(bin string) (string, error) {
	if bin == "" {
		if p := codex.PinnedLauncher(); p != "" && isFile(p) {
			bin = p
		} else {
			bin = codex.DefaultBinary
		}
	}
	if _, err := codex.ResolveBinary(bin); err != nil {
		return "", fmt.Errorf("%w (%w)\n%s", ErrNoCodex, err, InstallHint)
	}
	if !strings.ContainsRune(bin, '/') {
		p, err := exec.LookPath(bin)
		if err != nil {
			return "", fmt.Errorf("%w: %w\n%s", ErrNoCodex, err, InstallHint)
		}
		bin = p
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", bin, err)
	}
	return abs, nil
}

// InstallHint says how to get the Codex CLI the demo needs.
const InstallHint = `Get it with one of:
  scripts/demo.sh                           # from a batty checkout: installs it into ~/.cache/batty-codex and runs the demo
  npm install -g @openai/codex@` + codex.Version + `     # then run batty demo again
(No OpenAI account is needed for the demo.)`

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// codexVersion returns what `codex --version` prints, or a note that it
// could not say.
func codexVersion(ctx context.Context, bin, home string) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
	out, err := cmd.Output()
	if err != nil {
		return fmt.Sprintf("version unknown: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// sandboxWorks reports whether Codex's sandbox runs on this machine (it
// needs kernel features some containers lack): `codex sandbox -- true`.
func sandboxWorks(ctx context.Context, bin, home string) bool {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "sandbox", "--", "true")
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
	return cmd.Run() == nil
}
