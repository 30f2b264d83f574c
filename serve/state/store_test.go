package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

// An instance goes waiting → fetched → provisioned or failed; a fetch
// after a report (the next boot) keeps the report's state; everything
// survives a restart, read back from the folder.
func TestFileStoreStates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get(ctx, "waf-007"); ok {
		t.Fatal("a record before anything happened")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Fetched(ctx, "waf-007", Fetch{Layout: "nocloud", Part: "meta-data", Source: "10.0.0.7", At: t0}))
	must(s.Fetched(ctx, "waf-007", Fetch{Layout: "nocloud", Part: "user-data", Source: "10.0.0.7", At: t0.Add(time.Second)}))
	must(s.Reported(ctx, "waf-008", Report{Via: "report", Source: "10.0.0.8", At: t0, Final: true, Errors: []string{"runcmd: exit status 2"}}))
	must(s.Fetched(ctx, "waf-009", Fetch{Layout: "ec2", Part: "user-data", Source: "10.0.0.9", At: t0}))
	must(s.Reported(ctx, "waf-009", Report{Via: "phone-home", Source: "10.0.0.9", At: t0.Add(time.Minute), Final: true, Hostname: "waf-009.lab"}))
	must(s.Fetched(ctx, "waf-009", Fetch{Layout: "ec2", Part: "user-data", Source: "10.0.0.9", At: t0.Add(time.Hour)}))
	must(s.Close())

	s2, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, _ := s2.List(ctx)
	want := []Record{
		{Instance: "waf-007", State: Fetched, Since: t0, FirstFetched: t0, LastFetched: t0.Add(time.Second), Fetches: 2, LastPart: "nocloud user-data", LastSource: "10.0.0.7"},
		{Instance: "waf-008", State: Failed, Since: t0, Reported: t0, Via: "report", LastSource: "10.0.0.8", Errors: []string{"runcmd: exit status 2"}},
		{Instance: "waf-009", State: Provisioned, Since: t0.Add(time.Minute), FirstFetched: t0, LastFetched: t0.Add(time.Hour), Fetches: 2, LastPart: "ec2 user-data", LastSource: "10.0.0.9", Reported: t0.Add(time.Minute), Via: "phone-home", Hostname: "waf-009.lab"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records after a restart (-want +got):\n%s", diff)
	}
	// A success after a failure clears the errors.
	must(s2.Reported(ctx, "waf-008", Report{Via: "report", At: t0.Add(time.Hour), Final: true}))
	if r, _, _ := s2.Get(ctx, "waf-008"); r.State != Provisioned || len(r.Errors) != 0 || !r.Since.Equal(t0.Add(time.Hour)) {
		t.Errorf("after a success: %+v", r)
	}
	// A report while stages still run keeps the state.
	must(s2.Reported(ctx, "waf-007", Report{Via: "report", At: t0.Add(time.Hour), Errors: []string{"bootcmd: x"}}))
	if r, _, _ := s2.Get(ctx, "waf-007"); r.State != Fetched || len(r.Errors) != 1 {
		t.Errorf("after a report that is not final: %+v", r)
	}
}

// Concurrent updates of the same and of different instances lose none.
func TestFileStoreConcurrent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	const instances, each = 8, 25
	var wg sync.WaitGroup
	for i := range instances {
		for range each {
			wg.Go(func() {
				if err := s.Fetched(ctx, fmt.Sprintf("i-%d", i), Fetch{Part: "user-data", At: t0}); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, _ := ReadFileStore(dir)
	got, _ := s2.List(ctx)
	if len(got) != instances {
		t.Fatalf("%d records, want %d", len(got), instances)
	}
	for _, r := range got {
		if r.Fetches != each {
			t.Errorf("%s: %d fetches on disk, want %d", r.Instance, r.Fetches, each)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != instances {
		t.Errorf("%d files in the state folder, want %d (a temporary file left?)", len(entries), instances)
	}
}

// A name that would leave the folder is refused; a torn temporary file
// of a crash is cleared; a record that does not read is a problem, not
// a store that does not open.
func TestFileStoreHostile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".waf-001.json.123.tmp"), []byte(`{"inst`), 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, ".waf-001.json.123.tmp"), old, old)
	// A write under way in another process (the server, while status
	// reads): left alone.
	os.WriteFile(filepath.Join(dir, ".waf-005.json.456.tmp"), []byte(`{"inst`), 0o600)
	os.WriteFile(filepath.Join(dir, "waf-002.json"), []byte(`{"instance": "waf-0`), 0o600)
	os.WriteFile(filepath.Join(dir, "waf-003.json"), []byte(`{"instance": "waf-004", "state": "provisioned"}`), 0o600)
	s, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems) != 2 || !strings.Contains(s.Problems[0], "waf-002.json") || !strings.Contains(s.Problems[1], "waf-004") {
		t.Errorf("problems: %q", s.Problems)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, ".waf-001.json.123.tmp")); err == nil {
		t.Error("a crash's temporary file left")
	}
	if _, err := os.Stat(filepath.Join(dir, ".waf-005.json.456.tmp")); err != nil {
		t.Errorf("a fresh temporary file cleared: %v", err)
	}
	for _, name := range []string{"../escape", "a/b", ".hidden", ""} {
		if err := s.Fetched(ctx, name, Fetch{At: t0}); !errors.Is(err, ErrBadInstance) {
			t.Errorf("Fetched(%q): %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.json")); err == nil {
		t.Error("a record written outside the folder")
	}
}

// A change of state is on disk when the update returns; the further
// fetches of a boot wait in memory at most a second, and Close writes
// them. A store opened to read writes nothing.
func TestFileStoreDurability(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	onDisk := func() Record {
		t.Helper()
		r, err := readRecord(filepath.Join(dir, "waf-007.json"))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	s.Fetched(ctx, "waf-007", Fetch{Part: "meta-data", At: t0})
	if r := onDisk(); r.State != Fetched || r.Fetches != 1 {
		t.Errorf("after the first fetch, on disk: %+v", r)
	}
	s.Fetched(ctx, "waf-007", Fetch{Part: "user-data", At: t0})
	s.Reported(ctx, "waf-007", Report{Via: "report", At: t0, Final: true})
	if r := onDisk(); r.State != Provisioned || r.Fetches != 2 {
		t.Errorf("after the report, on disk: %+v", r)
	}
	s.Fetched(ctx, "waf-007", Fetch{Part: "vendor-data", At: t0})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if r := onDisk(); r.Fetches != 3 || r.LastPart != "vendor-data" {
		t.Errorf("after Close, on disk: %+v", r)
	}

	ro, err := ReadFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Fetched(ctx, "waf-007", Fetch{At: t0}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("an update of a read-only store: %v", err)
	}
	if r, _, _ := ro.Get(ctx, "waf-007"); r.State != Provisioned {
		t.Errorf("read-only: %+v", r)
	}
	if _, err := ReadFileStore(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing state folder read as an empty one")
	}
}

// BenchmarkFileStoreFetched is the embedded store's cost per part served,
// as boots ask: each instance its five parts in a row, many instances in
// parallel. The first part's change of state is written and synced; the
// others wait for the flush.
func BenchmarkFileStoreFetched(b *testing.B) {
	s, err := OpenFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	parts := []string{"meta-data", "user-data", "vendor-data", "network-config", "seed-manifest"}
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			instance := fmt.Sprintf("i-%d", i/int64(len(parts)))
			if err := s.Fetched(ctx, instance, Fetch{Layout: "nocloud", Part: parts[i%int64(len(parts))], Source: "10.0.0.1", At: t0}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
