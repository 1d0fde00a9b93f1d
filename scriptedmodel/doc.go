// Package scriptedmodel is a stand-in for the model behind the Codex CLI: a
// local server speaking the OpenAI Responses API (POST /v1/responses,
// answered with server-sent events) that plays a short, fixed script instead
// of thinking. `batty demo` uses it to show a team at work with no OpenAI
// account and nothing leaving the machine: the Codex CLI is real, batty is
// real, the commands the "model" asks for really run; only the model's
// decisions are scripted.
//
// The pieces:
//
//   - [Script] decides every answer from the request alone (a pure
//     function, [Script.Next]): which role is asking (its standing
//     instructions), who sent the message it works on (batty's message
//     header) and how far the turn got (the tool outputs since that
//     message). Nothing is remembered between requests, so agents may ask
//     concurrently and in any order.
//   - [Server] listens on 127.0.0.1 on a port of its own, answers each
//     request with the script's step, and reports every step to an
//     observer.
//   - [WriteCodexHome] writes a CODEX_HOME whose config.toml points the
//     Codex CLI at the server (a custom model provider, wire_api
//     "responses", no login) and keeps it offline.
//
// The demo script ([DemoScript]): the architect gets a goal from the human
// and runs `<batty> send engineer-N '<task>'` once per task (<batty> being
// the command its instructions give, batty's absolute path), then ends
// its turn with a short final answer, batty's reply to the human; each
// engineer runs its task's command in its working directory and ends its
// turn with the report as its final answer, which batty delivers to the
// architect as a reply; once the architect has every report it sends the
// human `<batty> send human '…'`, a message that starts with
// [AnswerHeading]. Commands are run the way a real model asks: Codex's
// exec_command with {"cmd", "yield_time_ms"}, so in a login shell.
package scriptedmodel
