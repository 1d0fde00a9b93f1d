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

// NestedSetup returns the tmux commands (each the arguments after
// `-L socket`) that prepare the session a terminal inside another tmux
// attaches to: a session called nested, grouped with session (the same
// windows and panes), whose prefix is nestedPrefix so that the user's own
// prefix keeps working for the outer tmux. They run before AttachArgs, one
// by one: tmux 3.3 cannot name a session created earlier in the same
// command sequence. The caller kills the session once its client has
// detached (tmux 3.3's destroy-unattached on a grouped session can take the
// whole server down). Pure.
func NestedSetup(session, nestedPrefix, nested string) [][]string {
	return [][]string{
		{"new-session", "-d", "-t", "=" + session, "-s", nested},
		{"set-option", "-t", "=" + nested + ":", "prefix", nestedPrefix},
	}
}

// AttachArgs returns the tmux arguments (after `-L socket`) that attach a
// terminal to the cockpit: to session itself when nested is "", else to the
// session nested that NestedSetup made. Pure.
func AttachArgs(session, nested string) []string {
	if nested == "" {
		return []string{"attach-session", "-t", "=" + session}
	}
	return []string{"attach-session", "-t", "=" + nested + ":"}
}
