package team

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/battyhq/batty/console/consoletest"
)

func TestTelemetrySetting(t *testing.T) {
	const head = "name: t\nroles:\n  - name: a\n"
	for _, tc := range []struct {
		name, src string
		want      Telemetry
		problem   string
	}{
		{name: "absent", src: ""},
		{name: "null", src: "telemetry:\n"},
		{name: "metrics short", src: "telemetry: {metrics: \"127.0.0.1:9464\"}\n", want: Telemetry{Metrics: Metrics{Listen: "127.0.0.1:9464"}}},
		{name: "metrics mapping", src: "telemetry:\n  metrics: {listen: \"[::1]:9464\"}\n", want: Telemetry{Metrics: Metrics{Listen: "[::1]:9464"}}},
		{name: "metrics wide", src: "telemetry: {metrics: \"0.0.0.0:9464\"}\n", problem: `telemetry.metrics "0.0.0.0:9464" is not a loopback address: it needs TLS`},
		{name: "metrics wide mapping", src: "telemetry: {metrics: {listen: \"0.0.0.0:9464\"}}\n", problem: `telemetry.metrics.listen "0.0.0.0:9464" is not a loopback address: it needs TLS`},
		{name: "metrics wide insecure", src: "telemetry: {metrics: {listen: \"0.0.0.0:9464\", insecure: true}}\n",
			want: Telemetry{Metrics: Metrics{Listen: "0.0.0.0:9464", Insecure: true}}},
		{name: "metrics a name", src: "telemetry: {metrics: \"localhost:9464\"}\n", problem: "must be an IP address"},
		{name: "metrics no listen", src: "telemetry: {metrics: {insecure: true}}\n", problem: "telemetry.metrics needs listen"},
		{name: "metrics unknown key", src: "telemetry: {metrics: {listen: \"127.0.0.1:1\", port: 2}}\n", problem: `unknown key "port" in telemetry.metrics`},
		{name: "otlp", src: "telemetry:\n  otlp:\n    endpoint: http://127.0.0.1:4318\n    protocol: http/protobuf\n    headers: {Authorization: Bearer x}\n  include_text: true\n",
			want: Telemetry{OTLP: OTLP{Endpoint: "http://127.0.0.1:4318", Protocol: OTLPHTTP, Headers: map[string]string{"Authorization": "Bearer x"}}, IncludeText: true}},
		{name: "otlp grpc", src: "telemetry: {otlp: {endpoint: \"https://collector:4317\", protocol: grpc}}\n",
			want: Telemetry{OTLP: OTLP{Endpoint: "https://collector:4317", Protocol: OTLPGRPC}}},
		{name: "otlp bad protocol", src: "telemetry: {otlp: {endpoint: \"http://h:1\", protocol: thrift}}\n", problem: "telemetry.otlp.protocol must be http/protobuf or grpc"},
		{name: "otlp bad scheme", src: "telemetry: {otlp: {endpoint: \"udp://h:1\"}}\n", problem: "the scheme must be http or https"},
		{name: "otlp password in url", src: "telemetry: {otlp: {endpoint: \"http://u:p@h:1\"}}\n", problem: "no user or password"},
		{name: "otlp no endpoint", src: "telemetry: {otlp: {protocol: grpc}}\n", problem: "telemetry.otlp needs endpoint"},
		{name: "otlp bad header", src: "telemetry: {otlp: {endpoint: \"http://h:1\", headers: {\"a b\": c}}}\n", problem: "not a header name"},
		{name: "include_text not a bool", src: "telemetry: {include_text: yes please}\n", problem: "telemetry.include_text must be true or false"},
		{name: "unknown key", src: "telemetry: {metric: \"127.0.0.1:1\"}\n", problem: `unknown key "metric" in telemetry`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, msg, _ := loadString(t, head+tc.src)
			if tc.problem != "" {
				if !strings.Contains(msg, tc.problem) {
					t.Fatalf("error %q does not say %q", msg, tc.problem)
				}
				if !strings.Contains(msg, ":4:") && !strings.Contains(msg, ":5:") && !strings.Contains(msg, ":6:") {
					t.Fatalf("error %q names no line of the telemetry key", msg)
				}
				return
			}
			if msg != "" {
				t.Fatal(msg)
			}
			if !reflect.DeepEqual(cfg.Telemetry, tc.want) {
				t.Fatalf("telemetry %+v, want %+v", cfg.Telemetry, tc.want)
			}
		})
	}
}

// The metrics with TLS as the console's: both files, and a wide address
// then needs no insecure; insecure on a wide address warns.
func TestTelemetryMetricsTLS(t *testing.T) {
	const head = "name: t\nroles:\n  - name: a\n"
	dir := t.TempDir()
	cert, key, _ := consoletest.SelfSigned(t, dir, "127.0.0.1")
	cfg, msg, _ := loadString(t, head+"telemetry: {metrics: {listen: \"0.0.0.0:0\", tls_cert: "+cert+", tls_key: "+key+"}}\n")
	if msg != "" {
		t.Fatal(msg)
	}
	if want := (Metrics{Listen: "0.0.0.0:0", TLSCert: cert, TLSKey: key}); cfg.Telemetry.Metrics != want || cfg.Telemetry.Warning() != "" {
		t.Fatalf("metrics %+v, want %+v", cfg.Telemetry.Metrics, want)
	}
	_, msg, _ = loadString(t, head+"telemetry: {metrics: {listen: \"0.0.0.0:0\", tls_cert: "+cert+"}}\n")
	if !strings.Contains(msg, "telemetry.metrics.tls_key is missing") {
		t.Fatalf("error %q", msg)
	}
	open := filepath.Join(dir, "open.key")
	b, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(open, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, msg, _ = loadString(t, head+"telemetry: {metrics: {listen: \"0.0.0.0:0\", tls_cert: "+cert+", tls_key: "+open+"}}\n")
	if !strings.Contains(msg, "telemetry.metrics.tls_key") || !strings.Contains(msg, "others than its owner") {
		t.Fatalf("error %q", msg)
	}
	cfg, msg, _ = loadString(t, head+"telemetry: {metrics: {listen: \"0.0.0.0:0\", insecure: true}}\n")
	if msg != "" || !strings.Contains(cfg.Telemetry.Warning(), "without TLS") {
		t.Fatalf("error %q, warning %q", msg, cfg.Telemetry.Warning())
	}
}

// Where telemetry goes is a trusted setting; a header's value is hidden.
func TestTelemetryTrusted(t *testing.T) {
	c := &Config{Telemetry: Telemetry{OTLP: OTLP{Endpoint: "http://h:1", Headers: map[string]string{"Authorization": "Bearer s3cret"}}}}
	got := map[string]string{}
	for _, s := range TrustedSettings(c) {
		got[s.Key] = s.Value
	}
	if got["telemetry.otlp.endpoint"] != "http://h:1" || got["telemetry.include_text"] != "false" {
		t.Fatalf("settings %v", got)
	}
	if v := got["telemetry.otlp.headers.Authorization"]; v == "" || strings.Contains(v, "s3cret") {
		t.Fatalf("header shown as %q", v)
	}
}
