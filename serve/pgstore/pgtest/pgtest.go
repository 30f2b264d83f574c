// Package pgtest starts a throwaway PostgreSQL for a test: Debian's
// package (apt-get install postgresql; scripts/install-deps), a cluster
// made with initdb in the test's temporary folder, listening only on a
// Unix socket there, stopped when the test ends. Nothing is mocked: the
// replicas' row locks, transactions and notifications are the server's.
package pgtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/testenv"
)

// capDACReadSearch is CAP_DAC_READ_SEARCH (linux/capability.h).
const capDACReadSearch = 2

const install = "Debian's postgresql package: apt-get install postgresql, or scripts/install-deps"

// Bin is the folder of initdb and postgres, "" when not installed.
func Bin() string {
	// Debian keeps them out of PATH, one folder per major version; the
	// newest is taken.
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p)
		}
		return ""
	}
	newest, best := "", -1
	for _, m := range matches {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(m))))
		if v > best {
			newest, best = filepath.Dir(m), v
		}
	}
	return newest
}

// Start starts a cluster for t and returns the DSN of its database
// "postgres" (user seedinit, no password: trust on the socket).
func Start(t testing.TB) string {
	t.Helper()
	return StartCluster(t).DSN
}

// Cluster is a test's PostgreSQL, which it may stop and start again (a
// database away, a failover).
type Cluster struct {
	DSN string
	t   testing.TB
	// start runs postgres and waits until it takes connections; stop
	// ends it.
	start func()
	stop  func()
}

// Stop stops the cluster (a fast shutdown: clients are cut).
func (c *Cluster) Stop() { c.stop() }

// Restart starts the stopped cluster again, over the same data.
func (c *Cluster) Restart() { c.t.Helper(); c.start() }

// StartCluster is Start, with the cluster to stop and start again.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := Bin()
	if bin == "" {
		testenv.Skipf(t, "initdb is not installed (%s)", install)
	}
	dir := t.TempDir()
	// PostgreSQL will not run as root: the cluster runs as nobody, in
	// the folder given to it. The folders above it are root's and 0700
	// (testing's, and scripts/go-test-confined's TMPDIR), and opening
	// them up would be a write outside the test's folder: nobody gets
	// CAP_DAC_READ_SEARCH instead, to walk down to its own.
	var attr syscall.SysProcAttr
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		nobody, err := user.Lookup("nobody")
		if err != nil {
			testenv.Skipf(t, "no user nobody to run PostgreSQL as (it refuses root): %v", err)
		}
		uid, _ := strconv.Atoi(nobody.Uid)
		gid, _ := strconv.Atoi(nobody.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		attr.Credential = cred
		attr.AmbientCaps = []uintptr{capDACReadSearch}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	// A Unix socket's path is at most 107 bytes.
	if n := len(filepath.Join(dir, ".s.PGSQL.5432")); n > 107 {
		t.Fatalf("the socket's path in %s is %d bytes, more than a socket takes: a shorter TMPDIR", dir, n)
	}
	data, sock := filepath.Join(dir, "data"), dir
	run := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		a := attr
		cmd.SysProcAttr = &a
		// Not dir: the child changes into it before exec, when its
		// capability is not in effect yet.
		cmd.Dir = "/"
		// The server's messages come in its own language otherwise, and
		// initdb's locale from the environment.
		cmd.Env = []string{"LANG=C", "LC_ALL=C", "PATH=" + bin + ":/usr/bin:/bin"}
		return cmd
	}
	var out bytes.Buffer
	initdb := run("initdb", "-D", data, "-U", "seedinit", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.Stdout, initdb.Stderr = &out, &out
	if err := initdb.Run(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out.String())
	}
	logf := filepath.Join(dir, "postgres.log")
	c := &Cluster{DSN: fmt.Sprintf("host=%s user=seedinit dbname=postgres sslmode=disable", sock), t: t}
	var pg *exec.Cmd
	var exited chan struct{}
	c.stop = func() {
		if pg == nil {
			return
		}
		// SIGINT is its fast shutdown: clients cut, no wait for them.
		pg.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			pg.Process.Kill()
			<-exited
		}
		pg = nil
	}
	c.start = func() {
		t.Helper()
		lf, err := os.OpenFile(logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer lf.Close() // the child has its own copy
		if cred != nil {
			lf.Chown(int(cred.Uid), int(cred.Gid))
		}
		// No TCP: the socket in the test's folder is the only way in.
		// fsync off: a test's cluster does not outlive a crash.
		pg = run("postgres", "-D", data, "-k", sock, "-c", "listen_addresses=", "-c", "fsync=off",
			"-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=100")
		pg.Stdout, pg.Stderr = lf, lf
		if err := pg.Start(); err != nil {
			pg = nil
			t.Fatalf("start postgres: %v", err)
		}
		exited = make(chan struct{})
		go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(pg, exited)
		socket := filepath.Join(sock, ".s.PGSQL.5432")
		deadline := time.Now().Add(60 * time.Second)
		for {
			if _, err := os.Stat(socket); err == nil {
				// The socket shows before the server takes
				// connections; pg_isready says when it does.
				if exec.Command(filepath.Join(bin, "pg_isready"), "-q", "-h", sock).Run() == nil {
					return
				}
			}
			select {
			case <-exited:
				b, _ := os.ReadFile(logf)
				pg = nil
				t.Fatalf("postgres exited at start:\n%s", b)
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(logf)
				t.Fatalf("postgres did not take connections within a minute:\n%s", b)
			}
		}
	}
	t.Cleanup(c.stop)
	c.start()
	return c
}
