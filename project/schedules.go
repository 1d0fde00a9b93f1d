package project

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/battyhq/batty/schedule"
)

// SchedulesName is the state file of the team's schedules (package
// schedule): each one's state, runs and run in flight, by name.
const SchedulesName = "schedules.json"

// maxSchedulesFile bounds the state file read: far above what MaxStates
// schedules take, so that a file planted by an agent cannot exhaust memory.
const maxSchedulesFile = 16 << 20

// ScheduleStore keeps the schedules' states in state/schedules.json,
// through the state directory's link-refusing, atomic writes.
type ScheduleStore struct{ Layout Layout }

func (s ScheduleStore) path() string { return filepath.Join(s.Layout.StateDir(), SchedulesName) }

// Load reads the state file; a missing one is no state. A file that does
// not decode is an error naming it: the daemon does not start rather than
// forget runs (and repeat them).
func (s ScheduleStore) Load() (map[string]schedule.State, error) {
	d, err := s.Layout.OpenDir(subState, false)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]schedule.State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.path(), err)
	}
	defer d.Close()
	f, err := d.OpenFile(SchedulesName, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]schedule.State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.path(), err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSchedulesFile+1))
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", s.path(), err)
	}
	if len(b) > maxSchedulesFile {
		return nil, fmt.Errorf("state file %s is larger than %d bytes: move it away to start the schedules afresh (their runs are counted from zero again)", s.path(), maxSchedulesFile)
	}
	states, err := schedule.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("state file %s is corrupt (%v): move it away to start the schedules afresh (their runs are counted from zero again)", s.path(), err)
	}
	return states, nil
}

// Save writes the state file atomically and durably, never through a link.
func (s ScheduleStore) Save(states map[string]schedule.State) error {
	b, err := schedule.Encode(states)
	if err != nil {
		return err
	}
	d, err := s.Layout.OpenDir(subState, true)
	if err != nil {
		return fmt.Errorf("write state %s: %w", s.path(), err)
	}
	defer d.Close()
	if err := d.WriteFile(SchedulesName, b, 0o600); err != nil {
		return fmt.Errorf("write state %s: %w", s.path(), err)
	}
	return nil
}
