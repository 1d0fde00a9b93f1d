package orchestrator

// turnError is an agent's last error after a turn that did not complete:
// its status, its failure kind when it has one, and the error — "failed
// exit: codex exited 3", "interrupted: turn interrupted" (no empty kind
// between). It is the form of a scheduled run's error too. Pure.
func turnError(status, failure, err string) string {
	s := status
	if failure != "" {
		s += " " + failure
	}
	return s + ": " + err
}
