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

// transientCauses names the kind of a transient failure, tried in order on
// the normalised message: the first match wins.
var transientCauses = []struct {
	cause    string
	contains []string
	re       *regexp.Regexp
}{
	{cause: "an unreachable API", contains: []string{"waiting for network", "connection failed", "error sending request"}},
	{cause: "a rate limit", contains: []string{"too many requests", "rate limit", "rate_limit"}, re: regexp.MustCompile(`\bstatus:? 429\b`)},
	{cause: "an overloaded model", contains: []string{"at capacity", "server_is_overloaded", "overloaded"}},
	{cause: "a server error", contains: []string{"experiencing high demand", "internal server error", "bad gateway",
		"service unavailable", "gateway timeout"}, re: regexp.MustCompile(`\bstatus:? 5\d\d\b`)},
	{cause: "a stalled stream", contains: []string{"idle timeout", "request timed out"}},
	{cause: "a dropped stream", contains: []string{"stream disconnected before completion", "error while reading the server response"}},
}

// TransientCause names, for a person and in a few words, what kind of
// transient failure message is: "an unreachable API", "a rate limit", "an
// overloaded model", "a server error", "a stalled stream", "a dropped
// stream", or "a transient failure" for any other message Classify calls
// FailureTransient. It returns "" for a message that is not transient. It
// is a pure function.
func TransientCause(message string) string {
	if Classify(message) != FailureTransient {
		return ""
	}
	m := normalize(message)
	for _, c := range transientCauses {
		for _, s := range c.contains {
			if strings.Contains(m, s) {
				return c.cause
			}
		}
		if c.re != nil && c.re.MatchString(m) {
			return c.cause
		}
	}
	return "a transient failure"
}
