package codex

import (
	"os"
	"path/filepath"
)

// Version is the Codex CLI version batty is built and tested against (npm
// @openai/codex). scripts/test.sh, scripts/demo.sh and scripts/bench.sh
// install the same version (their copy is checked by a test).
const Version = "0.169.0"

// EnvCache names the environment variable that overrides CacheDir.
const EnvCache = "BATTY_CODEX_CACHE"

// CacheDir returns the directory the scripts install pinned Codex CLIs
// into, one per version: $BATTY_CODEX_CACHE when set, else
// ~/.cache/batty-codex; "" when neither is known (no home directory).
func CacheDir() string {
	if d := os.Getenv(EnvCache); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".cache", "batty-codex")
}

// PinnedDir returns where the pinned version is installed,
// CacheDir()/Version (its npm prefix), or "" when CacheDir is unknown.
func PinnedDir() string {
	c := CacheDir()
	if c == "" {
		return ""
	}
	return filepath.Join(c, Version)
}

// PinnedLauncher returns the npm launcher of the pinned install,
// PinnedDir()/node_modules/.bin/codex, or "" when PinnedDir is unknown. It
// does not say whether the file exists.
func PinnedLauncher() string {
	d := PinnedDir()
	if d == "" {
		return ""
	}
	return filepath.Join(d, "node_modules", ".bin", "codex")
}
