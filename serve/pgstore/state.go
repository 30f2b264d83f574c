package pgstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/seedinit/seedinit/serve/state"
)

// update is the read-modify-write of one instance's record, in one
// transaction under the row's lock (SELECT ... FOR UPDATE), changed by the
// same rules as the FileStore's, and written: a replica holding the lock
// makes the other wait, never lose its update. An instance's first record
// is made as a placeholder row first (INSERT ... ON CONFLICT DO NOTHING),
// so that two replicas recording its first fetch together wait on one row
// instead of racing two inserts; the later updates, most of them, go
// straight to the lock.
func (db *DB) update(ctx context.Context, instance string, fn func(*state.Record)) error {
	if err := state.CheckName(instance); err != nil {
		return fmt.Errorf("update state of %w", err)
	}
	err := db.inTx(ctx, nil, func(tx *sql.Tx) error {
		var raw []byte
		lock := func() error {
			return tx.QueryRowContext(ctx, "SELECT record FROM seedinit_state WHERE instance = $1 FOR UPDATE", instance).Scan(&raw)
		}
		err := lock()
		if isNoRows(err) {
			if _, err := tx.ExecContext(ctx, "INSERT INTO seedinit_state (instance, record) VALUES ($1, 'null') ON CONFLICT (instance) DO NOTHING", instance); err != nil {
				return err
			}
			err = lock()
		}
		if err != nil {
			return err
		}
		r := state.Record{Instance: instance, State: state.Waiting}
		if string(raw) != "null" {
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("read the stored record: %w", err)
			}
		}
		fn(&r)
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		// jsonb takes the JSON as text: lib/pq would send a []byte as
		// bytea.
		_, err = tx.ExecContext(ctx, "UPDATE seedinit_state SET record = $2, updated = now() WHERE instance = $1", instance, string(b))
		return err
	})
	if err != nil {
		return fmt.Errorf("update state of %s in %s: %w", instance, db.where, err)
	}
	return nil
}

// Fetched implements state.Store.
func (db *DB) Fetched(ctx context.Context, instance string, f state.Fetch) error {
	return db.update(ctx, instance, func(r *state.Record) { state.ApplyFetch(r, f) })
}

// Reported implements state.Store.
func (db *DB) Reported(ctx context.Context, instance string, rep state.Report) error {
	return db.update(ctx, instance, func(r *state.Record) { state.ApplyReport(r, rep) })
}

// Get implements state.Store.
func (db *DB) Get(ctx context.Context, instance string) (state.Record, bool, error) {
	var r state.Record
	var raw []byte
	err := db.sql.QueryRowContext(ctx, "SELECT record FROM seedinit_state WHERE instance = $1 AND record <> 'null'", instance).Scan(&raw)
	if isNoRows(err) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("read state of %s from %s: %w", instance, db.where, err)
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, false, fmt.Errorf("read state of %s from %s: %w", instance, db.where, err)
	}
	return r, true, nil
}

// List implements state.Store.
func (db *DB) List(ctx context.Context) ([]state.Record, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT instance, record FROM seedinit_state WHERE record <> 'null' ORDER BY instance COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("list the state in %s: %w", db.where, err)
	}
	defer rows.Close()
	var out []state.Record
	for rows.Next() {
		var name string
		var raw []byte
		if err := rows.Scan(&name, &raw); err != nil {
			return nil, fmt.Errorf("list the state in %s: %w", db.where, err)
		}
		var r state.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("list the state in %s: record of %s: %w", db.where, name, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list the state in %s: %w", db.where, err)
	}
	return out, nil
}

var _ state.Store = (*DB)(nil)
