package scriptedmodel

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/battyhq/batty/codex"
)

// Model is the model slug the written CODEX_HOME asks for. It is one the
// Codex CLI 0.169.0 knows, so it uses its built-in model metadata and
// tools (exec_command among them) without a warning; the server answers
// whatever the slug.
const Model = "gpt-5.5"

// ProviderID names the model provider in the written config.toml.
const ProviderID = "batty-scripted"

// ConfigTOML returns a Codex CLI config.toml that selects a custom model
// provider with base_url baseURL (the server's URL) and wire_api
// "responses" — no OpenAI login or API key is needed — and turns off
// everything that would reach the network: update checks, analytics, web
// search, plugins, apps, websockets and retries (the server answers at
// once or not at all); see codex.LocalProvider. The sandbox and approval
// policy are left to the command line (batty passes them from team.yaml).
func ConfigTOML(baseURL string) string {
	return codex.LocalProvider{ID: ProviderID, Name: "batty scripted stand-in model", BaseURL: baseURL, Model: Model}.ConfigTOML()
}

// WriteCodexHome creates dir (0700, and its parents) as a CODEX_HOME for
// the server at baseURL: config.toml (0600) holds ConfigTOML(baseURL).
// It replaces a config.toml already there.
func WriteCodexHome(dir, baseURL string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create CODEX_HOME %s: %w", dir, err)
	}
	p := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(p, []byte(ConfigTOML(baseURL)), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
