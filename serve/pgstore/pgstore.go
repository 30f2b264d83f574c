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
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is one replica's handle on the shared database.
type DB struct {
	pool  *pgxpool.Pool
	where string
	log   *slog.Logger
}

// Open connects to the database dsn names (a libpq connection string or
// URL: several hosts and target_session_attrs=read-write follow a
// failover), and creates or migrates its tables. Errors and logs name the
// database by Where, never with its password.
func Open(ctx context.Context, dsn string, log *slog.Logger) (*DB, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgconn's parse error quotes the DSN with its password
		// redacted.
		return nil, fmt.Errorf("open the database: %w", err)
	}
	db := &DB{where: where(cfg.ConnConfig.Config), log: log}
	if db.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("open the database %s: %w", db.where, err)
	}
	if err := db.migrate(ctx); err != nil {
		db.pool.Close()
		return nil, err
	}
	return db, nil
}

// where names the database without its password: user@host:port/db, and
// how many more hosts the DSN lists.
func where(c pgconn.Config) string {
	s := fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
	if n := len(c.Fallbacks); n > 0 {
		s += fmt.Sprintf(" (and %d more hosts)", n)
	}
	return s
}

// Where names the database for logs and errors, without its password.
func (db *DB) Where() string { return db.where }

// Close implements state.Store: it closes the connections.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}

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
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockMigrate)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS seedinit_schema (
	version integer PRIMARY KEY,
	applied timestamptz NOT NULL DEFAULT now()
)`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM seedinit_schema").Scan(&have); err != nil {
			return err
		}
		want := len(migrations) - 1
		if have > want {
			return fmt.Errorf("the schema is version %d, newer than this seedinit's %d: upgrade seedinit", have, want)
		}
		for v := have + 1; v <= want; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO seedinit_schema (version) VALUES ($1)", v); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			db.log.Info("database schema migrated", "database", db.where, "version", v)
		}
		return nil
	})
	if err != nil {
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
	if _, err := db.pool.Exec(ctx, "INSERT INTO seedinit_secret (name, value) VALUES ('imdsv2-token', $1) ON CONFLICT (name) DO NOTHING", fresh); err != nil {
		return nil, fmt.Errorf("make the token secret in %s: %w", db.where, err)
	}
	var secret []byte
	if err := db.pool.QueryRow(ctx, "SELECT value FROM seedinit_secret WHERE name = 'imdsv2-token'").Scan(&secret); err != nil {
		return nil, fmt.Errorf("read the token secret from %s: %w", db.where, err)
	}
	if len(secret) < tokenSecretLen {
		return nil, fmt.Errorf("read the token secret from %s: %d bytes, want %d", db.where, len(secret), tokenSecretLen)
	}
	return secret, nil
}

// isNoRows says err is a query's "no row".
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// quoteSource keeps what a generation says of its source short.
func quoteSource(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > 500 {
		s = s[:500]
	}
	return s
}
