// Package telemetry is the team's metrics, in Prometheus' exposition
// format, and the traces of each message's journey, exported with
// OpenTelemetry (OTLP): both off by default (team.yaml's telemetry key,
// and the standard OTEL_EXPORTER_OTLP_* variables for the traces).
//
// It follows the daemon from outside: the counters, histograms and spans
// are derived from the daemon's event log (Event, an observer of every
// event appended) and its usage ledger (Turn, every turn the ledger
// adds), and the gauges from the daemon's status, read at each scrape.
// Spans are made after the fact, with the timestamps the events carry;
// their ids are derived from the message's id (package traceid), so the
// shim hands Codex the context of the turn span with no word from here.
// No prompt or reply text goes into a span unless include_text says so.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/team"
	"github.com/battyhq/batty/usage"
)

// ServiceName is the service.name of batty's spans (OTEL_SERVICE_NAME
// overrides it).
const ServiceName = "batty"

// Options configure New.
type Options struct {
	// Team is the team's name (the resource's batty.team).
	Team string
	// Config is the team file's telemetry.
	Config team.Telemetry
	// Roles names each agent's role.
	Roles map[string]string
	// Status is the daemon's status, read at each scrape (nil: no gauges).
	Status func() control.Status
	// Getenv reads the OTEL_* variables (default os.Getenv).
	Getenv func(string) string
	// Log receives the exporter's errors (default: discarded).
	Log hclog.Logger
	// MessageText returns the text of message id in agent's inbox ("" when
	// it cannot be read); read only with Config.IncludeText, for the
	// message span. Nil: none.
	MessageText func(agent, id string) string
	// Exporter, when set, takes the spans in place of the OTLP exporter
	// (tests); traces are on then.
	Exporter sdktrace.SpanExporter
}

// Telemetry is the team's metrics and traces. Its methods are safe for
// concurrent use; a nil *Telemetry does nothing.
type Telemetry struct {
	mu  sync.Mutex
	reg *prometheus.Registry // nil: metrics off
	m   *metrics
	tr  *tracer // nil: traces off
	tp  *sdktrace.TracerProvider
}

// Traces says whether traces are on for cfg with the environment getenv
// reads, and with which OTLP protocol: telemetry.otlp.endpoint or
// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set, and neither
// OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says no. It is a
// pure function.
func Traces(cfg team.OTLP, getenv func(string) string) (on bool, protocol string) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false, ""
	}
	if cfg.Endpoint == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return false, ""
	}
	protocol = cfg.Protocol
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if protocol == "" {
			protocol = getenv(k)
		}
	}
	if protocol == "" {
		protocol = team.OTLPHTTP
	}
	return true, protocol
}

// New returns the telemetry o asks for: metrics when o.Config.Metrics has
// a listener, traces when Traces says so (or o.Exporter is set). With
// neither it returns nil, which does nothing.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	roleOf := func(agent string) string { return o.Roles[agent] }
	t := &Telemetry{}
	if o.Config.Metrics.On() {
		t.reg = prometheus.NewRegistry()
		t.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		t.m = newMetrics(t.reg, roleOf)
		if o.Status != nil {
			t.reg.MustRegister(newStatusCollector(o.Status))
		}
	}
	exp := o.Exporter
	if on, protocol := Traces(o.Config.OTLP, o.Getenv); exp == nil && on {
		var err error
		if exp, err = newExporter(ctx, o.Config.OTLP, protocol); err != nil {
			return nil, err
		}
	}
	if exp != nil {
		res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName(ServiceName), semconv.ServiceVersion(version())),
			resource.WithFromEnv())
		if err != nil {
			o.Log.Warn("Telemetry: the resource of the traces is incomplete", "error", err)
		}
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(withTeam(res, o.Team)),
			sdktrace.WithIDGenerator(derivedIDs{}))
		t.tr = newTracer(t.tp, o.Config.IncludeText, roleOf)
		if o.Config.IncludeText {
			t.tr.messageText = o.MessageText
		}
	}
	if t.reg == nil && t.tr == nil {
		return nil, nil
	}
	return t, nil
}

// newExporter returns the OTLP exporter of cfg over protocol; what cfg
// leaves unset comes from the OTEL_EXPORTER_OTLP_* variables, which the
// exporter reads itself.
func newExporter(ctx context.Context, cfg team.OTLP, protocol string) (sdktrace.SpanExporter, error) {
	switch protocol {
	case team.OTLPHTTP:
		var opts []otlptracehttp.Option
		if cfg.Endpoint != "" {
			// As OTEL_EXPORTER_OTLP_ENDPOINT: the base URL of the collector.
			opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(cfg.Endpoint, "/")+"/v1/traces"))
		}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("telemetry: the OTLP exporter: %w", err)
		}
		return exp, nil
	case team.OTLPGRPC:
		var opts []otlptracegrpc.Option
		if cfg.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
		}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(cfg.Headers))
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("telemetry: the OTLP exporter: %w", err)
		}
		return exp, nil
	}
	return nil, fmt.Errorf("telemetry: OTLP protocol %q: batty exports over %s or %s", protocol, team.OTLPHTTP, team.OTLPGRPC)
}

// MetricsOn reports whether t serves metrics.
func (t *Telemetry) MetricsOn() bool { return t != nil && t.reg != nil }

// TracesOn reports whether t exports traces.
func (t *Telemetry) TracesOn() bool { return t != nil && t.tr != nil }

// Handler serves the metrics in Prometheus' exposition format; nil when
// metrics are off.
func (t *Telemetry) Handler() http.Handler {
	if !t.MetricsOn() {
		return nil
	}
	return promhttp.HandlerFor(t.reg, promhttp.HandlerOpts{})
}

// Event follows e, an event the daemon appended (an eventlog observer: it
// never blocks on the network; spans leave in batches).
func (t *Telemetry) Event(e eventlog.Event) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m != nil {
		t.m.event(e)
	}
	if t.tr != nil {
		t.tr.event(e)
	}
}

// Turn follows u, a turn the usage ledger added.
func (t *Telemetry) Turn(u usage.Turn) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m != nil {
		t.m.turn(u)
	}
	if t.tr != nil {
		t.tr.turn(u)
	}
}

// Close sends the spans not yet exported, until ctx ends, and stops the
// exporter.
func (t *Telemetry) Close(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	err := t.tp.Shutdown(ctx)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("telemetry: export the last spans: %w", err)
	}
	return nil
}

// withTeam is res with the team's name (batty.team).
func withTeam(res *resource.Resource, name string) *resource.Resource {
	merged, err := resource.Merge(res, resource.NewSchemaless(attribute.String("batty.team", name)))
	if err != nil {
		return res
	}
	return merged
}

// version is batty's version as the build recorded it ("" when unknown).
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return ""
}
