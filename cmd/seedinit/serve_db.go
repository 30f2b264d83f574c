package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/seedinit/seedinit/serve/inventory"
	"github.com/seedinit/seedinit/serve/pgstore"
	"github.com/seedinit/seedinit/serve/server"
)

// dbTimeout bounds what a command asks of the database before it serves:
// a database that does not answer is said to be away, not waited for.
const dbTimeout = 30 * time.Second

// replica is a server over the database, and what SIGHUP does.
type replica struct {
	db     *pgstore.DB
	srv    *server.Server
	reread func()
}

// serveReplica is `seedinit serve --db DSN [DIR]`: DIR, when given, is
// loaded into the database now (refused with its problems, as a folder
// is) and again whenever it changes, for every replica; the server
// serves the database's inventory, whoever loaded it.
func serveReplica(ctx context.Context, dsn, dir string, reload time.Duration, cfg server.Config, log *slog.Logger, stderr io.Writer) (*replica, int, bool) {
	octx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	db, err := pgstore.Open(octx, dsn, log)
	if err != nil {
		return nil, fail(stderr, "serve: --db: %v", err), false
	}
	// SIGHUP: the database's latest generation, at once.
	r := &replica{db: db, reread: db.Reread}
	if dir != "" {
		gen, code, ok := loadDir(octx, db, dir, stderr)
		if !ok {
			db.Close()
			return nil, code, false
		}
		log.Info("inventory stored", "dir", dir, "generation", gen.Number, "database", db.Where())
		if reload > 0 {
			go func() {
				defer recoverLog(log, "inventory follow")
				db.FollowDir(ctx, dir, reload, gen.Digest)
			}()
		}
		r.reread = func() {
			files, err := pgstore.ReadDir(dir)
			if err == nil {
				_, _, _, err = db.Load(ctx, files, dir)
			}
			if err != nil {
				log.Error("inventory not stored, the database keeps the previous one", "dir", dir, "error", err.Error())
			}
			db.Reread()
		}
	}
	// The poll behind the notifications: every --reload, and never
	// less often than a minute, whatever --reload says.
	poll := reload
	if poll <= 0 || poll > time.Minute {
		poll = time.Minute
	}
	if r.srv, _, err = db.NewServer(ctx, cfg, poll); err != nil {
		db.Close()
		if errors.Is(err, pgstore.ErrNoInventory) {
			return nil, fail(stderr, "serve: %s: %v", db.Where(), err), false
		}
		return nil, fail(stderr, "serve: %v", err), false
	}
	return r, exitOK, true
}

func recoverLog(log *slog.Logger, what string) {
	if p := recover(); p != nil {
		log.Error(what+" stopped", "panic", fmt.Sprint(p))
	}
}

// loadDir stores the inventory in dir in db, printing its problems when
// it is refused.
func loadDir(ctx context.Context, db *pgstore.DB, dir string, stderr io.Writer) (pgstore.Generation, int, bool) {
	files, err := pgstore.ReadDir(dir)
	if err != nil {
		return pgstore.Generation{}, fail(stderr, "serve: %v", err), false
	}
	gen, _, _, err := db.Load(ctx, files, dir)
	var problems inventory.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		return gen, fail(stderr, "serve: %s: %d problems (seedinit serve check %s); the database keeps the inventory it had", dir, len(problems), dir), false
	}
	if err != nil {
		return gen, fail(stderr, "serve: %v", err), false
	}
	return gen, exitOK, true
}

// runServeLoad is `seedinit serve load --db DSN DIR`: check the
// inventory in DIR and store it for every replica (from git's hook or a
// CI job), or say why not.
func runServeLoad(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit serve load", flag.ContinueOnError)
	dsn := fs.String("db", "", "PostgreSQL connection string")
	rest, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(rest) != 1 || *dsn == "" {
		return fail(stderr, "serve load: usage: seedinit serve load --db DSN DIR")
	}
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	db, err := pgstore.Open(ctx, *dsn, nil)
	if err != nil {
		return fail(stderr, "serve load: %v", err)
	}
	defer db.Close()
	files, err := pgstore.ReadDir(rest[0])
	if err != nil {
		return fail(stderr, "serve load: %v", err)
	}
	gen, inv, changed, err := db.Load(ctx, files, rest[0])
	var problems inventory.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Fprintln(stdout, p)
		}
		fmt.Fprintf(stdout, "%s: %d problems: not stored; the replicas keep serving the inventory they have\n", rest[0], len(problems))
		return exitError
	}
	if err != nil {
		return fail(stderr, "serve load: %v", err)
	}
	for _, w := range inv.Warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	verb := "stored"
	if !changed {
		verb = "unchanged"
	}
	fmt.Fprintf(stdout, "%s: %d instances, %d groups: %s as generation %d in %s\n", rest[0], gen.Instances, gen.Groups, verb, gen.Number, db.Where())
	return exitOK
}

// flagSet says whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}
