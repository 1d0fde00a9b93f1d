package codex

import (
	"strings"
	"testing"
)

func TestLocalProviderConfigTOML(t *testing.T) {
	p := LocalProvider{ID: "mock", Name: "a mock", BaseURL: "http://127.0.0.1:1/v1", Model: "gpt-5.5", StreamMaxRetries: 2, Extra: "[profiles.x]\nmodel = \"m\"\n"}
	got := p.ConfigTOML()
	for _, want := range []string{"model = \"gpt-5.5\"\nmodel_provider = \"mock\"\ncheck_for_update_on_startup", "\n[profiles.x]\nmodel = \"m\"\n\n[analytics]",
		"[model_providers.mock]\nname = \"a mock\"\nbase_url = \"http://127.0.0.1:1/v1\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 2\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "approval_policy") || strings.Contains(got, "sandbox_mode") {
		t.Errorf("unset policies written:\n%s", got)
	}
	p.ApprovalPolicy, p.SandboxMode = "never", "read-only"
	if got := p.ConfigTOML(); !strings.Contains(got, "approval_policy = \"never\"\nsandbox_mode = \"read-only\"\n") {
		t.Errorf("policies missing:\n%s", got)
	}
}
