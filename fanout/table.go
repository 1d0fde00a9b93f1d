// Package fanout runs one instruction over every row of a CSV file: one
// fresh Codex thread per row, at most N at once, each answering with one
// JSON object, recorded durably as it finishes so that a rerun resumes
// where a job stopped (see Run).
package fanout

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/battyhq/batty/textclip"
)

// MaxInputBytes bounds an input CSV file. The output file and its journal
// have no bound: they hold every row's whole result.
const MaxInputBytes = 256 << 20

// maxInput is the bound ReadTable applies: MaxInputBytes, lowered by tests.
var maxInput = MaxInputBytes

// Table is a CSV file read whole: its header and its rows, every row as
// long as the header.
type Table struct {
	Columns []string
	Rows    [][]string
	// Lines holds the line each row starts on (1-based, the header is
	// line 1), for messages.
	Lines []int
}

// ReadTable decodes a CSV file with a header line. A byte order mark is
// skipped. It refuses a file without a header, an empty or duplicate
// column name, and a row whose field count differs from the header's,
// naming the line. It never panics.
func ReadTable(r io.Reader) (*Table, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(maxInput)+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("more than %d MiB: split the file", maxInput>>20)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("empty: a header line naming the columns is required")
	}
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if err := checkUTF8(cr, header, header); err != nil {
		return nil, err
	}
	crlf(header)
	if strings.HasPrefix(header[0], "\ufeff") {
		// Written back as the first bytes of OUT, it would be read as the
		// file's byte order mark: the output could not be read back.
		return nil, errors.New("line 1: the first column's name starts with a second byte order mark (U+FEFF): remove it")
	}
	seen := map[string]int{}
	for i, c := range header {
		if strings.TrimSpace(c) == "" {
			return nil, fmt.Errorf("line 1: column %d has no name: every column needs a name in the header line", i+1)
		}
		if j, ok := seen[c]; ok {
			return nil, fmt.Errorf("line 1: column %q appears twice (columns %d and %d): rename one", c, j+1, i+1)
		}
		seen[c] = i
	}
	t := &Table{Columns: header}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err // a csv.ParseError names the line
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("line %d: %d fields, the header has %d: every row needs one field per column (quote a field holding a comma)", line, len(rec), len(header))
		}
		if err := checkUTF8(cr, rec, header); err != nil {
			return nil, err
		}
		crlf(rec)
		t.Rows = append(t.Rows, rec)
		t.Lines = append(t.Lines, line)
	}
	return t, nil
}

// checkUTF8 refuses a record with a field that is not UTF-8 text, naming
// its line and column: neither codex's prompt nor the journal (JSON) can
// carry such a value unchanged, so its row would run with a mangled
// instruction and, after a crash, not be recognised as done.
func checkUTF8(cr *csv.Reader, rec, header []string) error {
	for i, v := range rec {
		if !utf8.ValidString(v) {
			line, _ := cr.FieldPos(i)
			return fmt.Errorf("line %d, column %q: not UTF-8 text: convert the file to UTF-8 (for example iconv -f WINDOWS-1252 -t UTF-8 IN)", line, textclip.Bytes(strings.ToValidUTF8(header[i], "?"), 40+len(textclip.Ellipsis), textclip.Ellipsis))
		}
	}
	return nil
}

// writeCSV encodes header and rows as CSV.
func writeCSV(header []string, rows [][]string) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(header); err != nil {
		return nil, err
	}
	if err := w.WriteAll(rows); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// crlf turns every CR LF inside the values into LF, as the CSV reader does
// with the line breaks of a quoted field: one left (from "\r\r\n", a common
// corruption of Windows line ends) would be read back from OUT as LF, and
// the row, no longer equal to its input, would run again on every rerun.
func crlf(rec []string) {
	for i, v := range rec {
		for strings.Contains(v, "\r\n") {
			v = strings.ReplaceAll(v, "\r\n", "\n")
		}
		rec[i] = v
	}
}
