// Package searchindex is the full-text index of the turn journal (package
// journal): an SQLite database with an FTS5 table
// (<state>/index/search.db), through modernc.org/sqlite (pure Go: the
// binary stays static).
//
// The index is a cache of the journal, never the record. The daemon
// alone writes it (Writer: opened once, Sync after each turn appended);
// the commands only read it (Search), with the team running or stopped.
// The database runs in WAL mode with a busy timeout, so readers do not
// wait for the writer nor see "database is locked", and readers open it
// read-only.
//
// What makes it trustworthy:
//   - Rebuilt when missing, unreadable, of another schema or failing
//     SQLite's quick check: the writer removes it and indexes the journal
//     again from the start.
//   - Each journal file's indexed part is recorded (its inode, its size
//     indexed, a hash of its head): a journal replaced, truncated or moved
//     is indexed again from its start, its old rows deleted.
//   - A row is never served as it is: every hit is read back from the
//     journal line the row points at and served only when that line is
//     the row's turn (its key and thread) and holds the words. A stale row
//     (one pointing at another thread's record, records moved) is not
//     served; its journal is searched directly instead (read-repair: the
//     answer is repaired from the files), and the writer's next Sync finds
//     the journal changed and indexes it again.
//   - What the writer has not indexed yet (the end of a journal) is
//     searched directly too, so a search sees every turn appended.
package searchindex

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"strconv"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/project"
)

// DirName is the index's directory in the state directory, FileName the
// database's name in it.
const (
	DirName  = "index"
	FileName = "search.db"
)

// schemaVersion is the version of the database's tables; an index of
// another is rebuilt.
const schemaVersion = 2

// headBytes is how much of a journal's start identifies it.
const headBytes = 4096

// busyTimeoutMS is how long a connection waits for a lock.
const busyTimeoutMS = 10000

const schema = `
CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE sources(
	file TEXT PRIMARY KEY,
	ino INTEGER NOT NULL,
	size INTEGER NOT NULL,
	head TEXT NOT NULL
);
CREATE TABLE turns(
	-- The turn's time key: when it ended in microseconds since 1970, one
	-- more for each turn that ended the same microsecond before it; the
	-- index's rows are in time order, so the newest hits come first
	-- without a sort.
	id INTEGER PRIMARY KEY,
	key TEXT NOT NULL,
	agent TEXT NOT NULL,
	role TEXT NOT NULL,
	thread TEXT NOT NULL,
	message TEXT NOT NULL,
	attempt INTEGER NOT NULL,
	at INTEGER NOT NULL,
	file TEXT NOT NULL,
	off INTEGER NOT NULL,
	len INTEGER NOT NULL
);
CREATE INDEX turns_at ON turns(at);
CREATE INDEX turns_file ON turns(file, off);
CREATE VIRTUAL TABLE fts USING fts5(body, reply, commands, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 0');
`

// Path is the index's database in the project of l.
func Path(l project.Layout) string { return filepath.Join(l.Dir, DirName, FileName) }

// dsn is the data source name of the database at path, read-only or not.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(busyTimeoutMS)+")")
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	return (&url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: q.Encode()}).String()
}

// Writer is the index's one writer: the daemon's. Not safe for
// concurrent use: one goroutine owns it.
type Writer struct {
	l    project.Layout
	path string
	db   *sql.DB
	// Rebuilt says why Open started the index afresh ("" when it did
	// not).
	Rebuilt string
}

// Stats is what a Sync did.
type Stats struct {
	// Indexed counts the turns added, Reindexed the journals indexed
	// again from their start (replaced, truncated, moved), Removed the
	// journals gone whose rows were deleted.
	Indexed, Reindexed, Removed int
	// Skips are the journal lines that could not be read.
	Skips []journal.Skip
}

// Open opens the index of the project in l for writing, making it
// (<state>/index, 0700; the database 0600) when missing, and starting it
// afresh when it cannot be read, is of another schema or fails SQLite's
// quick check (Writer.Rebuilt says why). It indexes nothing: call Sync.
func Open(ctx context.Context, l project.Layout) (*Writer, error) {
	d, err := l.OpenDir(DirName, true)
	if err != nil {
		return nil, fmt.Errorf("open the search index: %w", err)
	}
	defer d.Close()
	w := &Writer{l: l, path: Path(l)}
	if err := refuseLinks(d); err != nil {
		return nil, err
	}
	db, why, err := w.openChecked(ctx)
	if err != nil {
		return nil, err
	}
	if why != "" {
		w.Rebuilt = why
		if err := removeDB(d); err != nil {
			return nil, err
		}
		if db, why, err = w.openChecked(ctx); err != nil {
			return nil, err
		}
		if why != "" {
			db.Close()
			return nil, fmt.Errorf("the search index %s cannot be made: %s", w.path, why)
		}
	}
	w.db = db
	for _, n := range []string{FileName, FileName + "-wal", FileName + "-shm"} {
		if err := d.Chmod(n, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			db.Close()
			return nil, fmt.Errorf("chmod %s: %w", n, err)
		}
	}
	return w, nil
}

// refuseLinks refuses a symbolic link (or any non-regular file) in the
// database's place: SQLite opens it by name.
func refuseLinks(d *atomicfile.Dir) error {
	for _, n := range []string{FileName, FileName + "-wal", FileName + "-shm", FileName + "-journal"} {
		fi, err := d.Lstat(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("the search index: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("the search index: %s is not a regular file (%v): remove it", filepath.Join(d.Path(), n), fi.Mode().Type())
		}
	}
	return nil
}

// removeDB removes the database and its companions.
func removeDB(d *atomicfile.Dir) error {
	for _, n := range []string{FileName, FileName + "-wal", FileName + "-shm", FileName + "-journal"} {
		if err := d.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the search index: %w", err)
		}
	}
	return d.Sync()
}

// openChecked opens (creating) the database and checks it; why is the
// reason it must be started afresh, with db nil, or "" with db open.
func (w *Writer) openChecked(ctx context.Context) (*sql.DB, string, error) {
	db, err := sql.Open("sqlite", dsn(w.path, false))
	if err != nil {
		return nil, "", fmt.Errorf("open the search index: %w", err)
	}
	// One connection: the writer is one goroutine, and a second one
	// would only wait for the first's lock.
	db.SetMaxOpenConns(1)
	why, err := check(ctx, db)
	if err != nil {
		db.Close()
		return nil, "", err
	}
	if why != "" {
		db.Close()
		return nil, why, nil
	}
	return db, "", nil
}

// check makes the schema in an empty database and checks an existing one:
// why it must be started afresh, "" when it is sound. err is for what no
// rebuild mends (the context ended).
func check(ctx context.Context, db *sql.DB) (why string, err error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "unreadable: " + err.Error(), nil
	}
	if n == 0 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return "unwritable: " + err.Error(), nil
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return "", fmt.Errorf("make the search index: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta(k, v) VALUES('schema', ?)`, strconv.Itoa(schemaVersion)); err != nil {
			return "", fmt.Errorf("make the search index: %w", err)
		}
		return "", tx.Commit()
	}
	if why := version(ctx, db); why != "" {
		return why, nil
	}
	var res string
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&res); err != nil || res != "ok" {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return fmt.Sprintf("corrupt (quick_check: %s %v)", res, err), nil
	}
	return "", nil
}

// version is why the database is not of this schema, "" when it is.
func version(ctx context.Context, db *sql.DB) string {
	var v string
	if err := db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'schema'`).Scan(&v); err != nil {
		return "unreadable schema: " + err.Error()
	}
	if v != strconv.Itoa(schemaVersion) {
		return fmt.Sprintf("schema %s, want %d", v, schemaVersion)
	}
	return ""
}

// Close checkpoints the write-ahead log into the database and closes it.
func (w *Writer) Close() error {
	if w.db == nil {
		return nil
	}
	_, cerr := w.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	err := w.db.Close()
	w.db = nil
	return errors.Join(err, cerr)
}

// source is what the index holds of one journal file.
type source struct {
	ino  uint64
	size int64
	head string
}

// sources reads the sources table.
func sources(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (map[string]source, error) {
	rows, err := q.QueryContext(ctx, `SELECT file, ino, size, head FROM sources`)
	if err != nil {
		return nil, fmt.Errorf("read the search index: %w", err)
	}
	defer rows.Close()
	m := map[string]source{}
	for rows.Next() {
		var f string
		var s source
		var ino int64
		if err := rows.Scan(&f, &ino, &s.size, &s.head); err != nil {
			return nil, fmt.Errorf("read the search index: %w", err)
		}
		s.ino = uint64(ino)
		m[f] = s
	}
	return m, rows.Err()
}

// headHash identifies a journal by its first n bytes.
func headHash(f *journal.File, n int64) (string, error) {
	b, err := f.Head(int(min(n, headBytes)))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// same reports whether f is the journal s indexed, grown or not.
func same(s source, f *journal.File) (bool, error) {
	if s.ino != f.Ino || f.Size < s.size {
		return false, nil
	}
	h, err := headHash(f, s.size)
	return h == s.head, err
}

// batch bounds the turns written in one transaction.
const batch = 5000

// Sync brings the index up to the journal: the lines appended since the
// last Sync added, a journal replaced, truncated or moved indexed again
// from its start, a journal gone taken out. The daemon calls it after it
// appends a turn (and once at its start); it costs the new lines.
func (w *Writer) Sync(ctx context.Context) (Stats, error) {
	var st Stats
	j, err := journal.Open(w.l)
	if err != nil {
		return st, err
	}
	defer j.Close()
	agents, err := j.Agents()
	if err != nil {
		return st, err
	}
	have, err := sources(ctx, w.db)
	if err != nil {
		return st, err
	}
	present := map[string]bool{}
	for _, a := range agents {
		present[journal.FileName(a)] = true
	}
	for file := range have {
		if !present[file] {
			if err := w.drop(ctx, file); err != nil {
				return st, err
			}
			st.Removed++
		}
	}
	for _, a := range agents {
		if err := w.syncFile(ctx, j, a, have, &st); err != nil {
			return st, err
		}
	}
	return st, nil
}

// SyncAgent is Sync for agent's journal alone: what the daemon calls
// after it appends a turn of agent, at the cost of that turn.
func (w *Writer) SyncAgent(ctx context.Context, agent string) (Stats, error) {
	var st Stats
	j, err := journal.Open(w.l)
	if err != nil {
		return st, err
	}
	defer j.Close()
	var s source
	var ino int64
	have := map[string]source{}
	switch err := w.db.QueryRowContext(ctx, `SELECT ino, size, head FROM sources WHERE file = ?`, journal.FileName(agent)).Scan(&ino, &s.size, &s.head); {
	case err == nil:
		s.ino = uint64(ino)
		have[journal.FileName(agent)] = s
	case !errors.Is(err, sql.ErrNoRows):
		return st, fmt.Errorf("read the search index: %w", err)
	}
	return st, w.syncFile(ctx, j, agent, have, &st)
}

// drop deletes a journal's rows and its source.
func (w *Writer) drop(ctx context.Context, file string) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	defer tx.Rollback()
	if err := dropIn(ctx, tx, file); err != nil {
		return err
	}
	return tx.Commit()
}

func dropIn(ctx context.Context, tx *sql.Tx, file string) error {
	for _, q := range []string{
		`DELETE FROM fts WHERE rowid IN (SELECT id FROM turns WHERE file = ?)`,
		`DELETE FROM turns WHERE file = ?`,
		`DELETE FROM sources WHERE file = ?`,
	} {
		if _, err := tx.ExecContext(ctx, q, file); err != nil {
			return fmt.Errorf("search index: drop %s: %w", file, err)
		}
	}
	return nil
}

// syncFile indexes what agent's journal holds past what the index has.
func (w *Writer) syncFile(ctx context.Context, j *journal.Dir, agent string, have map[string]source, st *Stats) error {
	f, err := j.OpenFile(agent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	s, known := have[f.Name]
	from := int64(0)
	if known {
		ok, err := same(s, f)
		if err != nil {
			return err
		}
		if ok {
			from = s.size
		} else {
			st.Reindexed++
		}
	}
	if known && from == f.Size {
		return nil
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	defer func() { tx.Rollback() }()
	if known && from == 0 {
		if err := dropIn(ctx, tx, f.Name); err != nil {
			return err
		}
	}
	ins, err := prepare(ctx, tx)
	if err != nil {
		return err
	}
	n := 0
	end, err := f.Scan(from, func(off, length int64, r journal.Record) error {
		if err := ins.add(ctx, f.Name, off, length, r); err != nil {
			return err
		}
		st.Indexed++
		if n++; n%batch == 0 {
			// A long catch-up (a rebuild) commits as it goes: the
			// source's size says how far it got.
			if err := w.commitSource(ctx, tx, f, off+length+1); err != nil {
				return err
			}
			ins.close()
			if tx, err = w.db.BeginTx(ctx, nil); err != nil {
				return fmt.Errorf("search index: %w", err)
			}
			if ins, err = prepare(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	}, func(s journal.Skip) { st.Skips = append(st.Skips, s) })
	if err != nil {
		ins.close()
		return err
	}
	defer ins.close()
	return w.commitSource(ctx, tx, f, end)
}

// commitSource records that f is indexed up to end and commits tx.
func (w *Writer) commitSource(ctx context.Context, tx *sql.Tx, f *journal.File, end int64) error {
	h, err := headHash(f, end)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO sources(file, ino, size, head) VALUES(?, ?, ?, ?)
		ON CONFLICT(file) DO UPDATE SET ino = excluded.ino, size = excluded.size, head = excluded.head`,
		f.Name, int64(f.Ino), end, h); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	return nil
}

// maxSameTime bounds the turns whose time keys a turn's may follow.
const maxSameTime = 1 << 16

// inserter adds turns to the index in one transaction.
type inserter struct{ turn, fts *sql.Stmt }

func prepare(ctx context.Context, tx *sql.Tx) (*inserter, error) {
	turn, err := tx.PrepareContext(ctx, `INSERT INTO turns(id, key, agent, role, thread, message, attempt, at, file, off, len) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(id) DO NOTHING`)
	if err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	fts, err := tx.PrepareContext(ctx, `INSERT INTO fts(rowid, body, reply, commands) VALUES(?, ?, ?, ?)`)
	if err != nil {
		turn.Close()
		return nil, fmt.Errorf("search index: %w", err)
	}
	return &inserter{turn: turn, fts: fts}, nil
}

func (i *inserter) add(ctx context.Context, file string, off, length int64, r journal.Record) error {
	id := r.At.UnixMicro()
	for tries := 0; ; tries++ {
		res, err := i.turn.ExecContext(ctx, id, r.Key, r.Agent, r.Role, r.Thread, r.Message.ID, r.Attempt, r.At.UnixNano(), file, off, length)
		if err != nil {
			return fmt.Errorf("search index: add %s: %w", r.Key, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("search index: add %s: %w", r.Key, err)
		}
		if n == 1 {
			break
		}
		if tries == maxSameTime {
			return fmt.Errorf("search index: add %s: %d turns ended within %d µs of it", r.Key, maxSameTime, maxSameTime)
		}
		id++
	}
	if _, err := i.fts.ExecContext(ctx, id, r.Message.Body, r.Reply, commandsText(r)); err != nil {
		return fmt.Errorf("search index: add %s: %w", r.Key, err)
	}
	return nil
}

func (i *inserter) close() {
	i.turn.Close()
	i.fts.Close()
}

// Remove removes the index of the project in l (the daemon makes it
// again); none is no error.
func Remove(l project.Layout) error {
	d, err := l.OpenDir(DirName, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	return removeDB(d)
}
