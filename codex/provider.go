package codex

import (
	"fmt"
	"strconv"
	"strings"
)

// LocalProvider is a Codex CLI configuration that points codex at a
// Responses API server of its own (a test's mock, the demo's stand-in
// model) instead of OpenAI: no login or API key is needed, and everything
// that would reach the network or slow a run is off.
type LocalProvider struct {
	// ID is the provider's id, the key of its [model_providers.ID] table.
	ID string
	// Name is the provider's display name.
	Name string
	// BaseURL is the server's URL (its /responses endpoint is used).
	BaseURL string
	// Model is the model slug asked for.
	Model string
	// ApprovalPolicy and SandboxMode are codex's approval_policy and
	// sandbox_mode; "" leaves them out (to the command line).
	ApprovalPolicy, SandboxMode string
	// StreamMaxRetries is the provider's stream_max_retries: how often
	// codex retries a turn whose stream failed by itself (0: never).
	StreamMaxRetries int
	// Extra is TOML inserted after the top-level keys and before the
	// tables the configuration always has ([analytics], [features],
	// [model_providers.ID]); it must not redefine them.
	Extra string
}

// ConfigTOML returns the text of a config.toml that selects p with
// wire_api "responses" and request_max_retries = 0, and turns off update
// checks, analytics, web search, plugins, apps, the shell snapshot and
// websockets. It is a pure function.
func (p LocalProvider) ConfigTOML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "model = %s\n", strconv.Quote(p.Model))
	fmt.Fprintf(&b, "model_provider = %s\n", strconv.Quote(p.ID))
	if p.ApprovalPolicy != "" {
		fmt.Fprintf(&b, "approval_policy = %s\n", strconv.Quote(p.ApprovalPolicy))
	}
	if p.SandboxMode != "" {
		fmt.Fprintf(&b, "sandbox_mode = %s\n", strconv.Quote(p.SandboxMode))
	}
	b.WriteString("check_for_update_on_startup = false\n")
	b.WriteString("web_search = \"disabled\"\n")
	if p.Extra != "" {
		b.WriteString("\n" + strings.TrimRight(p.Extra, "\n") + "\n")
	}
	b.WriteString("\n[analytics]\nenabled = false\n")
	b.WriteString("\n[features]\nplugins = false\napps = false\nshell_snapshot = false\n")
	fmt.Fprintf(&b, "\n[model_providers.%s]\n", p.ID)
	fmt.Fprintf(&b, "name = %s\n", strconv.Quote(p.Name))
	fmt.Fprintf(&b, "base_url = %s\n", strconv.Quote(p.BaseURL))
	b.WriteString("wire_api = \"responses\"\n")
	fmt.Fprintf(&b, "request_max_retries = 0\nstream_max_retries = %d\n", p.StreamMaxRetries)
	b.WriteString("supports_websockets = false\n")
	return b.String()
}
