// Command batty runs a team of Codex agents as one crew.
package main

import (
	"os"
)

func main() {
	os.Exit(execute(os.Args[1:]))
}
