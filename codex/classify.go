package codex

import (
	"regexp"
	"strconv"
	"strings"
)

// Failure is the class of a codex failure message, telling the caller what
// to do about it.
type Failure int

const (
	// FailureNone: not a recognised failure; handle it as a generic error.
	FailureNone Failure = iota
	// FailureQuota: the account is out of quota (ChatGPT plan usage limit,
	// API insufficient_quota, workspace out of credits, spend cap). Codex
	// does not retry it; wait until the reset time (ResetBy) or until
	// a human adds credits.
	FailureQuota
	// FailureAuth: the credentials are missing, wrong or expired, or the
	// plan does not include Codex. Needs a human (log in again, fix the
	// key, upgrade the plan).
	FailureAuth
	// FailureContextWindow: the thread no longer fits in the model's context
	// window. Start a new thread; a resume compacts it first.
	FailureContextWindow
	// FailureResumeMissing: `resume` named a thread codex has no rollout
	// for (unknown id, or an --ephemeral thread). Start a new thread.
	FailureResumeMissing
	// FailureActiveWriter: another codex process still has the thread open.
	// Wait for it to exit (or stop it) and retry.
	FailureActiveWriter
	// FailureTransient: a server or network error worth retrying later
	// (5xx, overloaded, stream disconnected, rate limited).
	FailureTransient
	// FailureInputTooLarge: the prompt is longer than codex accepts for one
	// turn (MaxInputChars characters); codex refuses it before any request.
	// Sending it again cannot help: shorten it.
	FailureInputTooLarge
	// FailureArchived: `resume` or `fork` named a thread that Codex's own
	// store holds archived (codex archive, thread/archive). Unarchive it
	// and try again.
	FailureArchived
)

// MaxInputChars is the most characters (Unicode code points) codex accepts
// as the text input of one turn — the whole prompt on stdin, its final line
// break included. Longer input fails before any model request with
// InputTooLargeMessage.
const MaxInputChars = 1 << 20

// InputTooLargeMessage is codex's own wording for input over MaxInputChars
// ("Input exceeds the maximum length of 1048576 characters.").
var InputTooLargeMessage = "Input exceeds the maximum length of " + strconv.Itoa(MaxInputChars) + " characters."

var failureNames = [...]string{
	FailureNone:          "none",
	FailureQuota:         "quota",
	FailureAuth:          "auth",
	FailureContextWindow: "context_window",
	FailureResumeMissing: "resume_missing",
	FailureActiveWriter:  "active_writer",
	FailureTransient:     "transient",
	FailureInputTooLarge: "input_too_large",
	FailureArchived:      "archived",
}

// String returns the snake_case name of f ("none", "quota", "auth",
// "context_window", "resume_missing", "active_writer", "transient",
// "input_too_large", "archived"), or
// "Failure(N)" for a value outside the constants.
func (f Failure) String() string {
	if f >= 0 && int(f) < len(failureNames) {
		return failureNames[f]
	}
	return "Failure(" + strconv.Itoa(int(f)) + ")"
}

// Patterns are matched against the message lowercased with typographic
// apostrophes folded to ASCII. Classes are tried in the order of this list,
// so a quota message that mentions 429 is quota, not transient.
var failurePatterns = []struct {
	class    Failure
	contains []string
	regexps  []*regexp.Regexp
}{
	{class: FailureArchived, contains: []string{
		// "thread/resume failed: session <id> is archived. Run `codex
		// unarchive <id>` to unarchive it first."
		"is archived. run `codex unarchive",
	}},
	{class: FailureResumeMissing, contains: []string{
		"no rollout found for thread id",
		"no thread with id",
	}},
	{class: FailureActiveWriter, contains: []string{
		"already has an active writer",
	}},
	{class: FailureInputTooLarge, contains: []string{
		"input exceeds the maximum length of",
		`"input_error_code":"input_too_large"`,
	}},
	{class: FailureQuota, contains: []string{
		"you've hit your usage limit",
		"you have hit your usage limit",
		"quota exceeded",
		"exceeded your current quota",
		"insufficient_quota",
		"workspace is out of credits",
		"you hit your spend cap",
		"usage_limit_reached",
		"usage_limit_exceeded",
		"credits_depleted",
	}},
	{class: FailureContextWindow, contains: []string{
		"out of room in the model's context window",
		"context_length_exceeded",
		"context_window_exceeded",
		"maximum context length",
		"context length exceeded",
		"context window exceeded",
		"exceeds the context window",
		"exceeded the context window",
		"exceeds the model's context window",
	}},
	{class: FailureAuth, contains: []string{
		"to use codex with your chatgpt plan",
		"usage_not_included",
		"401 unauthorized",
		"could not be refreshed",
		"failed to refresh token",
		"refresh token was already used",
		"refresh token has expired",
		"refresh_token_reused",
		"refresh_token_expired",
		"refresh_token_invalidated",
		"log out and sign in",
		"sign in again",
		"not logged in",
		"please log in",
		"please login",
		"invalid_api_key",
		"incorrect api key",
		"invalid api key",
		"missing environment variable",
	}, regexps: []*regexp.Regexp{
		regexp.MustCompile(`\bstatus:? 401\b`),
	}},
	{class: FailureTransient, contains: []string{
		"experiencing high demand",
		"at capacity",
		"server_is_overloaded",
		"overloaded",
		"stream disconnected before completion",
		"exceeded retry limit",
		"too many requests",
		"rate limit",
		"rate_limit",
		"connection failed",
		"error sending request",
		"error while reading the server response",
		"request timed out",
		"idle timeout",
		"internal server error",
		"bad gateway",
		"service unavailable",
		"gateway timeout",
		"waiting for network",
	}, regexps: []*regexp.Regexp{
		regexp.MustCompile(`\bstatus:? (?:429|5\d\d)\b`),
	}},
}

var apostrophes = strings.NewReplacer("\u2019", "'", "\u2018", "'", "\u02bc", "'")

func normalize(message string) string {
	return apostrophes.Replace(strings.ToLower(message))
}

// Classify returns the class of a failure message: the Message of a
// turn.failed or error event. Matching is case-insensitive and accepts
// typographic (U+2019) and ASCII apostrophes alike. A retry notice
// ("Reconnecting... 1/2 (cause)") is classified by its cause; see
// IsRetryNotice to tell it apart from a fatal error. An unrecognised or
// empty message is FailureNone.
func Classify(message string) Failure {
	m := normalize(message)
	for _, p := range failurePatterns {
		for _, s := range p.contains {
			if strings.Contains(m, s) {
				return p.class
			}
		}
		for _, re := range p.regexps {
			if re.MatchString(m) {
				return p.class
			}
		}
	}
	return FailureNone
}

// ClassifyStderr returns the class of a codex process that failed before a
// turn: empty stdout and the reason on stderr (e.g. "Error: thread/resume:
// thread/resume failed: no rollout found for thread id ... (code -32600)"
// is FailureResumeMissing, "... already has an active writer ..." is
// FailureActiveWriter). Other stderr text is classified like Classify; the
// stderr of a failure that is none of these (unknown model provider, empty
// prompt) is FailureNone.
func ClassifyStderr(stderr string) Failure {
	return Classify(stderr)
}

const retryNoticePrefix = "reconnecting"

// IsRetryNotice reports whether message is a non-fatal retry notice that
// codex writes as a top-level error event while it retries:
// "Reconnecting... 1/2 (cause)" or "Reconnecting... waiting for network
// (cause)" (an ellipsis character is accepted for the dots). Such an event
// is not followed by turn.failed unless the last retry fails too.
func IsRetryNotice(message string) bool {
	m := strings.TrimSpace(message)
	if len(m) < len(retryNoticePrefix) || !strings.EqualFold(m[:len(retryNoticePrefix)], retryNoticePrefix) {
		return false
	}
	rest := m[len(retryNoticePrefix):]
	return strings.HasPrefix(rest, "...") || strings.HasPrefix(rest, "\u2026")
}
