// Package redact takes secrets out of a text before it leaves batty's
// records (`batty threads show`, `batty search`): API keys and tokens of
// the common services, private keys, credentials in URLs, bearer tokens
// and the values of assignments whose name says secret. Each is replaced
// by "[REDACTED:<kind>]"; what names it (a variable's name, "Bearer ",
// the URL's user) is kept, so the text still reads.
//
// It is a best effort over known shapes, not a guarantee: a secret of no
// known shape passes. Pure functions.
package redact

import (
	"regexp"
	"strings"
)

// Mark is how a redacted secret of kind reads.
func Mark(kind string) string { return "[REDACTED:" + kind + "]" }

// rule is one shape of secret: re matches it; the submatch named "s" is
// the secret (the whole match when there is none).
type rule struct {
	kind string
	re   *regexp.Regexp
}

// rules are tried in order; a longer, more specific shape comes first.
// No rule matches a mark, so a text redacted twice is redacted once.
var rules = []rule{
	{"private-key", regexp.MustCompile(`(?s)(?P<s>-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z))`)},
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
	{"openai", regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{20,}`)},
	{"github", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`)},
	{"gitlab", regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`)},
	{"aws-key-id", regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b`)},
	{"google", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
	{"slack", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
	{"slack-webhook", regexp.MustCompile(`https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}`)},
	{"stripe", regexp.MustCompile(`\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}`)},
	{"npm", regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`)},
	{"huggingface", regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`)},
	{"bearer", regexp.MustCompile(`(?i)\b(?:bearer|token)\s+(?P<s>[A-Za-z0-9._~+/-]{16,}=*)`)},
	{"basic-auth", regexp.MustCompile(`(?i)\bbasic\s+(?P<s>[A-Za-z0-9+/]{16,}=*)`)},
	{"url-password", regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@\[\]]+:(?P<s>[^\s/@\[\]]+)@`)},
	{"secret", regexp.MustCompile(`(?i)\b[A-Za-z0-9_.-]*(?:api[_-]?key|secret|token|passwd|password|pwd|access[_-]?key|private[_-]?key|credential)[A-Za-z0-9_.-]*["']?\s*(?:=|:|:=|=>)\s*["']?(?P<s>[^\s"',;\[][^\s"',;]{7,})`)},
}

// Text is s with every secret of a known shape replaced by its mark.
// Applying it again changes nothing. Pure.
func Text(s string) string {
	out, _ := Count(s)
	return out
}

// Count is Text(s) and how many secrets it replaced. Pure.
func Count(s string) (string, int) {
	n := 0
	for _, r := range rules {
		if !r.re.MatchString(s) {
			continue
		}
		si := r.re.SubexpIndex("s")
		var b strings.Builder
		last := 0
		for _, m := range r.re.FindAllStringSubmatchIndex(s, -1) {
			from, to := m[0], m[1]
			if si > 0 && m[2*si] >= 0 {
				from, to = m[2*si], m[2*si+1]
			}
			secret := s[from:to]
			if strings.HasPrefix(secret, "[REDACTED:") {
				continue
			}
			b.WriteString(s[last:from])
			b.WriteString(Mark(r.kind))
			last = to
			n++
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	return s, n
}
