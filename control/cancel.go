package control

// FinishedRefusal is the refusal of a cancel for a message that has an
// outcome already (status). It is a pure function.
func FinishedRefusal(id, box, status string) CancelResult {
	return CancelResult{ID: id, Box: box, Result: CancelRefused, Detail: "finished already (" + status + ")"}
}
