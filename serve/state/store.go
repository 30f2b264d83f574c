// Package state keeps what `seedinit serve` knows of each instance's
// provisioning: whether it has fetched its seed, and what it reported
// afterwards (cloud-init's phone_home, seedinit's own status report). It
// holds the store (an embedded one here: a folder of small JSON files;
// PostgreSQL for replicas in serve/pgstore, behind the same Store
// interface and rules, ApplyFetch and ApplyReport),
// the Tracker the HTTP server tells what it served and refused, and the
// handlers for the reports, the status page and the Prometheus metrics.
package state

import (
	"github.com/seedinit/seedinit/internal/atomicfile"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// State is where an instance is in its provisioning.
type State string

// The states, in the order an instance goes through them.
const (
	// Waiting: in the inventory, nothing fetched yet (no record).
	Waiting State = "waiting"
	// Fetched: the server has served it a part of its seed.
	Fetched State = "fetched"
	// Provisioned: it reported success (phone_home, or a report without
	// errors).
	Provisioned State = "provisioned"
	// Failed: it reported errors.
	Failed State = "failed"
)

// States lists the states, for tables and metrics.
var States = []State{Waiting, Fetched, Provisioned, Failed}

// Record is what the store keeps of one instance.
type Record struct {
	Instance string `json:"instance"`
	State    State  `json:"state"`
	// Since is when the instance entered its state.
	Since time.Time `json:"since,omitzero"`
	// FirstFetched and LastFetched bound the parts served; Fetches counts
	// them; LastPart names the last ("nocloud user-data").
	FirstFetched time.Time `json:"first_fetched,omitzero"`
	LastFetched  time.Time `json:"last_fetched,omitzero"`
	Fetches      int64     `json:"fetches,omitempty"`
	LastPart     string    `json:"last_part,omitempty"`
	// LastSource is the address the instance last fetched or reported
	// from.
	LastSource string `json:"last_source,omitempty"`
	// Reported is when the last report came, Via what ("phone-home",
	// "report"); Errors are its errors (none for a success).
	Reported time.Time `json:"reported,omitzero"`
	Via      string    `json:"via,omitempty"`
	Errors   []string  `json:"errors,omitempty"`
	// Hostname and HostKeys are what a phone_home said of the instance:
	// its host name and SSH host public keys (pub_key_ed25519: ...), for
	// an operator's known_hosts.
	Hostname string            `json:"hostname,omitempty"`
	HostKeys map[string]string `json:"host_keys,omitempty"`
}

// Fetch is one part served to an instance.
type Fetch struct {
	Layout, Part, Source string
	At                   time.Time
}

// Report is what an instance reported after its stages.
type Report struct {
	// Via is "phone-home" or "report".
	Via    string
	Source string
	At     time.Time
	// Errors make the instance failed; none, provisioned. Final false
	// (a report sent while stages still run) records the errors and
	// leaves the state as it is.
	Errors []string
	Final  bool
	// Hostname and HostKeys come from a phone_home's form.
	Hostname string
	HostKeys map[string]string
}

// Store keeps the records. Every method takes a context and may go to a
// disk or a database server; implementations are safe for concurrent
// use, and an update is one atomic read-modify-write of one instance's
// record (a PostgreSQL store does it in one statement or transaction), so
// that replicas sharing a store never lose each other's updates.
type Store interface {
	// Fetched records a part served to instance.
	Fetched(ctx context.Context, instance string, f Fetch) error
	// Reported records an instance's report.
	Reported(ctx context.Context, instance string, r Report) error
	// Get returns an instance's record; false when it has none (it is
	// waiting).
	Get(ctx context.Context, instance string) (Record, bool, error)
	// List returns every record, by instance name.
	List(ctx context.Context) ([]Record, error)
	Close() error
}

// ApplyFetch is the rule a fetch follows, for every Store: a waiting
// instance becomes fetched; one that already reported keeps its state (an
// instance fetches its seed again at every boot), only the fetch's facts
// are updated.
func ApplyFetch(r *Record, f Fetch) {
	if r.State == "" || r.State == Waiting {
		r.State, r.Since = Fetched, f.At
	}
	if r.FirstFetched.IsZero() {
		r.FirstFetched = f.At
	}
	r.LastFetched = f.At
	r.Fetches++
	r.LastPart = strings.TrimSpace(f.Layout + " " + f.Part)
	r.LastSource = f.Source
}

// ApplyReport is the rule a report follows, for every Store.
func ApplyReport(r *Record, rep Report) {
	if rep.Final {
		next := Provisioned
		if len(rep.Errors) > 0 {
			next = Failed
		}
		if r.State != next {
			r.State, r.Since = next, rep.At
		}
	} else if r.State == "" || r.State == Waiting {
		r.State, r.Since = Fetched, rep.At
	}
	r.Reported, r.Via, r.LastSource = rep.At, rep.Via, rep.Source
	r.Errors = append([]string(nil), rep.Errors...)
	if rep.Hostname != "" {
		r.Hostname = rep.Hostname
	}
	if len(rep.HostKeys) > 0 {
		r.HostKeys = rep.HostKeys
	}
}

// FileStore is the embedded store: one JSON file per instance in a
// folder, each written whole (temp file, fsync, rename), so that a crash
// leaves every record old or new, never torn. The records are read when
// it opens and kept in memory. A change of state is on disk before the
// update returns; the further parts one boot fetches within a second of
// the record's last write (a boot asks for four or five) are written
// together at most a second later, and at Close, so that a burst of
// instances costs a write per instance, not per request.
type FileStore struct {
	dir string
	// Problems are the files Open could not read, each with why; their
	// instances start again from waiting.
	Problems []string
	readOnly bool

	mu      sync.RWMutex
	records map[string]Record
	// written is when each record was last written; dirty holds the
	// records changed in memory since.
	written map[string]time.Time
	dirty   map[string]bool
	// locks order the updates of one instance, so that two requests of
	// the same instance never write its file out of order, while
	// different instances write in parallel.
	locks sync.Map // instance → *sync.Mutex

	stop, stopped chan struct{}
	closeOnce     sync.Once
	// flushErr is the last error of a flush in the background, returned
	// by Close (and logged by nobody else: the store has no logger).
	flushErr error
}

// coalesce is how long after a record's write a fetch that does not
// change its state may wait in memory.
const coalesce = time.Second

// ErrReadOnly is returned by the updates of a store opened to be read.
var ErrReadOnly = errors.New("the state store is open read-only")

const recordSuffix = ".json"

// maxRecordFile caps a record file read back: a record is a few hundred
// bytes, its errors capped by the report's size.
const maxRecordFile = 4 << 20

// OpenFileStore opens (creating it if needed) the state folder dir for
// a server. Close it to write what waits in memory.
func OpenFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open state %s: %w", dir, err)
	}
	s, err := loadFileStore(dir)
	if err != nil {
		return nil, err
	}
	s.stop, s.stopped = make(chan struct{}), make(chan struct{})
	go s.flushLoop()
	return s, nil
}

// ReadFileStore opens the state folder dir to read it (seedinit serve
// status), a server running over it or not: nothing is written or
// cleared, and its updates fail with ErrReadOnly.
func ReadFileStore(dir string) (*FileStore, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("open state %s: %w", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("open state %s: not a folder", dir)
	}
	s, err := loadFileStore(dir)
	if err != nil {
		return nil, err
	}
	s.readOnly = true
	return s, nil
}

// staleTemp is the age past which a temporary file is a crash's, not a
// write under way in another process.
const staleTemp = time.Minute

func loadFileStore(dir string) (*FileStore, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", dir, err)
	}
	s := &FileStore{dir: dir, records: map[string]Record{}, written: map[string]time.Time{}, dirty: map[string]bool{}}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if !strings.HasSuffix(name, recordSuffix) || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, name)
		r, err := readRecord(p)
		if err != nil {
			s.Problems = append(s.Problems, err.Error())
			continue
		}
		if want := strings.TrimSuffix(name, recordSuffix); r.Instance != want {
			s.Problems = append(s.Problems, fmt.Sprintf("read %s: the record is instance %q's, not %q's", p, r.Instance, want))
			continue
		}
		s.records[r.Instance] = r
	}
	return s, nil
}

// clearStaleTemps removes the temporary files a crash left.
func (s *FileStore) clearStaleTemps() {
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
			os.Remove(filepath.Join(s.dir, e.Name()))
		}
	}
}

func readRecord(p string) (Record, error) {
	var r Record
	f, err := os.Open(p)
	if err != nil {
		return r, fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return r, fmt.Errorf("read %s: %w", p, err)
	}
	if st.Size() > maxRecordFile {
		return r, fmt.Errorf("read %s: %d bytes, more than a record's %d", p, st.Size(), maxRecordFile)
	}
	if err := json.NewDecoder(f).Decode(&r); err != nil {
		return r, fmt.Errorf("read %s: %w", p, err)
	}
	return r, nil
}

// ErrBadInstance is returned for an instance name that cannot name a
// record file.
var ErrBadInstance = errors.New("not an instance name")

// CheckName says why instance cannot name a record (ErrBadInstance),
// nil when it can: every Store takes the same names.
func CheckName(instance string) error { return checkName(instance) }

func checkName(instance string) error {
	if instance == "" || strings.ContainsAny(instance, "/\\\x00") || strings.HasPrefix(instance, ".") || len(instance) > 200 {
		return fmt.Errorf("%q: %w", instance, ErrBadInstance)
	}
	return nil
}

func (s *FileStore) lock(instance string) func() {
	m, _ := s.locks.LoadOrStore(instance, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// update applies fn to instance's record and writes it, or, when
// mayWait says the change can wait (a fetch that changes no state, soon
// after the last write), leaves it for the flush.
func (s *FileStore) update(ctx context.Context, instance string, fn func(*Record), mayWait bool) error {
	if err := checkName(instance); err != nil {
		return fmt.Errorf("update state of %w", err)
	}
	if s.readOnly {
		return fmt.Errorf("update state of %s: %w", instance, ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("update state of %s: %w", instance, err)
	}
	defer s.lock(instance)()
	s.mu.RLock()
	r, ok := s.records[instance]
	written := s.written[instance]
	s.mu.RUnlock()
	if !ok {
		r = Record{Instance: instance, State: Waiting}
	}
	before := r.State
	r.Errors = append([]string(nil), r.Errors...)
	fn(&r)
	if mayWait && ok && r.State == before && time.Since(written) < coalesce {
		s.mu.Lock()
		s.records[instance] = r
		s.dirty[instance] = true
		s.mu.Unlock()
		return nil
	}
	return s.write(r)
}

// write puts r on disk; the caller holds r's instance lock.
func (s *FileStore) write(r Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("update state of %s: %w", r.Instance, err)
	}
	if err := atomicfile.Write(filepath.Join(s.dir, r.Instance+recordSuffix), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("update state of %s: %w", r.Instance, err)
	}
	s.mu.Lock()
	s.records[r.Instance] = r
	s.written[r.Instance] = time.Now()
	delete(s.dirty, r.Instance)
	s.mu.Unlock()
	return nil
}

// flush writes every record that waits in memory.
func (s *FileStore) flush() error {
	s.mu.RLock()
	names := make([]string, 0, len(s.dirty))
	for name := range s.dirty {
		names = append(names, name)
	}
	s.mu.RUnlock()
	var errs []error
	for _, name := range names {
		unlock := s.lock(name)
		s.mu.RLock()
		r, dirty := s.records[name], s.dirty[name]
		s.mu.RUnlock()
		if dirty {
			if err := s.write(r); err != nil {
				errs = append(errs, err)
			}
		}
		unlock()
	}
	return errors.Join(errs...)
}

func (s *FileStore) flushLoop() {
	defer close(s.stopped)
	defer func() {
		// A panic here must not take the server down; what waits is
		// written by Close.
		if p := recover(); p != nil {
			s.mu.Lock()
			s.flushErr = fmt.Errorf("state flush: panic: %v", p)
			s.mu.Unlock()
		}
	}()
	s.clearStaleTemps()
	t := time.NewTicker(coalesce)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.flush(); err != nil {
				s.mu.Lock()
				s.flushErr = err
				s.mu.Unlock()
			}
		}
	}
}

// Fetched implements Store.
func (s *FileStore) Fetched(ctx context.Context, instance string, f Fetch) error {
	return s.update(ctx, instance, func(r *Record) { ApplyFetch(r, f) }, true)
}

// Reported implements Store.
func (s *FileStore) Reported(ctx context.Context, instance string, rep Report) error {
	return s.update(ctx, instance, func(r *Record) { ApplyReport(r, rep) }, false)
}

// Get implements Store.
func (s *FileStore) Get(ctx context.Context, instance string) (Record, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.records[instance]
	return r, ok, nil
}

// List implements Store.
func (s *FileStore) List(ctx context.Context) ([]Record, error) {
	s.mu.RLock()
	out := make([]Record, 0, len(s.records))
	for _, r := range s.records {
		out = append(out, r)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out, nil
}

// Close implements Store: it writes what waits in memory.
func (s *FileStore) Close() error {
	if s.readOnly {
		return nil
	}
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.stopped
		s.mu.RLock()
		bg := s.flushErr
		s.mu.RUnlock()
		err = errors.Join(s.flush(), bg)
	})
	return err
}

var _ Store = (*FileStore)(nil)
