// Command batty runs a team of Codex agents as one crew.
package main

import (
	"os"

	"github.com/battyhq/batty/cmd/batty/internal/iostreams"
	"github.com/battyhq/batty/shim"
)

func main() {
	if args, ok := shimArgs(os.Args[1:]); ok {
		// A shim lives as long as its agent, one per agent: it starts
		// without building the command tree it would never use.
		os.Exit(shim.Main(args))
	}
	os.Exit(execute(iostreams.System(), os.Args[1:]))
}

// shimArgs reports whether args (the command line after the program's
// name) run `batty shim`, and the shim's own arguments. They are exactly
// what the shim command, which parses no flags of its own, hands shim.Main,
// so the command tree is not needed for it. Pure.
func shimArgs(args []string) ([]string, bool) {
	if len(args) == 0 || args[0] != "shim" {
		return nil, false
	}
	return args[1:], true
}
