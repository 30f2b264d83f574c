// Package pgstore is `seedinit serve` for more than one machine: the
// replicas keep nothing of their own, everything they share is in one
// PostgreSQL database —
//
//	seedinit_state            each instance's state.Record (the state.Store)
//	seedinit_inventory        the inventory's generations: number, when, digest
//	seedinit_inventory_file   each generation's files, as the operator wrote them
//	seedinit_secret           the IMDSv2 token secret every replica signs with
//	seedinit_schema           the schema's version, for the migrations
//
// so that any replica answers any request of any instance: a fetch on one
// and a report on another update one record, under a row lock; an
// inventory loaded through one is seen by all (LISTEN/NOTIFY, and a poll
// when the notification is lost); a token issued by one is good on all.
// What stays per process: the Prometheus counters of requests and
// refusals (a scrape of each replica, summed by Prometheus, is the
// fleet's; the instances-by-state gauge is read from here and is the same
// on every replica), and the leases of --dhcp (one DHCP server per
// broadcast domain; the lease files and the DHCP server's memory are that
// machine's).
package pgstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/lib/pq"
)

// DB is one replica's handle on the shared database.
type DB struct {
	sql   *sql.DB
	where string
	// dsn is for the notifications' own connection (pq.Listener takes
	// a DSN); it holds the password and is never printed.
	dsn string
	log *slog.Logger
	// wake has Watch read the latest generation: a notification, or
	// Reread.
	wake chan struct{}
}

// maxConns bounds a replica's connections: each request holds one for
// a transaction of a few milliseconds; a database's max_connections (100
// by default) is shared by every replica.
const maxConns = 16

// Open connects to the database dsn names (a libpq connection string or
// URL: several hosts and target_session_attrs=read-write follow a
// failover; lib/pq's sslmode is require unless the DSN says otherwise), and creates or migrates its tables. Errors and logs name the
// database by Where, never with its password.
func Open(ctx context.Context, dsn string, log *slog.Logger) (*DB, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open the database: the connection string does not parse: %s", unquote(err.Error()))
	}
	conn, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("open the database: %s", unquote(err.Error()))
	}
	db := &DB{sql: sql.OpenDB(conn), where: where(cfg), dsn: dsn, log: log, wake: make(chan struct{}, 1)}
	db.sql.SetMaxOpenConns(maxConns)
	db.sql.SetMaxIdleConns(maxConns)
	db.sql.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.migrate(ctx); err != nil {
		db.sql.Close()
		return nil, err
	}
	return db, nil
}

// quoted are what a parse error quotes of the connection string: it may
// be a password.
var quoted = regexp.MustCompile(`"[^"]*"|'[^']*'`)

func unquote(s string) string { return quoted.ReplaceAllString(s, "…") }

// where names the database without its password: user@host:port/db, and
// how many more hosts the DSN lists.
func where(c pq.Config) string {
	s := fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
	if n := len(c.Multi); n > 0 {
		s += fmt.Sprintf(" (and %d more hosts)", n)
	}
	return s
}

// Where names the database for logs and errors, without its password.
func (db *DB) Where() string { return db.where }

// Close implements state.Store: it closes the connections.
func (db *DB) Close() error { return db.sql.Close() }

// migrations are the schema's versions, each applied once, in order, in
// the transaction that records it. A version once released is never
// edited: a change is a new version.
var migrations = []string{
	1: `
CREATE TABLE seedinit_state (
	instance text PRIMARY KEY,
	-- state.Record as JSON, the FileStore's; 'null' only inside the
	-- transaction that creates the row.
	record   jsonb NOT NULL,
	updated  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE seedinit_inventory (
	generation bigint PRIMARY KEY,
	made       timestamptz NOT NULL DEFAULT now(),
	-- digest is the files' SHA-256 (inventoryDigest): a load of the
	-- same files makes no generation.
	digest     text NOT NULL,
	source     text NOT NULL,
	instances  integer NOT NULL,
	groups     integer NOT NULL
);
CREATE TABLE seedinit_inventory_file (
	generation bigint NOT NULL REFERENCES seedinit_inventory ON DELETE CASCADE,
	path       text NOT NULL,
	content    bytea NOT NULL,
	PRIMARY KEY (generation, path)
);
CREATE TABLE seedinit_secret (
	name  text PRIMARY KEY,
	value bytea NOT NULL
);`,
}

// Advisory lock keys: the migration, and the numbering of inventory
// generations, each one at a time across replicas.
const (
	lockMigrate   = 0x5eed1_001
	lockInventory = 0x5eed1_002
)

// migrate brings the schema to the last version, under a lock so that
// replicas starting together migrate once. A schema newer than this
// binary's is refused: an older replica would write what a newer one
// does not expect.
func (db *DB) migrate(ctx context.Context) error {
	err := db.inTx(ctx, nil, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockMigrate)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS seedinit_schema (
	version integer PRIMARY KEY,
	applied timestamptz NOT NULL DEFAULT now()
)`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM seedinit_schema").Scan(&have); err != nil {
			return err
		}
		want := len(migrations) - 1
		if have > want {
			return fmt.Errorf("the schema is version %d, newer than this seedinit's %d: upgrade seedinit", have, want)
		}
		for v := have + 1; v <= want; v++ {
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO seedinit_schema (version) VALUES ($1)", v); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			db.log.Info("database schema migrated", "database", db.where, "version", v)
		}
		return nil
	})
	if err != nil {
		if strings.Contains(err.Error(), "SSL is not enabled on the server") {
			return fmt.Errorf("migrate the schema of %s: %w (lib/pq's sslmode is require unless the DSN says sslmode=disable)", db.where, err)
		}
		return fmt.Errorf("migrate the schema of %s: %w", db.where, err)
	}
	return nil
}

// tokenSecretLen is the IMDSv2 token secret's size: HMAC-SHA256's key.
const tokenSecretLen = 32

// TokenSecret is the IMDSv2 token secret all replicas share, made by the
// first that asks (server.Config.TokenSecret).
func (db *DB) TokenSecret(ctx context.Context, random func([]byte)) ([]byte, error) {
	fresh := make([]byte, tokenSecretLen)
	random(fresh)
	if _, err := db.sql.ExecContext(ctx, "INSERT INTO seedinit_secret (name, value) VALUES ('imdsv2-token', $1) ON CONFLICT (name) DO NOTHING", fresh); err != nil {
		return nil, fmt.Errorf("make the token secret in %s: %w", db.where, err)
	}
	var secret []byte
	if err := db.sql.QueryRowContext(ctx, "SELECT value FROM seedinit_secret WHERE name = 'imdsv2-token'").Scan(&secret); err != nil {
		return nil, fmt.Errorf("read the token secret from %s: %w", db.where, err)
	}
	if len(secret) < tokenSecretLen {
		return nil, fmt.Errorf("read the token secret from %s: %d bytes, want %d", db.where, len(secret), tokenSecretLen)
	}
	return secret, nil
}

// isNoRows says err is a query's "no row".
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// inTx runs fn in a transaction, committed when fn returns nil and rolled
// back otherwise.
func (db *DB) inTx(ctx context.Context, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	tx, err := db.sql.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// quoteSource keeps what a generation says of its source short.
func quoteSource(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > 500 {
		s = s[:500]
	}
	return s
}
