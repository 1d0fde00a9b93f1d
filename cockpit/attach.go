package cockpit

// DefaultPrefix is tmux's prefix key when no configuration changes it.
const DefaultPrefix = "C-b"

// NestedPrefix returns the prefix key of a cockpit opened inside the
// user's own tmux, whose prefix is outer: C-a, or C-b when the user's is
// C-a, so that each tmux has its own. Pure.
func NestedPrefix(outer string) string {
	if outer == "C-a" {
		return DefaultPrefix
	}
	return "C-a"
}

// AttachArgs returns the tmux arguments (after `-L socket`) that attach a
// terminal to the cockpit session. With nestedPrefix "" the client
// attaches to the session itself. Otherwise (from inside another tmux) it
// attaches to a new session grouped with it — the same windows and panes —
// whose prefix is nestedPrefix, so that the user's own prefix keeps
// working for the outer tmux; that session goes away when its client
// detaches. Pure.
func AttachArgs(session, nestedPrefix string) []string {
	if nestedPrefix == "" {
		return []string{"attach-session", "-t", "=" + session}
	}
	return []string{"new-session", "-t", "=" + session,
		";", "set-option", "destroy-unattached", "on",
		";", "set-option", "prefix", nestedPrefix}
}
