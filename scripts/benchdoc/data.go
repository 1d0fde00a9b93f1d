package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Data is what docs/benchmarks.json holds: the latest run of every group.
// Recording a group replaces that group's run and keeps the others, so a
// partial run of scripts/bench.sh loses no other group's figures.
type Data struct {
	Groups map[string]Run `json:"groups"`
}

// Run is one group's latest run.
type Run struct {
	// Command is the command that produced the results.
	Command string `json:"command"`
	// Date is the UTC date of the run (YYYY-MM-DD).
	Date string `json:"date"`
	// Machine is where it ran.
	Machine Machine `json:"machine"`
	// Skipped, when set, says why the group was not measured; Results is
	// then empty.
	Skipped string `json:"skipped,omitempty"`
	// Results are the benchmark lines of the run, in output order.
	Results []Result `json:"results,omitempty"`
}

// Load reads the data file at path; a missing file is an empty Data.
func Load(path string) (*Data, error) {
	d := &Data{Groups: map[string]Run{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read benchmark data: %w", err)
	}
	if err := json.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("benchmark data %s: %w (fix or remove the file; scripts/bench.sh rewrites it)", path, err)
	}
	if d.Groups == nil {
		d.Groups = map[string]Run{}
	}
	return d, nil
}

// Save writes d to path through a temporary file renamed over it, so a
// reader never sees half a file.
func (d *Data) Save(path string) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("encode benchmark data: %w", err)
	}
	return writeFileAtomic(path, append(b, '\n'))
}

// Record stores run as group's latest run. A skipped run replaces only a
// group that has no results: a machine without the Codex CLI, say, keeps
// the figures measured where it was installed (it returns false then).
func (d *Data) Record(group string, run Run) bool {
	if old, ok := d.Groups[group]; ok && run.Skipped != "" && len(old.Results) > 0 {
		return false
	}
	d.Groups[group] = run
	return true
}

// utcDate is the date of t in UTC as YYYY-MM-DD.
func utcDate(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// writeFileAtomic writes b to path via a temporary file in the same
// directory, fsynced and renamed over path.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
