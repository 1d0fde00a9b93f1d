// Command batty runs a team of Codex agents as one crew.
package main

import (
	"os"

	"github.com/battyhq/batty/cmd/batty/internal/iostreams"
)

func main() {
	os.Exit(execute(iostreams.System(), os.Args[1:]))
}
