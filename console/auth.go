package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"slices"
)

// Verdict is what the console does with a request (see Decide).
type Verdict int

const (
	// Allow serves the request.
	Allow Verdict = iota
	// LogIn exchanges the login token for a session cookie and redirects
	// to the team page, dropping the token from the address bar.
	LogIn
	// Refuse answers Decision.Status with Decision.Reason and nothing else.
	Refuse
)

// Facts are what Decide needs to know of a request; the server gathers
// them (the token and CSRF comparisons in constant time).
type Facts struct {
	Method string
	// Login says the request is for the login path.
	Login bool
	// Host is the request's Host header.
	Host string
	// Origin is the Origin header, "" when absent.
	Origin string
	// FetchSite is the Sec-Fetch-Site header, "" when absent.
	FetchSite string
	// TokenGiven says the login request carries a token; TokenOK that it
	// is the console's.
	TokenGiven, TokenOK bool
	// Session says the request's cookie names a live session.
	Session bool
	// CSRFOK says the form's CSRF token is the session's.
	CSRFOK bool
	// TLS says the request came over HTTPS: its own origin is https://.
	TLS bool
}

// Decision is Decide's answer: a Verdict, and for Refuse the HTTP status
// and the reason shown.
type Decision struct {
	Verdict Verdict
	Status  int
	Reason  string
}

// Decide judges a request by its facts f, hosts being the Host headers
// the console answers to (see AllowedHosts). In order: a Host not among
// hosts is refused (DNS rebinding: a page of another site whose name
// resolves to 127.0.0.1); a login needs the right token (GET only); every
// other request needs a session; a request that changes anything (POST)
// must also come from the console's own origin (Origin, else
// Sec-Fetch-Site) and carry the session's CSRF token; other methods are
// refused. It is a pure function.
func Decide(f Facts, hosts []string) Decision {
	if !slices.Contains(hosts, f.Host) {
		return Decision{Verdict: Refuse, Status: http.StatusMisdirectedRequest, Reason: fmt.Sprintf("refused: host %.80q is not this console's address", f.Host)}
	}
	if f.Login {
		switch {
		case f.Method != http.MethodGet:
			return Decision{Verdict: Refuse, Status: http.StatusMethodNotAllowed, Reason: "log in with GET"}
		case !f.TokenGiven:
			return Decision{Verdict: Refuse, Status: http.StatusUnauthorized, Reason: "no token: `batty web` prints the address to log in with"}
		case !f.TokenOK:
			return Decision{Verdict: Refuse, Status: http.StatusForbidden, Reason: "wrong token: `batty web` prints the address to log in with"}
		}
		return Decision{Verdict: LogIn}
	}
	if !f.Session {
		return Decision{Verdict: Refuse, Status: http.StatusUnauthorized, Reason: "not logged in: `batty web` prints the address to log in with"}
	}
	switch f.Method {
	case http.MethodGet, http.MethodHead:
		return Decision{Verdict: Allow}
	case http.MethodPost:
	default:
		return Decision{Verdict: Refuse, Status: http.StatusMethodNotAllowed, Reason: "method not allowed"}
	}
	switch {
	case f.Origin != "":
		scheme := "http://"
		if f.TLS {
			scheme = "https://"
		}
		if f.Origin != scheme+f.Host {
			return Decision{Verdict: Refuse, Status: http.StatusForbidden, Reason: fmt.Sprintf("refused: a request from another origin (%.80q)", f.Origin)}
		}
	case f.FetchSite != "same-origin":
		return Decision{Verdict: Refuse, Status: http.StatusForbidden, Reason: "refused: a request that changes something must say its origin"}
	}
	if !f.CSRFOK {
		return Decision{Verdict: Refuse, Status: http.StatusForbidden, Reason: "refused: the form's CSRF token is missing or stale; reload the page"}
	}
	return Decision{Verdict: Allow}
}

// AllowedHosts returns the Host headers a console listening on addr
// (host:port, as bound) answers to: the address itself, localhost:port
// for a loopback one, and each of names (host names or IPs the console is
// reached by: its certificate's, this machine's for a wildcard address)
// with the port. It is a pure function.
func AllowedHosts(addr string, names ...string) ([]string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("console address %q: %w", addr, err)
	}
	hosts := []string{net.JoinHostPort(host, port)}
	if ip := net.ParseIP(host); ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) {
		hosts = append(hosts, net.JoinHostPort("localhost", port))
	}
	for _, n := range names {
		if h := net.JoinHostPort(n, port); n != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

// NewToken returns a fresh random secret: 32 bytes from crypto/rand,
// base64url without padding.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a console token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// same compares two secrets in constant time; an empty want matches
// nothing.
func same(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
