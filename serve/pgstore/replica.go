package pgstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/seedinit/seedinit/serve/inventory"
	"github.com/seedinit/seedinit/serve/server"
	"github.com/seedinit/seedinit/serve/state"
)

// NewServer makes one replica over the database: it serves the latest
// inventory stored (and each one stored after it, told within poll at
// the latest, until ctx is done), signs its manifests as of that
// inventory's Made (so that every replica's are the same bytes), takes
// the IMDSv2 tokens of every other replica, and records state and
// reports here, where every replica's /status and /metrics read them.
// cfg's Dir, Inventory, TokenSecret and Observer are set here; its Extra
// get the status handlers beside them.
func (db *DB) NewServer(ctx context.Context, cfg server.Config, poll time.Duration) (*server.Server, Generation, error) {
	inv, gen, err := db.Inventory(ctx)
	if err != nil {
		return nil, gen, err
	}
	secret, err := db.TokenSecret(ctx, func(b []byte) { rand.Read(b) })
	if err != nil {
		return nil, gen, err
	}
	var srv *server.Server
	tracker := state.NewTracker(state.Config{Store: db, Inventory: func() *inventory.Inventory { return srv.Inventory() }, Log: cfg.Log})
	extra := tracker.Handlers()
	for pattern := range cfg.Extra {
		if _, taken := extra[pattern]; taken {
			return nil, gen, fmt.Errorf("mount %q: taken by the status handlers", pattern)
		}
	}
	maps.Copy(extra, cfg.Extra)
	cfg.Dir, cfg.Inventory, cfg.InventoryAt, cfg.TokenSecret = "", inv, gen.Made, secret
	cfg.Observer, cfg.Extra = tracker, map[string]http.Handler(extra)
	if srv, err = server.New(cfg); err != nil {
		return nil, gen, err
	}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				db.log.Error("inventory watch stopped", "panic", fmt.Sprint(p))
			}
		}()
		db.Watch(ctx, poll, gen.Number, func(inv *inventory.Inventory, g Generation) { srv.Use(inv, g.Made) })
	}()
	return srv, gen, nil
}
