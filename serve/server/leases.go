package server

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Leases finds the MAC an address was leased to, in DHCP servers' lease
// files: dnsmasq's (dhcp-leasefile) and ISC dhcpd's (dhcpd.leases), told
// apart by their content. A file is read again when its size or mtime
// changes, so a lease given a second ago is found. An address is weaker
// than a UUID selector: anything on the segment can take it.
type Leases struct {
	files []string
	now   func() time.Time
	mu    sync.Mutex
	read  map[string]*leaseFile
}

type leaseFile struct {
	size    int64
	modTime time.Time
	leases  map[netip.Addr]Lease
}

// Lease is one address given to one MAC until Expires (zero: never).
type Lease struct {
	Addr    netip.Addr
	MAC     string
	Expires time.Time
}

// maxLeaseFile bounds what is read of one lease file: a million leases
// of ISC's ~200 bytes.
const maxLeaseFile = 256 << 20

// NewLeases looks addresses up in files, read when asked.
func NewLeases(files []string, now func() time.Time) *Leases {
	if now == nil {
		now = time.Now
	}
	return &Leases{files: files, now: now, read: map[string]*leaseFile{}}
}

// MAC is the MAC the live lease of a was given to; the files later in
// the list win.
func (l *Leases) MAC(a netip.Addr) (string, bool) {
	a = a.Unmap()
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var mac string
	for _, f := range l.files {
		lf := l.load(f)
		if lf == nil {
			continue
		}
		if le, ok := lf.leases[a]; ok && (le.Expires.IsZero() || now.Before(le.Expires)) {
			mac = le.MAC
		}
	}
	return mac, mac != ""
}

// load returns f's leases, reread when it changed; a file that cannot
// be read now keeps what was read before (dnsmasq rewrites its file by
// rename, and the moment between is not an outage).
func (l *Leases) load(f string) *leaseFile {
	fi, err := os.Stat(f)
	old := l.read[f]
	if err != nil {
		return old
	}
	if old != nil && old.size == fi.Size() && old.modTime.Equal(fi.ModTime()) {
		return old
	}
	fh, err := os.Open(f)
	if err != nil {
		return old
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxLeaseFile))
	if err != nil {
		return old
	}
	lf := &leaseFile{size: fi.Size(), modTime: fi.ModTime(), leases: ParseLeases(data)}
	l.read[f] = lf
	return lf
}

// ParseLeases reads a dnsmasq or an ISC dhcpd lease file: the leases by
// address. A line or a block it does not understand is passed over.
func ParseLeases(data []byte) map[netip.Addr]Lease {
	if isISCLeases(data) {
		return parseISCLeases(data)
	}
	return parseDnsmasqLeases(data)
}

func isISCLeases(data []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		return strings.HasPrefix(line, "lease ") || strings.HasPrefix(line, "server-duid") || strings.HasPrefix(line, "authoring-byte-order") || strings.HasPrefix(line, "failover ") || strings.HasPrefix(line, "host ")
	}
	return false
}

// parseDnsmasqLeases reads dnsmasq's lines: "EXPIRY MAC ADDRESS
// HOSTNAME CLIENT-ID", EXPIRY in Unix seconds (0: never). The IPv6
// leases after the "duid" line have an IAID where the MAC is, and are
// passed over.
func parseDnsmasqLeases(data []byte) map[netip.Addr]Lease {
	out := map[netip.Addr]Lease{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		exp, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || exp < 0 {
			continue
		}
		hw, err := net.ParseMAC(f[1])
		if err != nil || len(hw) != 6 {
			continue
		}
		a, err := netip.ParseAddr(f[2])
		if err != nil {
			continue
		}
		le := Lease{Addr: a.Unmap(), MAC: hw.String()}
		if exp > 0 {
			le.Expires = time.Unix(exp, 0)
		}
		out[le.Addr] = le
	}
	return out
}

// parseISCLeases reads dhcpd.leases: "lease ADDRESS { ... }" blocks, the
// later block for an address replacing the earlier (dhcpd appends), with
// "hardware ethernet MAC;", "ends W YYYY/MM/DD HH:MM:SS;" (UTC) or "ends
// never;", "ends epoch N;", and "binding state S;": only an active (or
// unstated) binding is a lease.
func parseISCLeases(data []byte) map[netip.Addr]Lease {
	out := map[netip.Addr]Lease{}
	var cur *Lease
	active := true
	for _, raw := range strings.Split(string(data), "\n") {
		line := raw
		if i := strings.IndexByte(line, '#'); i >= 0 && !strings.Contains(line[:i], `"`) {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if cur == nil {
			rest, ok := strings.CutPrefix(line, "lease ")
			if !ok {
				continue
			}
			addr, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
			a, err := netip.ParseAddr(addr)
			if err != nil || !strings.HasSuffix(rest, "{") {
				continue
			}
			cur, active = &Lease{Addr: a.Unmap()}, true
			continue
		}
		if line == "}" {
			if cur.MAC != "" && active {
				out[cur.Addr] = *cur
			} else {
				delete(out, cur.Addr)
			}
			cur = nil
			continue
		}
		stmt := strings.TrimSuffix(line, ";")
		f := strings.Fields(stmt)
		switch {
		case len(f) == 3 && f[0] == "hardware" && f[1] == "ethernet":
			if hw, err := net.ParseMAC(f[2]); err == nil && len(hw) == 6 {
				cur.MAC = hw.String()
			}
		case len(f) == 3 && f[0] == "binding" && f[1] == "state":
			active = f[2] == "active"
		case len(f) >= 2 && f[0] == "ends":
			switch {
			case f[1] == "never":
				cur.Expires = time.Time{}
			case f[1] == "epoch" && len(f) == 3:
				if n, err := strconv.ParseInt(f[2], 10, 64); err == nil {
					cur.Expires = time.Unix(n, 0)
				}
			case len(f) == 4:
				if t, err := time.Parse("2006/01/02 15:04:05", f[2]+" "+f[3]); err == nil {
					cur.Expires = t
				}
			}
		}
	}
	return out
}
