package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedinit/seedinit/serve/pgstore/pgtest"
)

// A password the test cluster never asks for (trust): it must never be
// printed.
const dbPassword = "hunter2-never-logged"

// serve load stores a good inventory once, refuses a broken one with
// its problems, and serve status --db lists the stored inventory's
// instances.
func TestServeLoadAndStatusDB(t *testing.T) {
	dsn := pgtest.Start(t) + " password=" + dbPassword
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"instances/waf-1.yaml": "instance: waf-1\nselectors: {mac: 52:54:00:00:00:01}\n"})
	code, out, stderr := run(t, "serve", "load", "--db", dsn, dir)
	if code != exitOK || !strings.Contains(out, ": 1 instances, 0 groups: stored as generation 1 in seedinit@") {
		t.Fatalf("load: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ = run(t, "serve", "load", "--db", dsn, dir); code != exitOK || !strings.Contains(out, "unchanged as generation 1") {
		t.Errorf("load again: exit %d\n%s", code, out)
	}
	writeFiles(t, dir, map[string]string{"instances/waf-2.yaml": "instance: waf-2\ngroups: [nope]\n"})
	code, out, _ = run(t, "serve", "load", "--db", dsn, dir)
	if code != exitError || !strings.Contains(out, "instances/waf-2.yaml") || !strings.Contains(out, "1 problems: not stored") {
		t.Errorf("load a broken inventory: exit %d\n%s", code, out)
	}
	code, out, stderr = run(t, "serve", "status", "--db", dsn)
	if code != exitOK || !strings.Contains(out, "waf-1") || !strings.Contains(out, "1 instances: 1 waiting") {
		t.Errorf("status --db: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr = run(t, "serve", "--db", dsn, "--state", t.TempDir(), dir); code != exitError || !strings.Contains(stderr, "--state and --db") {
		t.Errorf("--state with --db: exit %d\n%s", code, stderr)
	}
	_, _, stderr = run(t, "serve", "status", "--db", "host=/nonexistent user=x password="+dbPassword+" connect_timeout=1")
	if !strings.Contains(stderr, "seedinit: serve status:") || strings.Contains(stderr, dbPassword) {
		t.Errorf("status of a database that is not there: %s (and never the password)", stderr)
	}
}

// startServe runs `seedinit serve` as its own process on a free port of
// 127.0.0.1 until the test ends, and returns its URL and its log.
func startServe(t *testing.T, args ...string) (string, *bytes.Buffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var log bytes.Buffer
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--listen", addr}, args...)...)
	cmd.Env = append(os.Environ(), asCommandEnv+"=1")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if strings.Contains(log.String(), dbPassword) {
			t.Errorf("the password is in the log:\n%s", log.String())
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("seedinit serve %v exited:\n%s", args, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("seedinit serve %v: not listening after 20s:\n%s", args, log.String())
		}
	}
	return "http://" + addr, &log
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// seedinit serve --db DSN DIR loads the folder for every replica and
// follows its edits; a replica started with --db alone serves them
// without a restart.
func TestServeReplicasDB(t *testing.T) {
	dsn := pgtest.Start(t) + " password=" + dbPassword
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"instances/waf-1.yaml": "instance: waf-1\nselectors: {mac: 52:54:00:00:00:01}\n"})
	if code, _, stderr := run(t, "serve", "--db", dsn, "--listen", "127.0.0.1:0"); code != exitError || !strings.Contains(stderr, "no inventory loaded") {
		t.Errorf("a replica over an empty database: exit %d\n%s", code, stderr)
	}
	loader, _ := startServe(t, "--db", dsn, "--reload", "100ms", dir)
	replica, log := startServe(t, "--db", dsn)
	for _, u := range []string{loader, replica} {
		if code := getStatus(t, u+"/nocloud/waf-1/meta-data"); code != http.StatusOK {
			t.Errorf("waf-1 on %s: %d", u, code)
		}
	}
	writeFiles(t, dir, map[string]string{"instances/waf-2.yaml": "instance: waf-2\n"})
	for deadline := time.Now().Add(20 * time.Second); getStatus(t, replica+"/nocloud/waf-2/meta-data") != http.StatusOK; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the replica does not serve waf-2 20s after the edit:\n%s", log.String())
		}
	}
	// A broken edit: the loader refuses it, the replica keeps waf-2.
	if err := os.WriteFile(filepath.Join(dir, "instances/waf-2.yaml"), []byte("instance: waf-2\ngroups: [nope]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if code := getStatus(t, replica+"/nocloud/waf-2/meta-data"); code != http.StatusOK {
		t.Errorf("waf-2 after a broken edit: %d", code)
	}
}
