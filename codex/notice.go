package codex

import (
	"regexp"
	"strings"
)

// IsNetworkWait reports whether message is codex's notice that it cannot
// reach the API and waits for the network: "Reconnecting... waiting for
// network (Connection failed: error sending request)". Codex prints it at
// once, then after 5, 15, 35 and 75 s and every 60 s from there, and never
// gives up by itself (codex 0.169.0 ignores its retry settings for a
// refused connection); the turn goes on as soon as a request gets through.
// It is a pure function.
func IsNetworkWait(message string) bool {
	return IsRetryNotice(message) && strings.Contains(normalize(message), "waiting for network")
}

// Transient is the kind of a failure that may pass by itself (a message
// Classify calls FailureTransient).
type Transient int

// Transient kinds.
const (
	TransientNone        Transient = iota // not transient
	TransientUnreachable                  // the API could not be reached
	TransientRateLimit                    // a rate limit
	TransientOverloaded                   // the model is at capacity
	TransientServer                       // a server error
	TransientStalled                      // the answer stopped coming
	TransientDropped                      // the answer was cut off
	TransientOther                        // any other transient failure
)

// transientKinds names the kind of a transient failure, tried in order on
// the normalised message: the first match wins.
var transientKinds = []struct {
	kind     Transient
	contains []string
	re       *regexp.Regexp
}{
	{kind: TransientUnreachable, contains: []string{"waiting for network", "connection failed", "error sending request"}},
	{kind: TransientRateLimit, contains: []string{"too many requests", "rate limit", "rate_limit"}, re: regexp.MustCompile(`\bstatus:? 429\b`)},
	{kind: TransientOverloaded, contains: []string{"at capacity", "server_is_overloaded", "overloaded"}},
	{kind: TransientServer, contains: []string{"experiencing high demand", "internal server error", "bad gateway",
		"service unavailable", "gateway timeout"}, re: regexp.MustCompile(`\bstatus:? 5\d\d\b`)},
	{kind: TransientStalled, contains: []string{"idle timeout", "request timed out"}},
	{kind: TransientDropped, contains: []string{"stream disconnected before completion", "error while reading the server response"}},
}

// TransientKind says what kind of transient failure message is:
// TransientOther for a message Classify calls FailureTransient that names
// no known cause, TransientNone for a message that is not transient. It
// is a pure function.
func TransientKind(message string) Transient {
	if Classify(message) != FailureTransient {
		return TransientNone
	}
	m := normalize(message)
	for _, c := range transientKinds {
		for _, s := range c.contains {
			if strings.Contains(m, s) {
				return c.kind
			}
		}
		if c.re != nil && c.re.MatchString(m) {
			return c.kind
		}
	}
	return TransientOther
}
