package codextest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/battyhq/batty/scriptedmodel"
)

// ShellTool is the name of the function tool the mock model calls for
// [[mock:shell CMD]]: codex's unified exec tool, whose JSON arguments are
// {"cmd": "<shell command>"} (other properties optional).
const ShellTool = scriptedmodel.ShellTool

// Reply describes how the mock answers one request.
//
// When Status is set (and not 200) the answer is a plain HTTP error;
// otherwise it is an event stream: response.created, then a pause of Hold,
// then either response.failed (FailCode set), or a function_call item
// (Shell set), or an assistant message item (Text non-empty), or no item,
// and finally response.completed with usage. The zero Reply is therefore
// a completed response with no output.
type Reply struct {
	// Text is the assistant message's text; "" sends no message item.
	Text string
	// Shell, when non-empty, makes the model call [ShellTool] with
	// {"cmd": Shell} plus ShellArgs instead of sending Text.
	Shell string
	// ShellArgs holds further [ShellTool] arguments, e.g. "login",
	// "yield_time_ms", "tty", "workdir" (see [ShellReply]).
	ShellArgs map[string]any
	// Status, when non-zero and not 200, is sent as the HTTP status with
	// Body (application/json) and no event stream.
	Status int
	// Body is the JSON body of an HTTP error reply.
	Body string
	// Header holds extra response headers, for either kind of reply.
	Header http.Header
	// FailCode and FailMessage, when FailCode is set, end the stream with
	// response.failed carrying error {code, message}.
	FailCode, FailMessage string
	// Hold is how long to keep the stream open after response.created
	// before writing the rest. The wait ends early, without writing
	// anything more, when the client goes away or the server closes.
	Hold time.Duration
	// InputTokens and OutputTokens override the usage reported in
	// response.completed; 0 means len(body)/4 and len(output)/4+1.
	InputTokens, OutputTokens int
}

// TextReply answers with an assistant message of exactly text.
func TextReply(text string) Reply { return Reply{Text: text} }

// EchoReply is the reply to a message without a directive: "ECHO: " and
// the first 60 characters of the request's last user message, with blanks
// trimmed.
func EchoReply(req Request) Reply {
	return Reply{Text: "ECHO: " + firstRunes(strings.TrimSpace(req.LastUserText()), 60)}
}

// ShellReply makes the model call [ShellTool] to run cmd with
// {"cmd": cmd, "login": false, "yield_time_ms": 30000}: codex runs
// `/bin/bash -c cmd` with plain pipes (no login profile, so no dependence on
// the machine's shell start-up files) and waits up to 30 s for it to exit
// before answering the model; a command running longer is left running in
// the background and the follow-up carries its partial output.
func ShellReply(cmd string) Reply {
	return Reply{Shell: cmd, ShellArgs: map[string]any{"login": false, "yield_time_ms": 30000}}
}

// ShellDoneReply answers a follow-up request after a tool call:
// "SHELL_DONE: " and an excerpt (at most 200 characters, blanks trimmed)
// of the last tool output in req, taken from after its "Output:" line
// when it has one.
func ShellDoneReply(req Request) Reply {
	out := ""
	if n := len(req.ToolOutputs); n > 0 {
		out = req.ToolOutputs[n-1]
	}
	if _, after, ok := strings.Cut(out, "\nOutput:\n"); ok {
		out = after
	}
	return Reply{Text: "SHELL_DONE: " + firstRunes(strings.TrimSpace(out), 200)}
}

// QuotaReply is HTTP 429 with a ChatGPT-plan usage_limit_reached error for
// plan "plus" that resets at resetsAt. Codex reports it, without retrying,
// as "You’ve hit your usage limit. … try again at <local time>."
func QuotaReply(resetsAt time.Time) Reply {
	return Reply{
		Status: http.StatusTooManyRequests,
		Body: fmt.Sprintf(`{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached",`+
			`"plan_type":"plus","resets_at":%d}}`, resetsAt.Unix()),
	}
}

// QuotaHeadersReply is HTTP 429 with a usage_limit_reached error that
// names no reset time (codex then says only "try again later"), whose
// rate-limit headers (x-codex-primary-*) say the 5-hour window is used up
// and resets at resetsAt: only a client that reads the rate-limit
// snapshot knows when.
func QuotaHeadersReply(resetsAt time.Time) Reply {
	h := http.Header{}
	h.Set("x-codex-primary-used-percent", "100")
	h.Set("x-codex-primary-window-minutes", "300")
	h.Set("x-codex-primary-reset-at", strconv.FormatInt(resetsAt.Unix(), 10))
	return Reply{
		Status: http.StatusTooManyRequests,
		Header: h,
		Body:   `{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus"}}`,
	}
}

// ContextReply ends the stream with response.failed, error code
// context_length_exceeded. Codex reports it, without retrying, as "Codex
// ran out of room in the model's context window. …".
func ContextReply() Reply {
	return Reply{
		FailCode:    "context_length_exceeded",
		FailMessage: "Your input exceeds the context window of this model. Please adjust your input and try again.",
	}
}

// SlowReply holds the stream open for d after response.created, then
// finishes with next (whose own Hold is ignored).
func SlowReply(d time.Duration, next Reply) Reply {
	next.Hold = d
	return next
}

// AuthReply is HTTP 401 with an invalid_api_key error.
func AuthReply() Reply {
	return Reply{
		Status: http.StatusUnauthorized,
		Body: `{"error":{"message":"Incorrect API key provided: sk-mock. You can find your API key at ` +
			`https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
	}
}

// ServerErrorReply is HTTP 500 with a server_error body.
func ServerErrorReply() Reply {
	return Reply{
		Status: http.StatusInternalServerError,
		Body:   errorBody("server_error", "The server had an error while processing your request. Sorry about that!"),
	}
}

// errorBody is an OpenAI-style JSON error body.
func errorBody(typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": nil,
	}})
	return string(b)
}

// badDirective is the reply to an unknown or malformed directive.
func badDirective(format string, args ...any) Reply {
	return Reply{
		Status: http.StatusBadRequest,
		Body:   errorBody("invalid_request_error", "codextest: "+fmt.Sprintf(format, args...)),
	}
}

// findDirective returns the name and argument of the last complete
// "[[mock:NAME ARG]]" in text.
func findDirective(text string) (name, arg string, ok bool) {
	const open = "[[mock:"
	for rest := text; ; {
		i := strings.Index(rest, open)
		if i < 0 {
			return name, arg, ok
		}
		rest = rest[i+len(open):]
		end := strings.Index(rest, "]]")
		if end < 0 {
			return name, arg, ok
		}
		inner := strings.TrimSpace(rest[:end])
		rest = rest[end+2:]
		n, a := inner, ""
		if j := strings.IndexFunc(inner, unicode.IsSpace); j >= 0 {
			n, a = inner[:j], strings.TrimSpace(inner[j:])
		}
		name, arg, ok = n, a, true
	}
}

// directiveReply maps one directive to its reply.
func directiveReply(req Request, name, arg string) Reply {
	switch name {
	case "reply":
		return TextReply(arg)
	case "shell":
		if arg == "" {
			return badDirective("[[mock:shell]] needs a command")
		}
		return ShellReply(arg)
	case "quota":
		return QuotaReply(time.Now().Add(time.Hour))
	case "quotaheaders":
		return QuotaHeadersReply(time.Now().Add(90 * time.Minute))
	case "context":
		return ContextReply()
	case "slow":
		sec, err := strconv.ParseFloat(arg, 64)
		if err != nil || sec < 0 {
			return badDirective("[[mock:slow SECONDS]]: bad SECONDS %q", arg)
		}
		return SlowReply(time.Duration(sec*float64(time.Second)), EchoReply(req))
	case "auth":
		return AuthReply()
	case "error500":
		return ServerErrorReply()
	}
	return badDirective("unknown directive [[mock:%s]]", name)
}

// firstRunes returns the first n runes of s.
func firstRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k]
		}
		i++
	}
	return s
}

// writeHTTPError writes a JSON error reply.
func writeHTTPError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// write sends reply to the client of r.
func (s *Server) write(w http.ResponseWriter, r *http.Request, req Request, reply Reply) {
	for k, vs := range reply.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("x-request-id", fmt.Sprintf("req_mock_%d", req.Seq))
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeHTTPError(w, reply.Status, reply.Body)
		return
	}

	st := scriptedmodel.StartStream(w, fmt.Sprintf("mock_%d", req.Seq), req.Model, len(req.Body))
	if s.takeDrop() {
		abortStream()
	}

	if reply.Hold > 0 {
		t := time.NewTimer(reply.Hold)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		case <-s.quit:
			t.Stop()
			return
		}
	}

	if reply.FailCode != "" {
		st.Fail(reply.FailCode, reply.FailMessage)
		return
	}
	switch {
	case reply.Shell != "":
		a := map[string]any{}
		for k, v := range reply.ShellArgs {
			a[k] = v
		}
		a["cmd"] = reply.Shell
		args, _ := json.Marshal(a)
		st.FunctionCall(ShellTool, string(args))
	case reply.Text != "":
		st.Message(reply.Text)
	}
	st.Complete(reply.InputTokens, reply.OutputTokens)
}
