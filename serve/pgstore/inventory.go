package pgstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing/fstest"
	"time"

	"github.com/lib/pq"
	"github.com/seedinit/seedinit/serve/inventory"
)

// Files are an inventory's files by path (slash separated, relative to
// its folder): those inventory.Load reads, as written.
type Files map[string][]byte

// maxFile bounds a file read for the database; inventory.LoadFS refuses
// what is over its own, smaller, limit with the file's name.
const maxFile = 8 << 20

// ReadDir reads the inventory files in dir.
func ReadDir(dir string) (Files, error) {
	files := Files{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() || !inventory.IsInventoryFile(rel) {
			if d.IsDir() && p != dir && d.Name()[0] == '.' {
				return filepath.SkipDir
			}
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
		if err != nil {
			return err
		}
		if len(b) > maxFile {
			return fmt.Errorf("%s: more than %d MiB", rel, maxFile>>20)
		}
		files[rel] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read inventory %s: %w", dir, err)
	}
	return files, nil
}

// FS is the files as a file system, for inventory.LoadFS.
func (f Files) FS() fs.FS {
	m := fstest.MapFS{}
	for p, c := range f {
		m[p] = &fstest.MapFile{Data: c, Mode: 0o644}
	}
	return m
}

// Digest sums the files' names and contents: equal digests are the same
// inventory.
func (f Files) Digest() string {
	paths := make([]string, 0, len(f))
	for p := range f {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	h := sha256.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(f[p]))
		h.Write(f[p])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Generation is one inventory as stored: each load of changed files is
// the next number.
type Generation struct {
	Number int64
	// Made is when it was stored: the time its manifests say they were
	// signed, the same on every replica.
	Made              time.Time
	Digest, Source    string
	Instances, Groups int
}

// keepGenerations is how many generations the database keeps: the last
// is served; the ones before are there to see what changed.
const keepGenerations = 20

// ErrNoInventory is the error of a database no inventory was loaded into.
var ErrNoInventory = errors.New("no inventory loaded (seedinit serve load --db DSN DIR)")

// Load checks files as serving them would (inventory.LoadFS) and stores
// them as the next generation, where every replica picks them up, unless
// they are the latest generation's already (changed false). An inventory
// with problems is refused, its error inventory.Problems, and nothing is
// stored: the replicas go on serving the last good one. source says where
// the files came from (a folder, a host).
func (db *DB) Load(ctx context.Context, files Files, source string) (gen Generation, inv *inventory.Inventory, changed bool, err error) {
	inv, err = inventory.LoadFS(files.FS(), source)
	if err != nil {
		return gen, nil, false, err
	}
	gen = Generation{Digest: files.Digest(), Source: quoteSource(source), Instances: len(inv.Instances), Groups: len(inv.Groups)}
	err = db.inTx(ctx, nil, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockInventory)); err != nil {
			return err
		}
		var last Generation
		err := tx.QueryRowContext(ctx, "SELECT generation, made, digest FROM seedinit_inventory ORDER BY generation DESC LIMIT 1").Scan(&last.Number, &last.Made, &last.Digest)
		if err != nil && !isNoRows(err) {
			return err
		}
		if err == nil && last.Digest == gen.Digest {
			gen.Number, gen.Made = last.Number, last.Made
			return nil
		}
		gen.Number, changed = last.Number+1, true
		if err := tx.QueryRowContext(ctx, "INSERT INTO seedinit_inventory (generation, digest, source, instances, groups) VALUES ($1, $2, $3, $4, $5) RETURNING made",
			gen.Number, gen.Digest, gen.Source, gen.Instances, gen.Groups).Scan(&gen.Made); err != nil {
			return err
		}
		paths := make([]string, 0, len(files))
		contents := make([][]byte, 0, len(files))
		for p, c := range files {
			paths, contents = append(paths, p), append(contents, c)
		}
		// One statement for all the files, not a round trip each.
		if _, err := tx.ExecContext(ctx, "INSERT INTO seedinit_inventory_file (generation, path, content) SELECT $1, p, c FROM unnest($2::text[], $3::bytea[]) AS f(p, c)",
			gen.Number, pq.Array(paths), pq.Array(contents)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM seedinit_inventory WHERE generation <= $1", gen.Number-keepGenerations); err != nil {
			return err
		}
		// Delivered at commit, to every replica listening.
		_, err = tx.ExecContext(ctx, "SELECT pg_notify('"+notifyChannel+"', $1)", strconv.FormatInt(gen.Number, 10))
		return err
	})
	if err != nil {
		return gen, nil, false, fmt.Errorf("store inventory %s in %s: %w", source, db.where, err)
	}
	return gen, inv, changed, nil
}

// notifyChannel is where Load says a generation was stored.
const notifyChannel = "seedinit_inventory"

// Inventory is the latest generation, read and checked (inventory.LoadFS)
// as it was when it was stored: a replica of another version of seedinit
// may find problems the loader did not, and then it keeps what it serves.
func (db *DB) Inventory(ctx context.Context) (*inventory.Inventory, Generation, error) {
	var gen Generation
	files := Files{}
	// One snapshot: a Load that prunes this generation meanwhile does
	// not take its files away half read.
	err := db.inTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, "SELECT generation, made, digest, source, instances, groups FROM seedinit_inventory ORDER BY generation DESC LIMIT 1").
			Scan(&gen.Number, &gen.Made, &gen.Digest, &gen.Source, &gen.Instances, &gen.Groups)
		if isNoRows(err) {
			return ErrNoInventory
		}
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, "SELECT path, content FROM seedinit_inventory_file WHERE generation = $1", gen.Number)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p string
			var c []byte
			if err := rows.Scan(&p, &c); err != nil {
				return err
			}
			files[p] = c
		}
		return rows.Err()
	})
	if err != nil {
		return nil, gen, fmt.Errorf("read the inventory from %s: %w", db.where, err)
	}
	if d := files.Digest(); d != gen.Digest {
		return nil, gen, fmt.Errorf("read the inventory from %s: generation %d's files sum to %s, not the %s stored", db.where, gen.Number, d[:12], gen.Digest[:min(12, len(gen.Digest))])
	}
	inv, err := inventory.LoadFS(files.FS(), fmt.Sprintf("generation %d (%s)", gen.Number, gen.Source))
	if err != nil {
		return nil, gen, err
	}
	return inv, gen, nil
}

// latest is the latest generation's number, 0 when there is none.
func (db *DB) latest(ctx context.Context) (int64, error) {
	var n int64
	err := db.sql.QueryRowContext(ctx, "SELECT coalesce(max(generation), 0) FROM seedinit_inventory").Scan(&n)
	return n, err
}

// Watch calls use with each generation newer than have as it is stored,
// until ctx is done: told at once by a notification, and found by a poll
// every poll when a notification was lost (the listening connection
// broke, the database failed over). A generation this replica refuses is
// logged once and passed over; it keeps serving the one it has.
func (db *DB) Watch(ctx context.Context, poll time.Duration, have int64, use func(*inventory.Inventory, Generation)) {
	notified := db.wake
	go db.listen(ctx, poll, notified)
	t := time.NewTicker(poll)
	defer t.Stop()
	var refused int64
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-notified:
		}
		n, err := db.latest(ctx)
		if err == nil && (n <= have || n == refused) {
			lastErr = ""
			continue
		}
		var inv *inventory.Inventory
		var gen Generation
		if err == nil {
			inv, gen, err = db.Inventory(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var problems inventory.Problems
			if errors.As(err, &problems) {
				refused = gen.Number
				for _, p := range problems {
					db.log.Error("inventory problem", "generation", gen.Number, "problem", p.String())
				}
				db.log.Error("stored inventory refused, still serving the previous one", "generation", gen.Number, "serving", have)
				continue
			}
			// A database that is away says so once, not every poll.
			if err.Error() != lastErr {
				db.log.Warn("inventory not reread", "database", db.where, "error", err.Error())
				lastErr = err.Error()
			}
			continue
		}
		lastErr = ""
		have = gen.Number
		use(inv, gen)
	}
}

// listen keeps a connection that LISTENs for stored generations and
// pokes notified for each, and when it is back after a loss (pq.Listener
// reconnects by itself, every retry at most): what was stored meanwhile
// is read then.
func (db *DB) listen(ctx context.Context, retry time.Duration, notified chan<- struct{}) {
	defer func() {
		if p := recover(); p != nil {
			// The poll goes on without it.
			db.log.Error("inventory notifications stopped", "panic", fmt.Sprint(p))
		}
	}()
	// down says the loss was logged: once an outage, not every attempt.
	var down atomic.Bool
	l := pq.NewListener(db.dsn, min(retry, time.Second), retry, func(ev pq.ListenerEventType, err error) {
		switch ev {
		case pq.ListenerEventDisconnected, pq.ListenerEventConnectionAttemptFailed:
			if err != nil && ctx.Err() == nil && !down.Swap(true) {
				db.log.Warn("inventory notifications lost, polling until they are back", "database", db.where, "error", err.Error())
			}
		case pq.ListenerEventReconnected:
			if down.Swap(false) {
				db.log.Info("inventory notifications back", "database", db.where)
			}
		}
	})
	// Listen waits for the first connection; Close ends the wait.
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	defer l.Close()
	if err := l.Listen(notifyChannel); err != nil {
		if ctx.Err() == nil {
			db.log.Warn("inventory notifications off, polling", "database", db.where, "error", err.Error())
		}
		return
	}
	// What was stored before the LISTEN is read now.
	poke(notified)
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-l.Notify:
			if !ok {
				return
			}
			// A notification, or nil after a reconnection: read the
			// latest either way.
			poke(notified)
		}
	}
}

// FollowDir loads the inventory in dir into the database whenever its
// files change (read every poll; a load is made only when their digest
// changes) until ctx is done: `seedinit serve --db DSN DIR`, the replica
// that is the inventory's loader. from is the digest of the files loaded
// already. A refused edit is logged once, and the database keeps the
// last good inventory.
func (db *DB) FollowDir(ctx context.Context, dir string, poll time.Duration, from string) {
	t := time.NewTicker(poll)
	defer t.Stop()
	seen := from
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		files, err := ReadDir(dir)
		if err != nil {
			db.log.Warn("inventory not reread", "dir", dir, "error", err.Error())
			continue
		}
		d := files.Digest()
		if d == seen {
			continue
		}
		gen, _, changed, err := db.Load(ctx, files, dir)
		if err != nil {
			var problems inventory.Problems
			if errors.As(err, &problems) {
				seen = d // refused once; the next edit is read again
				for _, p := range problems {
					db.log.Error("inventory problem", "problem", p.String())
				}
				db.log.Error("inventory refused, the database keeps the previous one", "dir", dir, "problems", len(problems))
				continue
			}
			db.log.Error("inventory not stored", "dir", dir, "error", err.Error())
			continue
		}
		seen = d
		if changed {
			db.log.Info("inventory stored", "dir", dir, "generation", gen.Number, "instances", gen.Instances, "groups", gen.Groups)
		}
	}
}

// Reread has Watch read the latest generation now, not at its next poll
// (SIGHUP).
func (db *DB) Reread() { poke(db.wake) }

func poke(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
