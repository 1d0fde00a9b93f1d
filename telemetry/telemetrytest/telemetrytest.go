// Package telemetrytest runs the real Prometheus and Jaeger (v2) that the
// telemetry tests scrape and export to: built from their Go modules by
// scripts/test.sh into $BATTY_TELEMETRY_CACHE (default
// ~/.cache/batty-telemetry), each started by the test on loopback ports
// of its own and killed with its process group when the test ends.
package telemetrytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The versions scripts/test.sh builds (PROMETHEUS_MODULE, JAEGER_MODULE).
const (
	PrometheusVersion = "v0.316.0"
	JaegerVersion     = "v1.76.0"
)

// startWait bounds how long a server may take to be ready.
const startWait = 60 * time.Second

// cache is where scripts/test.sh builds the programs.
func cache() string {
	if d := os.Getenv("BATTY_TELEMETRY_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "batty-telemetry")
}

// program returns the path of name at version in the cache, skipping the
// test (failing it under CI=true, where scripts/test.sh has built it)
// when it is not there.
func program(t testing.TB, name, version string) string {
	t.Helper()
	p := filepath.Join(cache(), name+"-"+version, name)
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no %s %s at %s: scripts/test.sh builds it", name, version, p)
	}
	t.Skipf("no %s %s at %s (scripts/test.sh builds it)", name, version, p)
	return ""
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// start runs bin with args in its own process group, its output in
// dir/name.log, until the test ends.
func start(t testing.TB, dir, name, bin string, args ...string) {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		logf.Close()
	})
}

// waitReady polls url until it answers 200, failing the test (with the
// server's log) after startWait.
func waitReady(t testing.TB, dir, name, url string) {
	t.Helper()
	deadline := time.Now().Add(startWait)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, name+".log"))
			t.Fatalf("%s not ready at %s: %v\n%s", name, url, err, log)
		}
		time.Sleep(100 * time.Millisecond) // another process
	}
}

// Prometheus is a running Prometheus.
type Prometheus struct {
	URL string
}

// StartPrometheus runs a Prometheus that scrapes target (host:port,
// /metrics) every second.
func StartPrometheus(t testing.TB, target string) *Prometheus {
	t.Helper()
	bin := program(t, "prometheus", PrometheusVersion)
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: batty\n    static_configs:\n      - targets: [%q]\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(FreePort(t))
	start(t, dir, "prometheus", bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	p := &Prometheus{URL: "http://" + addr}
	waitReady(t, dir, "prometheus", p.URL+"/-/ready")
	return p
}

// Query runs an instant PromQL query whose result is one sample and
// returns its value; ok is false when the result is empty.
func (p *Prometheus) Query(q string) (v float64, ok bool, err error) {
	resp, err := http.Get(p.URL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, false, fmt.Errorf("query %s: %w", q, err)
	}
	if out.Status != "success" {
		return 0, false, fmt.Errorf("query %s: %s", q, out.Error)
	}
	if len(out.Data.Result) == 0 {
		return 0, false, nil
	}
	if len(out.Data.Result) > 1 {
		return 0, false, fmt.Errorf("query %s: %d samples", q, len(out.Data.Result))
	}
	s, _ := out.Data.Result[0].Value[1].(string)
	v, err = strconv.ParseFloat(s, 64)
	return v, err == nil, err
}

// Jaeger is a running Jaeger v2 with in-memory storage: OTLP in (HTTP and
// gRPC), its query API out.
type Jaeger struct {
	// OTLPHTTP and OTLPGRPC are the collector's endpoints, as
	// telemetry.otlp.endpoint takes them.
	OTLPHTTP, OTLPGRPC string
	// Query is the URL of the query service (its HTTP API).
	Query string
}

// jaegerConfig is the configuration of a Jaeger v2 with every port its
// own (%[1]d: OTLP gRPC, %[2]d: OTLP HTTP, %[3]d: query HTTP, %[4]d: query
// gRPC, %[5]d: health check), in-memory storage and no telemetry of its
// own listening.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:%[5]d
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%[3]d
    grpc:
      endpoint: 127.0.0.1:%[4]d
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%[1]d
      http:
        endpoint: 127.0.0.1:%[2]d
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// StartJaeger runs a Jaeger v2 until the test ends.
func StartJaeger(t testing.TB) *Jaeger {
	t.Helper()
	bin := program(t, "jaeger", JaegerVersion)
	dir := t.TempDir()
	grpcPort, httpPort, queryPort, queryGRPC, health := FreePort(t), FreePort(t), FreePort(t), FreePort(t), FreePort(t)
	cfg := fmt.Sprintf(jaegerConfig, grpcPort, httpPort, queryPort, queryGRPC, health)
	if err := os.WriteFile(filepath.Join(dir, "jaeger.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, dir, "jaeger", bin, "--config", filepath.Join(dir, "jaeger.yaml"))
	j := &Jaeger{OTLPHTTP: fmt.Sprintf("http://127.0.0.1:%d", httpPort), OTLPGRPC: fmt.Sprintf("http://127.0.0.1:%d", grpcPort),
		Query: fmt.Sprintf("http://127.0.0.1:%d", queryPort)}
	waitReady(t, dir, "jaeger", fmt.Sprintf("http://127.0.0.1:%d/status", health))
	waitReady(t, dir, "jaeger", j.Query+"/api/services")
	return j
}

// Span is one span of a trace as Jaeger's query API gives it.
type Span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // µs since the epoch
	Duration  int64 `json:"duration"`  // µs
	Tags      []struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
}

// Parent is the span id of the span's parent ("" for a root).
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Tag returns the value of the span's tag key as Jaeger shows it (a
// string, a float64 for a number, a bool).
func (s Span) Tag(key string) (any, bool) {
	for _, kv := range s.Tags {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// Trace returns the spans Jaeger holds of trace id (32 hex digits); none
// when it holds none.
func (j *Jaeger) Trace(id string) ([]Span, error) {
	resp, err := http.Get(j.Query + "/api/traces/" + id)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("trace %s: %s: %s", id, resp.Status, b)
	}
	var out struct {
		Data []struct {
			Spans []Span `json:"spans"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("trace %s: %w", id, err)
	}
	var spans []Span
	for _, d := range out.Data {
		spans = append(spans, d.Spans...)
	}
	return spans, nil
}

// Services returns the services Jaeger has seen.
func (j *Jaeger) Services() ([]string, error) {
	resp, err := http.Get(j.Query + "/api/services")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Data []string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	return out.Data, nil
}
