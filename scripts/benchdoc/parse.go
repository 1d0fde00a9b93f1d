package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Result is one benchmark line: `BenchmarkName-PROCS  N  V unit  V unit …`.
type Result struct {
	// Name is the benchmark's name without "Benchmark" and without the
	// -PROCS suffix, sub-benchmarks included ("TitleBatch/batched").
	Name string `json:"name"`
	// Procs is GOMAXPROCS from the -PROCS suffix (1 when there is none).
	Procs int `json:"procs"`
	// Iterations is b.N.
	Iterations int64 `json:"iterations"`
	// Metrics maps each unit ("ns/op", "B/op", "MB/s", "p50-ms", …) to its
	// value.
	Metrics map[string]float64 `json:"metrics"`
}

// maxLine bounds one line of benchmark output; a longer line (test output
// can be anything) is skipped, never a result.
const maxLine = 1 << 20

// Parse reads `go test -bench` output (also with -v, -count and other
// test output mixed in) and returns its benchmark lines in order. Lines
// that are not benchmark results, and lines over maxLine bytes, are
// ignored; it fails only on a read error.
func Parse(r io.Reader) ([]Result, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []Result
	var line []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			line = append(line, chunk...)
		}
		if len(line) > maxLine {
			line, long = line[:0], true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if !long {
			if res, ok := ParseLine(string(line)); ok {
				out = append(out, res)
			}
		}
		line, long = line[:0], false
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("read benchmark output: %w", err)
		}
	}
}

// ParseLine parses one benchmark result line in the Go benchmark format
// (https://go.googlesource.com/proposal/+/master/design/14313-benchmark-format.md):
// the name, starting with "Benchmark" followed by a character that is not
// a lower-case letter, the iteration count, then value–unit pairs. ok is
// false for any other line, and for a line with no value–unit pair or
// with a value that is not a finite number.
func ParseLine(line string) (Result, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 || !strings.HasPrefix(f[0], "Benchmark") || !utf8.ValidString(line) {
		return Result{}, false
	}
	name := strings.TrimPrefix(f[0], "Benchmark")
	if r, _ := utf8.DecodeRuneInString(name); name == "" || unicode.IsLower(r) {
		return Result{}, false
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || n < 0 {
		return Result{}, false
	}
	res := Result{Name: name, Procs: 1, Iterations: n, Metrics: map[string]float64{}}
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if p, err := strconv.Atoi(name[i+1:]); err == nil && p > 0 {
			res.Name, res.Procs = name[:i], p
		}
	}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return Result{}, false
		}
		res.Metrics[f[i+1]] = v
	}
	return res, true
}
