//go:build ignore

// peakmem runs a command and, until it exits, samples the private memory of
// the processes below those named -under in its tree, sleeping -i between
// samples (see bench-cloudinit's header). Output:
// tree_peak_kib largest_process_peak_kib samples sampler_cpu_ns
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pfForkNoExec is PF_FORKNOEXEC in a task's flags: forked, not yet exec'd.
const pfForkNoExec = 0x40

var buf = make([]byte, 64<<10)

// read returns /proc/PID/NAME, valid until the next read.
func read(pid int, name string) []byte {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/"+name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err != nil || m <= 0 {
			break
		}
		n += m
	}
	return buf[:n]
}

var dents = make([]byte, 16<<10)

// children appends the children of every thread of pid to out.
func children(pid int, out []int) []int {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/task", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return out
	}
	var tids []int
	for {
		n, err := syscall.Getdents(fd, dents)
		if err != nil || n <= 0 {
			break
		}
		for b := dents[:n]; len(b) >= 19; { // linux_dirent64: ino, off, reclen, type, name
			reclen := int(b[16]) | int(b[17])<<8
			name, _, _ := bytes.Cut(b[19:reclen], []byte{0})
			if tid, err := strconv.Atoi(string(name)); err == nil {
				tids = append(tids, tid)
			}
			b = b[reclen:]
		}
	}
	syscall.Close(fd)
	for _, tid := range tids {
		for _, f := range bytes.Fields(read(pid, "task/"+strconv.Itoa(tid)+"/children")) {
			if n, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// kcmpVM is KCMP_VM from linux/kcmp.h.
const kcmpVM = 1

// sameVM reports whether a and b share one address space.
func sameVM(a, b int) bool {
	r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(a), uintptr(b), kcmpVM, 0, 0, 0)
	return errno == 0 && r == 0
}

// field returns the number after key in b, 0 if there is none.
func field(b []byte, key string) int64 {
	_, rest, ok := bytes.Cut(b, []byte(key))
	if !ok {
		return 0
	}
	f := bytes.Fields(rest)
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(string(f[0]), 10, 64)
	return n
}

// forkedNoExec reports whether pid was forked and has not exec'd since.
func forkedNoExec(pid int) bool {
	b := read(pid, "stat")
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	f := bytes.Fields(b[i+1:]) // state, ppid, pgrp, session, tty_nr, tpgid, flags
	if len(f) < 7 {
		return false
	}
	flags, _ := strconv.ParseUint(string(f[6]), 10, 64)
	return flags&pfForkNoExec != 0
}

type proc struct {
	pid, parent int
	counted     bool // below a process named -under
	skip        bool // shares its parent's address space
	shares      bool // may share anonymous pages copy-on-write with its parent or a child
}

func main() {
	out := flag.String("o", "", "file to write the result line to (default stdout)")
	under := flag.String("under", "measure", "count the processes below those with this name")
	every := flag.Duration("i", 2*time.Millisecond, "sleep between samples")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: peakmem [-o FILE] [-under NAME] [-i INTERVAL] -- command args...")
		os.Exit(2)
	}
	if !sameVM(os.Getpid(), os.Getpid()) {
		fmt.Fprintln(os.Stderr, "peakmem: kcmp(KCMP_VM) does not work here")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "peakmem: %v\n", err)
		os.Exit(2)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var treePeak, procPeak int64
	samples, underPid := 0, 0
	var stack, tree []proc
	var kids []int
	var err error
sampling:
	for {
		// The tree first, then the memory: a process forked after the
		// listing is left out of this sample rather than counted twice.
		stack, tree = append(stack[:0], proc{pid: cmd.Process.Pid}), tree[:0]
		if underPid != 0 {
			stack = stack[:0]
			for _, c := range children(underPid, kids[:0]) {
				stack = append(stack, proc{pid: c, parent: underPid, counted: true})
			}
		}
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if p.counted {
				tree = append(tree, p)
			} else if string(bytes.TrimSpace(read(p.pid, "comm"))) == *under {
				underPid, p.counted = p.pid, true
			}
			kids = children(p.pid, kids[:0])
			for _, c := range kids {
				stack = append(stack, proc{pid: c, parent: p.pid, counted: p.counted})
			}
		}
		for i := range tree {
			p := &tree[i]
			switch {
			case sameVM(p.pid, p.parent):
				p.skip = true
			case forkedNoExec(p.pid):
				p.shares = true
				for j := range tree[:i] {
					if tree[j].pid == p.parent {
						tree[j].shares = true
					}
				}
			}
		}
		var sum int64
		for _, p := range tree {
			var kib int64
			switch {
			case p.skip:
				continue
			case p.shares:
				kib = field(read(p.pid, "smaps_rollup"), "\nPss_Anon:")
			default:
				kib = field(read(p.pid, "status"), "\nRssAnon:")
			}
			sum += kib
			procPeak = max(procPeak, kib)
		}
		if len(tree) > 0 {
			samples++
			treePeak = max(treePeak, sum)
		}
		select {
		case err = <-done:
			break sampling
		default:
		}
		ts := syscall.NsecToTimespec(every.Nanoseconds()) // a ticker costs twice the CPU
		syscall.Nanosleep(&ts, nil)
	}
	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		fmt.Fprintf(os.Stderr, "peakmem: %v\n", err)
		os.Exit(2)
	}
	if samples == 0 {
		fmt.Fprintf(os.Stderr, "peakmem: no process below %q was seen\n", *under)
		os.Exit(2)
	}
	var self syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	line := fmt.Sprintf("%d %d %d %d\n", treePeak, procPeak, samples, self.Utime.Nano()+self.Stime.Nano())
	if *out == "" {
		fmt.Print(line)
	} else if err := os.WriteFile(*out, []byte(line), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "peakmem: %v\n", err)
		os.Exit(2)
	}
	os.Exit(code)
}
