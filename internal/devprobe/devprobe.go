// Package devprobe runs reads of block devices where PID 1 can abandon
// them. A device that never answers (an emulated CD-ROM whose backend
// stalls, a dying disk) blocks the thread that opens or reads it in
// uninterruptible sleep, where no signal or context reaches it; and a
// process with such a thread cannot even exec: the kernel waits for every
// other thread to end first. PID 1 with one stuck label read never
// reached its real init. So in PID 1 each probe runs in a helper process
// (this program again, serving requests on a pipe), answered within
// Bound; a helper that does not answer in time is killed and left to die
// whenever its read returns, and the device it was opening is left out
// of the rest of the boot. Elsewhere (commands, tests) a probe runs in the calling
// goroutine, with the same encoding, so that both paths are the same code.
package devprobe

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"sync"
	"time"
)

// Handler answers one kind of probe. opening is called with a device's
// name before the handler opens it; false means the device stalled an
// earlier probe and must be left alone. The result is encoded as JSON.
type Handler func(arg string, opening func(device string) bool) (any, error)

var (
	handlersMu sync.Mutex
	handlers   = map[string]Handler{}
)

// Handle registers the handler for op; packages call it in init, so that
// the helper, the same program, has every handler.
func Handle(op string, h Handler) {
	handlersMu.Lock()
	defer handlersMu.Unlock()
	handlers[op] = h
}

func handler(op string) (Handler, bool) {
	handlersMu.Lock()
	defer handlersMu.Unlock()
	h, ok := handlers[op]
	return h, ok
}

// ErrStalled says a probe did not answer within Bound: its helper was
// abandoned, and the device it was opening is skipped from then on.
var ErrStalled = errors.New("the device did not answer")

// Bound is how long a helper has to answer one probe: a healthy device
// answers a label read in milliseconds, an optical drive spinning up in a
// few seconds.
var Bound = 10 * time.Second

// helperEnv marks a helper process.
const helperEnv = "SEEDINIT_DEVPROBE_HELPER"

// request and reply are the lines on the helper's pipes. A helper sends
// any number of replies with Opening set, then one with Done.
type request struct {
	Op   string   `json:"op"`
	Arg  string   `json:"arg"`
	Skip []string `json:"skip,omitempty"`
}

type reply struct {
	Opening string          `json:"opening,omitempty"`
	Done    bool            `json:"done,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// ServeIfHelper serves probes on stdin and stdout and exits, when this
// process was started as a helper; otherwise it returns at once. main
// calls it first.
func ServeIfHelper() {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	serve(os.Stdin, os.Stdout)
	os.Exit(0)
}

func serve(in io.Reader, out io.Writer) {
	dec := json.NewDecoder(in)
	enc := json.NewEncoder(out)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			return
		}
		opening := func(dev string) bool {
			if slices.Contains(req.Skip, dev) {
				return false
			}
			enc.Encode(reply{Opening: dev})
			return true
		}
		res, err := run(req.Op, req.Arg, opening)
		rep := reply{Done: true, Result: res}
		if err != nil {
			rep.Error = err.Error()
		}
		if enc.Encode(rep) != nil {
			return
		}
	}
}

// run calls op's handler and encodes its result; a panic in it is its
// error, not the end of the helper (or of PID 1, which runs the same
// handlers in process when helpers are off).
func run(op, arg string, opening func(string) bool) (raw json.RawMessage, err error) {
	h, ok := handler(op)
	if !ok {
		return nil, fmt.Errorf("device probe %q: no such probe", op)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("device probe %s %s panicked: %v", op, arg, r)
		}
	}()
	v, err := h(arg, opening)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// pool holds the helpers of this process while helpers are on.
type pool struct {
	mu      sync.Mutex
	exe     string
	idle    []*helper
	stalled map[string]bool // devices left out for the rest of the boot
	log     func(msg string, args ...any)
}

var (
	poolMu  sync.Mutex
	current *pool
)

// Enable runs every probe from now on in helpers started from exe (PID 1:
// its own executable); log hears of each device abandoned.
func Enable(exe string, log func(msg string, args ...any)) {
	poolMu.Lock()
	defer poolMu.Unlock()
	if log == nil {
		log = func(string, ...any) {}
	}
	current = &pool{exe: exe, stalled: map[string]bool{}, log: log}
}

// Disable ends the idle helpers and runs probes in process again (PID 1,
// before the handoff). Helpers still stuck are left to die on their own.
func Disable() {
	poolMu.Lock()
	p := current
	current = nil
	poolMu.Unlock()
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.idle {
		h.close()
	}
	p.idle = nil
}

// Stalled lists the devices left out because a probe of them stalled.
func Stalled() []string {
	poolMu.Lock()
	p := current
	poolMu.Unlock()
	if p == nil {
		return nil
	}
	return p.stalledNames()
}

// Call runs probe op on arg, in a helper when helpers are on, and decodes
// its result into out. A helper that does not answer within Bound is
// abandoned: Call returns an error wrapping ErrStalled.
func Call(op, arg string, out any) error {
	poolMu.Lock()
	p := current
	poolMu.Unlock()
	var raw json.RawMessage
	var err error
	if p == nil {
		raw, err = run(op, arg, func(string) bool { return true })
	} else {
		raw, err = p.call(op, arg)
	}
	if err != nil {
		return err
	}
	if out == nil || raw == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("device probe %s %s: decode its answer: %w", op, arg, err)
	}
	return nil
}

// helper is one helper process and its pipes.
type helper struct {
	cmd    *exec.Cmd
	in     *os.File
	out    *os.File
	reader *bufio.Reader
}

func (p *pool) start() (*helper, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start a device probe helper: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("start a device probe helper: %w", err)
	}
	cmd := exec.Command(p.exe)
	cmd.Args = []string{"seedinit-devprobe"}
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stdin, cmd.Stdout = inR, outW
	cmd.Dir = "/"
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start a device probe helper: %w", err)
	}
	h := &helper{cmd: cmd, in: inW, out: outR, reader: bufio.NewReader(outR)}
	// Waiting is an interruptible sleep: it never keeps PID 1 from its
	// exec. (PID 1's reaper may reap the helper first.)
	go cmd.Wait()
	return h, nil
}

// close ends an idle helper: it exits when its input ends.
func (h *helper) close() {
	h.in.Close()
	h.out.Close()
}

func (p *pool) take() (*helper, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		h := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return h, nil
	}
	p.mu.Unlock()
	return p.start()
}

func (p *pool) stalledNames() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for dev := range p.stalled {
		out = append(out, dev)
	}
	sort.Strings(out)
	return out
}

func (p *pool) call(op, arg string) (json.RawMessage, error) {
	h, err := p.take()
	if err != nil {
		return nil, err
	}
	req, _ := json.Marshal(request{Op: op, Arg: arg, Skip: p.stalledNames()})
	deadline := time.Now().Add(Bound)
	h.out.SetReadDeadline(deadline)
	opening := ""
	if _, err := h.in.Write(append(req, '\n')); err != nil {
		h.close()
		return nil, fmt.Errorf("device probe %s %s: %w", op, arg, err)
	}
	for {
		line, err := h.reader.ReadBytes('\n')
		if errors.Is(err, os.ErrDeadlineExceeded) {
			p.abandon(h, op, arg, opening)
			return nil, fmt.Errorf("device probe %s %s: %w within %s", op, arg, ErrStalled, Bound)
		}
		if err != nil {
			h.close()
			return nil, fmt.Errorf("device probe %s %s: the helper ended: %w", op, arg, err)
		}
		var rep reply
		if err := json.Unmarshal(line, &rep); err != nil {
			h.close()
			return nil, fmt.Errorf("device probe %s %s: a reply that is not the helper's: %w", op, arg, err)
		}
		if !rep.Done {
			opening = rep.Opening
			continue
		}
		p.mu.Lock()
		p.idle = append(p.idle, h)
		p.mu.Unlock()
		if rep.Error != "" {
			return nil, errors.New(rep.Error)
		}
		return rep.Result, nil
	}
}

// abandon kills a helper that did not answer (the kill takes when its
// read returns) and leaves the device it was opening out of the rest of
// the boot: one that stalled once stalls the next read too, and a helper
// in a killable wait dies at once though its device is still stuck.
func (p *pool) abandon(h *helper, op, arg, opening string) {
	h.cmd.Process.Kill()
	h.close()
	dev := opening
	if dev == "" {
		dev = arg
	}
	p.mu.Lock()
	p.stalled[dev] = true
	p.mu.Unlock()
	p.log("a device did not answer; the boot goes on without it", "device", dev, "probe", op, "after", Bound.String())
}
