//go:build ignore

// measure runs a command and prints one line: its wall time, the user and
// system CPU of it and every descendant it reaped, the peak RSS of the
// largest of them, and its exit code. /usr/bin/time rounds wall time to
// 10 ms, too coarse for a run of a few tens of milliseconds.
//
//	go build -o measure scripts/bench-cloudinit.d/measure.go
//	measure -o result.txt -- command args...
//
// Output: wall_ns user_ns sys_ns maxrss_kib exit_code
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	outFile := flag.String("o", "", "file to write the result line to (default stdout)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: measure [-o FILE] -- command args...")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	exitCode := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		exitCode = exitErr.ExitCode()
	case err != nil:
		fmt.Fprintf(os.Stderr, "measure: run %s: %v\n", flag.Arg(0), err)
		os.Exit(2)
	}
	usage, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "measure: no rusage for the child")
		os.Exit(2)
	}
	line := fmt.Sprintf("%d %d %d %d %d\n", wall.Nanoseconds(),
		time.Duration(usage.Utime.Nano()).Nanoseconds(),
		time.Duration(usage.Stime.Nano()).Nanoseconds(),
		usage.Maxrss, exitCode)
	if *outFile == "" {
		fmt.Print(line)
		return
	}
	if err := os.WriteFile(*outFile, []byte(line), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "measure: write %s: %v\n", *outFile, err)
		os.Exit(2)
	}
}
