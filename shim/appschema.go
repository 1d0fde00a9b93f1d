package shim

import (
	"encoding/json"
	"fmt"
	"os"
)

// maxSchemaFile bounds an output schema file read for the app-server.
const maxSchemaFile = 1 << 20

// appOutputSchema reads the output schema file (codex.ExecOptions.OutputSchema,
// "" none) for turn/start's outputSchema: what `codex exec
// --output-schema` reads from the same file. An unreadable file, one
// larger than maxSchemaFile, or one that is not JSON is an error of the
// turn.
func appOutputSchema(path string) (json.RawMessage, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	if len(b) > maxSchemaFile {
		return nil, fmt.Errorf("output schema %s: larger than %d bytes", path, maxSchemaFile)
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("output schema %s: not JSON", path)
	}
	return json.RawMessage(b), nil
}
