// Package codextest runs the real Codex CLI (`codex exec --json`) in tests
// against a local mock of the OpenAI Responses API.
//
// A test creates a [Server] (an httptest server on 127.0.0.1 that speaks the
// Responses API's server-sent events on POST /v1/responses), writes a
// CODEX_HOME with [Server.WriteHome] whose config.toml points a custom model
// provider at the server, finds the binary with [Codex] or [CodexNative], and
// starts codex with [Start]. The written home keeps codex offline: update
// checks, analytics, plugins, apps and web search are disabled, both retry
// counts are 0, approvals are never asked and the sandbox is off, so commands
// the mock model asks for run non-interactively.
//
// # Scripting replies
//
// The mock decides its answer from a directive in the text of the LAST user
// message of each request, so a test can choose the behaviour per message.
// A directive has the form
//
//	[[mock:NAME]]  or  [[mock:NAME ARGUMENT]]
//
// where NAME is a lower-case word and ARGUMENT runs to the first "]]"
// (leading and trailing blanks trimmed; it cannot contain "]]"). The double
// brackets and the "mock:" prefix keep directives apart from any prompt
// header wrapped around the message; if the message holds several
// directives, the last one wins. Directives:
//
//	(none)                 reply "ECHO: " + the first 60 characters of the
//	                       last user message (blanks trimmed)
//	[[mock:reply TEXT]]    reply exactly TEXT
//	[[mock:shell CMD]]     call the exec_command tool to run CMD (see
//	                       [ShellReply]); the follow-up request carrying the
//	                       tool's output gets the reply "SHELL_DONE: " + an
//	                       excerpt of the output
//	[[mock:quota]]         HTTP 429 usage_limit_reached, plan "plus", resets in 1h
//	[[mock:quotaheaders]]  HTTP 429 usage_limit_reached naming no reset
//	                       time, with x-codex-primary-* rate-limit headers:
//	                       100% used, 300-minute window, resets in 90 min
//	[[mock:context]]       response.failed with code context_length_exceeded
//	[[mock:slow SECONDS]]  send response.created, hold the stream SECONDS
//	                       (or until the client leaves or the server closes),
//	                       then finish like the default echo reply
//	[[mock:auth]]          HTTP 401 invalid_api_key
//	[[mock:error500]]      HTTP 500
//
// An unknown directive, or a malformed argument, is answered with HTTP 400
// whose message names the problem, so codex reports it as a turn failure.
//
// CMD cannot contain "]]" (write `test …` instead of `[[ … ]]`).
//
// Every request whose input has a tool output (function_call_output or
// custom_tool_call_output) after its last user message is a follow-up to a
// tool call and gets the "SHELL_DONE: " reply, whatever the directive.
//
// Compaction requests (Kind "compaction", sent by codex before resuming a
// thread whose context overflowed) end with codex's own compaction prompt
// as the last user message, so they get the echo reply unless a hook
// answers them.
//
// [Server.SetDefault] replaces the echo reply for messages without a
// directive, and [Server.Handle] installs a hook that decides every reply
// itself (it may call [Server.Scripted] to fall back to the rules above).
//
// Successful replies carry usage: input_tokens is len(body)/4, output_tokens
// is len(text)/4+1, cached and reasoning tokens are 0.
package codextest
