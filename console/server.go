// Package console is batty's web console: the team and its agents in a
// browser, on a phone too, served by the daemon (team.yaml's console key;
// `batty web` logs a browser in). It is net/http, html/template and a few
// embedded files: nothing is loaded from elsewhere, and every page works,
// read-only, with scripts off; a small script of its own follows the team
// live over server-sent events.
//
// Every request is authenticated (see Decide): the login token, which
// only the human can learn (control.OpConsole), is exchanged once for an
// HttpOnly, SameSite=Strict session cookie and dropped from the address
// bar; a request that changes anything must also come from the console's
// own origin and carry the session's CSRF token; a Host header that is not
// the console's address is refused (DNS rebinding). Everything an agent or
// a model wrote is text: cleaned by safetext as the panes show it and
// escaped by html/template, under a Content-Security-Policy that allows no
// inline script.
package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"github.com/battyhq/batty/alerts"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/usage"
)

//go:embed web
var webFiles embed.FS

// Limits of the console.
const (
	// maxSessions bounds the live sessions; the oldest goes first.
	maxSessions = 32
	// maxForm bounds a form's body (a message to an agent).
	maxForm = 256 << 10
	// transcriptLines is how many of a transcript's last lines a page shows.
	transcriptLines = 200
	// sessionAge is how long a session cookie is kept by the browser (the
	// session itself ends with the daemon).
	sessionAge = 7 * 24 * time.Hour
)

// securityHeaders go on every answer.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
	"X-Frame-Options":        "DENY",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "same-origin",
	"Cache-Control":          "no-store",
}

// Config configures a Server.
type Config struct {
	// Addr is the address the console is bound to (host:port, as the
	// listener reports it): the Host headers it answers to follow from it
	// and from Names.
	Addr string
	// Names are further host names or IPs the console is reached by (see
	// AllowedHosts).
	Names []string
	// TLS says the console is served over HTTPS: the session cookie is
	// Secure and the console's origin https://.
	TLS bool
	// Token is the login token (NewToken).
	Token string
	// Team is the team the console shows and changes: the one way it
	// reaches the daemon.
	Team Team
	// Log receives the console's errors (default: discarded).
	Log hclog.Logger
	// Refresh is how often open pages get the status again with no event
	// (default 5 s): the ages of turns in flight move on.
	Refresh time.Duration
	// Rescan is the transcripts' safety-net rescan (logtail.DefaultRescan).
	Rescan time.Duration
	// Prices are the team file's prices (nil: the usage page shows no
	// cost).
	Prices usage.Prices
	// Now is the clock of the usage page (default time.Now); Loc the time
	// zone its times are shown in (default time.Local).
	Now func() time.Time
	Loc *time.Location
	// Judge decides whether a process runs inside one of the daemon's
	// agents (the control socket's judge): a request from such a process
	// on this machine is refused (see ConnContext, which the http.Server
	// must use). It judges the browser's connection, never the daemon.
	// Nil: no process is looked at.
	Judge control.Judge
	// Proc is the /proc mount the peers are looked up in (default
	// "/proc").
	Proc string
	// Metrics serves the team's metrics (telemetry.metrics), at /metrics
	// behind the login as every page; nil: the console serves none.
	Metrics http.Handler
}

// Server is the console: an http.Handler. Notify tells it the team
// changed; Close ends its live streams.
type Server struct {
	cfg    Config
	hosts  []string
	cookie string
	pages  map[string]*template.Template
	static http.Handler
	mux    *http.ServeMux
	hub    *hub
	live   renderCache
	pg     *pageState
	alerts *alerts.Queue // the alert sink: into pg.alerts, then the live streams

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	sessions map[string]string // session id → its CSRF token
	order    []string          // session ids, oldest first
}

// New returns the console of cfg, its live updates running until Close.
func New(cfg Config) (*Server, error) {
	if cfg.Token == "" || cfg.Team == nil {
		return nil, errors.New("console: a token and a team are required")
	}
	hosts, err := AllowedHosts(cfg.Addr, cfg.Names...)
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(cfg.Addr)
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Loc == nil {
		cfg.Loc = time.Local
	}
	if cfg.Proc == "" {
		cfg.Proc = "/proc"
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	static, err := fs.Sub(webFiles, "web/static")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, hosts: hosts, cookie: "batty_console_" + port, pages: pages,
		static: http.StripPrefix("/static/", http.FileServerFS(static)), ctx: ctx, cancel: cancel,
		sessions: map[string]string{}, hub: newHub(cfg.Team, cfg.Refresh, cfg.Log)}
	s.pg = s.newPageState()
	s.alerts = newAlertSink(s.pg.alerts, func(context.Context) { s.Notify() }, 0, cfg.Log)
	s.routes()
	go s.hub.run(ctx)
	return s, nil
}

// Notify tells the console the team changed: the open pages get the
// status again. It never blocks.
func (s *Server) Notify() { s.hub.notify() }

// Observe is the daemon's event e (orchestrator.Options.OnEvent): the
// open pages get the status again. It never blocks.
func (s *Server) Observe(eventlog.Event) { s.Notify() }

// AlertSink is the console's alerts.Sink (Daemon.AddAlertSink): each
// alert joins the history the Alerts page and the badge show, and the
// open pages hear of it over their live stream.
func (s *Server) AlertSink() alerts.Sink { return s.alerts }

// Close ends the live streams, the live updates and the alert sink;
// requests still being served end soon after.
func (s *Server) Close() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.alerts.Close(ctx)
	s.cancel()
}

// routes serves each page (a file each: team_page.go, agent_page.go,
// inbox_page.go, landings_page.go, alerts_page.go, usage.go), the live
// streams (live.go), the embedded files and the metrics.
func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.teamPage)
	m.HandleFunc("POST /pause", s.pause)
	m.HandleFunc("POST /resume", s.resume)
	m.HandleFunc("GET /agent/{name}", s.agentPage)
	m.HandleFunc("POST /agent/{name}/send", s.send)
	m.HandleFunc("POST /agent/{name}/cancel", s.cancelMessage)
	m.HandleFunc("POST /agent/{name}/reset", s.reset)
	m.HandleFunc("GET /inbox", s.inboxPage)
	m.HandleFunc("POST /inbox/read", s.markRead)
	m.HandleFunc("POST /inbox/{id}/answer", s.answer)
	m.HandleFunc("GET /landings", s.landingsPage)
	m.HandleFunc("GET /landing/{id}", s.landingPage)
	m.HandleFunc("POST /landing/{id}/approve", s.approve)
	m.HandleFunc("POST /landing/{id}/reject", s.reject)
	m.HandleFunc("GET /alerts", s.alertsPage)
	m.HandleFunc("POST /alerts/seen", s.alertsSeen)
	m.HandleFunc("GET /usage", s.usagePage)
	m.HandleFunc("GET /usage.csv", s.usageCSV)
	m.HandleFunc("GET /usage.json", s.usageJSONFile)
	m.HandleFunc("GET /threads", s.threadsPage)
	m.HandleFunc("GET /thread/{id}", s.threadPage)
	m.HandleFunc("GET /search", s.searchPage)
	m.HandleFunc("GET /blame", s.blamePage)
	m.HandleFunc("GET /show", s.showPage)
	m.HandleFunc("GET /events", s.statusEvents)
	m.HandleFunc("GET /agent/{name}/transcript", s.transcriptEvents)
	m.Handle("GET /static/", s.static)
	if s.cfg.Metrics != nil {
		m.Handle("GET /metrics", s.cfg.Metrics)
	}
	s.mux = m
}

// ServeHTTP implements http.Handler: a request on a connection from a
// process inside an agent is refused (Config.Judge); every other request
// is judged by Decide first.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	for k, v := range securityHeaders {
		h.Set(k, v)
	}
	if err := s.peerRefusal(r); err != nil {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintln(w, err)
		return
	}
	f := Facts{Method: r.Method, Login: r.URL.Path == "/login", Host: r.Host,
		Origin: r.Header.Get("Origin"), FetchSite: r.Header.Get("Sec-Fetch-Site"), TLS: s.cfg.TLS}
	if f.Login {
		q := r.URL.Query()
		f.TokenGiven = q.Has("token")
		f.TokenOK = same(q.Get("token"), s.cfg.Token)
	}
	csrf, ok := s.session(r)
	f.Session = ok
	if ok && r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		f.CSRFOK = same(r.PostFormValue("csrf"), csrf)
	}
	d := Decide(f, s.hosts)
	switch d.Verdict {
	case LogIn:
		s.logIn(w, r)
	case Refuse:
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(d.Status)
		fmt.Fprintln(w, d.Reason)
	default:
		s.mux.ServeHTTP(w, r)
	}
}

// session returns the CSRF token of the request's session, if its cookie
// names a live one.
func (s *Server) session(r *http.Request) (string, bool) {
	c, err := r.Cookie(s.cookie)
	if err != nil || c.Value == "" {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, csrf := range s.sessions {
		if same(c.Value, id) {
			return csrf, true
		}
	}
	return "", false
}

// csrfOf returns the CSRF token of r's session ("" when none).
func (s *Server) csrfOf(r *http.Request) string {
	csrf, _ := s.session(r)
	return csrf
}

// logIn starts a session, sets its cookie and sends the browser to the
// team page: the token leaves the address bar.
func (s *Server) logIn(w http.ResponseWriter, r *http.Request) {
	id, err := NewToken()
	if err == nil {
		var csrf string
		if csrf, err = NewToken(); err == nil {
			s.mu.Lock()
			s.sessions[id] = csrf
			s.order = append(s.order, id)
			for len(s.order) > maxSessions {
				delete(s.sessions, s.order[0])
				s.order = s.order[1:]
			}
			s.mu.Unlock()
		}
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(sessionAge / time.Second), Secure: s.cfg.TLS})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// fail answers status with err's text, escaped.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	s.cfg.Log.Warn("Console request failed", "path", r.URL.Path, "error", err)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, err.Error())
}

// render writes page with data.
func (s *Server) render(w http.ResponseWriter, r *http.Request, page string, data any) {
	var b bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&b, "page", data); err != nil {
		s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("render %s: %w", page, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}
