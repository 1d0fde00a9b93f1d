package orchestrator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/landing"
	"github.com/battyhq/batty/telemetry"
)

// telemetryFlush bounds how long the last spans may take to leave as the
// daemon stops.
const telemetryFlush = 5 * time.Second

// initTelemetry makes the team's telemetry (nil when the team file and
// the environment turn none on) and has it follow the event log and the
// usage ledger. Called by init once both are open.
func (d *Daemon) initTelemetry() error {
	roles := map[string]string{}
	for _, def := range d.cfg.Agents() {
		roles[def.Name] = def.Role
	}
	tel, err := telemetry.New(context.Background(), telemetry.Options{Team: d.cfg.Name, Config: d.cfg.Telemetry, Roles: roles,
		Status: d.Status, Log: d.log.Named("telemetry"), MessageText: d.messageText})
	if err != nil {
		return err
	}
	if tel == nil {
		return nil
	}
	d.tel = tel
	d.observe = eventlog.Chain(d.observe, tel.Event)
	d.events.SetObserver(d.observe)
	d.ledger.SetObserver(tel.Turn)
	return nil
}

// messageText is the text of message id in agent's inbox, "" when it
// cannot be read (telemetry.include_text). Safe from any goroutine.
func (d *Daemon) messageText(agent, id string) string {
	a := d.byName[agent]
	if a == nil || a.box == nil {
		return ""
	}
	m, _, err := a.box.Get(id)
	if err != nil {
		return ""
	}
	return m.Body
}

// MetricsHandler serves the team's metrics in Prometheus' exposition
// format (the console serves it behind its login); nil when the team file
// turns no metrics on.
func (d *Daemon) MetricsHandler() http.Handler { return d.tel.Handler() }

// serveTelemetry serves /metrics on telemetry.metrics' own listener, when
// the team file sets one, until the returned stop is called; stop also
// sends the last spans. A listener that cannot be had leaves the team
// without it (logged and told as a warning), as the console's.
func (d *Daemon) serveTelemetry() (stop func()) {
	closeTel := func() {
		ctx, cancel := context.WithTimeout(context.Background(), telemetryFlush)
		defer cancel()
		if err := d.tel.Close(ctx); err != nil {
			d.log.Warn("Telemetry", "error", err)
		}
	}
	m := d.cfg.Telemetry.Metrics
	if !d.tel.MetricsOn() || !m.On() {
		return closeTel
	}
	ln, err := listenMetrics(m.Listen, m.TLSCert, m.TLSKey)
	if err != nil {
		d.log.Error("No metrics endpoint", "error", err)
		d.events.Append(eventlog.Event{Type: eventlog.EvWarning, Detail: "no metrics endpoint: " + err.Error()})
		return closeTel
	}
	d.log.Info("Metrics listening", "address", ln.Addr().String())
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", d.tel.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("Metrics endpoint stopped", "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			hs.Close()
		}
		<-done
		closeTel()
	}
}

// listenMetrics listens on addr (TCP), with TLS when cert and key are set.
func listenMetrics(addr, cert, key string) (net.Listener, error) {
	var tc *tls.Config
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
		tc = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	return ln, nil
}

// landingSteps are when the steps of landing r's last attempt ran, for
// its event (the telemetry's merge, verify and land spans).
func landingSteps(r landing.Request) eventlog.LandingSteps {
	return eventlog.LandingSteps{MergeAt: r.MergeAt, VerifyAt: r.VerifyAt, VerifyEndedAt: r.VerifyEndedAt}
}
