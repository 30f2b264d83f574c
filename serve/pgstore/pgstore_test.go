package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/serve/inventory"
	"github.com/seedinit/seedinit/serve/pgstore/pgtest"
	"github.com/seedinit/seedinit/serve/state"
)

func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func open(t testing.TB, dsn string) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := Open(ctx, dsn, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The database store follows the FileStore's rules: the same fetches and
// reports give the same records, and the same listing.
func TestStoreLikeFileStore(t *testing.T) {
	db := open(t, pgtest.Start(t))
	fsStore, err := state.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fsStore.Close()
	ctx := context.Background()
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	steps := []func(state.Store) error{
		func(s state.Store) error {
			return s.Fetched(ctx, "waf-002", state.Fetch{Layout: "nocloud", Part: "meta-data", Source: "10.0.0.2", At: at})
		},
		func(s state.Store) error {
			return s.Fetched(ctx, "waf-001", state.Fetch{Layout: "ec2", Part: "user-data", Source: "10.0.0.1", At: at.Add(time.Second)})
		},
		func(s state.Store) error {
			return s.Reported(ctx, "waf-001", state.Report{Via: "phone-home", Source: "10.0.0.1", At: at.Add(time.Minute), Final: true,
				Hostname: "waf-001.lab", HostKeys: map[string]string{"pub_key_ed25519": "ssh-ed25519 AAAA"}})
		},
		func(s state.Store) error {
			return s.Reported(ctx, "waf-002", state.Report{Via: "report", Source: "10.0.0.2", At: at.Add(2 * time.Minute), Final: true, Errors: []string{"config: runcmd failed"}})
		},
		func(s state.Store) error {
			return s.Fetched(ctx, "waf-002", state.Fetch{Layout: "nocloud", Part: "user-data", Source: "10.0.0.2", At: at.Add(3 * time.Minute)})
		},
		func(s state.Store) error {
			return s.Reported(ctx, "waf-003", state.Report{Via: "report", Source: "10.0.0.3", At: at.Add(4 * time.Minute), Final: false, Errors: []string{"still going"}})
		},
	}
	for i, step := range steps {
		if err := step(fsStore); err != nil {
			t.Fatalf("step %d on the FileStore: %v", i, err)
		}
		if err := step(db); err != nil {
			t.Fatalf("step %d on the database: %v", i, err)
		}
	}
	want, _ := fsStore.List(ctx)
	got, err := db.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the database's records differ from the FileStore's (-file +db):\n%s", diff)
	}
	if r, ok, err := db.Get(ctx, "waf-002"); err != nil || !ok || r.State != state.Failed || r.Fetches != 2 {
		t.Errorf("Get waf-002: %+v %v %v", r, ok, err)
	}
	if _, ok, err := db.Get(ctx, "waf-009"); ok || err != nil {
		t.Errorf("Get of an instance never seen: %v %v, want none", ok, err)
	}
	if err := db.Fetched(ctx, "../etc", state.Fetch{At: at}); !errors.Is(err, state.ErrBadInstance) {
		t.Errorf("a bad name: %v, want ErrBadInstance", err)
	}
}

// Two replicas (two handles, two pools) updating the same instances at
// once lose nothing: every fetch is counted, and the reports' state is
// the last one's.
func TestConcurrentReplicasLoseNothing(t *testing.T) {
	dsn := pgtest.Start(t)
	a, b := open(t, dsn), open(t, dsn)
	ctx := context.Background()
	const workers, each = 8, 25
	instances := []string{"waf-001", "waf-002", "waf-003"}
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*2)
	for w := range workers {
		db := a
		if w%2 == 1 {
			db = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				inst := instances[(w+i)%len(instances)]
				if err := db.Fetched(ctx, inst, state.Fetch{Layout: "ec2", Part: "user-data", At: time.Now()}); err != nil {
					errs <- err
				}
				if err := db.Reported(ctx, inst, state.Report{Via: "report", At: time.Now(), Final: false, Errors: []string{fmt.Sprint(w, i)}}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	recs, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range recs {
		total += r.Fetches
		if r.State != state.Fetched {
			t.Errorf("%s: %s, want fetched", r.Instance, r.State)
		}
	}
	if total != workers*each {
		t.Errorf("%d fetches recorded over %d records, want %d", total, len(recs), workers*each)
	}
}

// The schema is made once and Open again changes nothing; a schema newer
// than this binary's is refused, not written over.
func TestMigrate(t *testing.T) {
	dsn := pgtest.Start(t)
	db := open(t, dsn)
	open(t, dsn)
	ctx := context.Background()
	var n int
	if err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM seedinit_schema").Scan(&n); err != nil || n != len(migrations)-1 {
		t.Fatalf("schema versions: %d %v, want %d", n, err, len(migrations)-1)
	}
	if _, err := db.sql.ExecContext(ctx, "INSERT INTO seedinit_schema (version) VALUES (99)"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dsn, testLog(t)); err == nil || !strings.Contains(err.Error(), "version 99, newer than this seedinit's") {
		t.Errorf("Open over a newer schema: %v", err)
	}
	if _, err := Open(ctx, "host=/nonexistent user=u password=hunter2 dbname=d connect_timeout=1", testLog(t)); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open of a database that is not there: %v (and never the password)", err)
	}
}

// One secret for all replicas, made by the first.
func TestTokenSecretShared(t *testing.T) {
	dsn := pgtest.Start(t)
	a, b := open(t, dsn), open(t, dsn)
	ctx := context.Background()
	n := byte(0)
	random := func(p []byte) {
		n++
		for i := range p {
			p[i] = n
		}
	}
	sa, err := a.TokenSecret(ctx, random)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.TokenSecret(ctx, random)
	if err != nil || string(sa) != string(sb) || len(sa) != tokenSecretLen {
		t.Errorf("the replicas' secrets differ: %x %x %v", sa, sb, err)
	}
}

var inv1 = Files{
	"groups/waf.yaml":        []byte("group: waf\nhostname: waf-{{ index | pad 3 }}\n"),
	"instances/waf-001.yaml": []byte("instance: waf-001\ngroups: [waf]\nselectors: {mac: 52:54:00:00:00:01}\n"),
}

// A load is a generation, the same files again none; a refused inventory
// is not stored; Watch hands each new generation to a replica as it is
// stored.
func TestInventoryGenerations(t *testing.T) {
	dsn := pgtest.Start(t)
	loader, replica := open(t, dsn), open(t, dsn)
	ctx := context.Background()
	if _, _, err := replica.Inventory(ctx); !errors.Is(err, ErrNoInventory) {
		t.Fatalf("an empty database: %v, want ErrNoInventory", err)
	}
	g1, _, changed, err := loader.Load(ctx, inv1, "lab")
	if err != nil || !changed || g1.Number != 1 || g1.Instances != 1 {
		t.Fatalf("first load: %+v %v %v", g1, changed, err)
	}
	if g, _, changed, err := loader.Load(ctx, inv1, "lab"); err != nil || changed || g.Number != 1 || !g.Made.Equal(g1.Made) {
		t.Errorf("the same files again: %+v %v %v, want generation 1 unchanged", g, changed, err)
	}
	inv, gen, err := replica.Inventory(ctx)
	if err != nil || gen.Number != 1 || len(inv.Instances) != 1 || !gen.Made.Equal(g1.Made) {
		t.Fatalf("the replica reads: %+v %v", gen, err)
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan Generation, 4)
	// A poll of a minute: what arrives sooner came by notification.
	go replica.Watch(wctx, time.Minute, gen.Number, func(inv *inventory.Inventory, g Generation) { got <- g })

	bad := Files{"instances/waf-002.yaml": []byte("instance: waf-002\ngroups: [nope]\n")}
	for k, v := range inv1 {
		bad[k] = v
	}
	_, _, _, err = loader.Load(ctx, bad, "lab")
	var problems inventory.Problems
	if !errors.As(err, &problems) || !strings.Contains(err.Error(), "instances/waf-002.yaml") {
		t.Errorf("a broken inventory: %v, want its problems", err)
	}
	good := Files{"instances/waf-002.yaml": []byte("instance: waf-002\ngroups: [waf]\n")}
	for k, v := range inv1 {
		good[k] = v
	}
	g2, _, changed, err := loader.Load(ctx, good, "lab")
	if err != nil || !changed || g2.Number != 2 {
		t.Fatalf("second load: %+v %v %v", g2, changed, err)
	}
	select {
	case g := <-got:
		if g.Number != 2 || g.Instances != 2 {
			t.Errorf("watched: %+v, want generation 2 of 2 instances", g)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the replica was not told of generation 2")
	}

	// The listening connection is cut (a failover, a restart): what is
	// stored meanwhile is read when it is back.
	if _, err := loader.sql.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'"); err != nil {
		t.Fatal(err)
	}
	good["instances/waf-003.yaml"] = []byte("instance: waf-003\n")
	if _, _, _, err := loader.Load(ctx, good, "lab"); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		if g.Number != 3 {
			t.Errorf("watched after the cut: %+v, want generation 3", g)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the replica was not told of generation 3 after its notifications were cut")
	}
}

// A generation a replica cannot load (stored by a seedinit of another
// version, or by hand) is passed over, and the replica keeps what it
// serves until a good one comes.
func TestWatchPassesOverABadGeneration(t *testing.T) {
	dsn := pgtest.Start(t)
	loader, replica := open(t, dsn), open(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g1, _, _, err := loader.Load(ctx, inv1, "lab")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Generation, 4)
	go replica.Watch(ctx, 100*time.Millisecond, g1.Number, func(_ *inventory.Inventory, g Generation) { got <- g })
	bad := Files{"instances/waf-001.yaml": []byte("instance: waf-001\ngroups: [gone]\n")}
	if _, err := loader.sql.ExecContext(ctx, "INSERT INTO seedinit_inventory (generation, digest, source, instances, groups) VALUES (2, $1, 'by hand', 1, 0)", bad.Digest()); err != nil {
		t.Fatal(err)
	}
	if _, err := loader.sql.ExecContext(ctx, "INSERT INTO seedinit_inventory_file (generation, path, content) VALUES (2, 'instances/waf-001.yaml', $1)", bad["instances/waf-001.yaml"]); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		t.Fatalf("the replica took generation %d, which has problems", g.Number)
	case <-time.After(time.Second):
	}
	g3, _, _, err := loader.Load(ctx, inv1, "lab")
	if err != nil || g3.Number != 3 {
		t.Fatalf("a good load after the bad generation: %+v %v", g3, err)
	}
	select {
	case g := <-got:
		if g.Number != 3 {
			t.Errorf("watched %d, want 3", g.Number)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the replica did not take generation 3")
	}
}

// Reread (SIGHUP) reads a generation no notification announced at once,
// not at the next poll.
func TestReread(t *testing.T) {
	dsn := pgtest.Start(t)
	loader, replica := open(t, dsn), open(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g1, _, _, err := loader.Load(ctx, inv1, "lab")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Generation, 4)
	go replica.Watch(ctx, time.Hour, g1.Number, func(_ *inventory.Inventory, g Generation) { got <- g })
	time.Sleep(500 * time.Millisecond) // its first look, after the LISTEN
	quiet := Files{"instances/waf-009.yaml": []byte("instance: waf-009\n")}
	if _, err := loader.sql.ExecContext(ctx, "INSERT INTO seedinit_inventory (generation, digest, source, instances, groups) VALUES (2, $1, 'by hand', 1, 0)", quiet.Digest()); err != nil {
		t.Fatal(err)
	}
	if _, err := loader.sql.ExecContext(ctx, "INSERT INTO seedinit_inventory_file (generation, path, content) VALUES (2, 'instances/waf-009.yaml', $1)", quiet["instances/waf-009.yaml"]); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		t.Fatalf("generation %d seen before Reread", g.Number)
	case <-time.After(300 * time.Millisecond):
	}
	replica.Reread()
	select {
	case g := <-got:
		if g.Number != 2 {
			t.Errorf("after Reread: generation %d, want 2", g.Number)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Reread did not read generation 2")
	}
}
