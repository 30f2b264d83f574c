package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seedinit/seedinit/serve/inventory"
)

// IMDSv2, as EC2 answers it: a PUT to /latest/api/token with a TTL of 1
// to 21600 seconds gives a token; GETs carry it. The token here is bound
// to the address that asked for it, so an address that did not PUT
// cannot replay another's, and a PUT with X-Forwarded-For is refused as
// EC2 refuses it: a proxy on the instance (an SSRF) does not get one.
//
// A token is its own record: its expiry and a nonce, and an HMAC over
// them and the address under the server's secret. Nothing is kept per
// token, so a client that PUTs in a loop grows nothing, and replicas
// that share the secret (Config.TokenSecret, kept in their database)
// each accept the tokens of the others: the PUT and the GETs of one boot
// may reach different replicas behind a load balancer.
const (
	tokenHeader    = "X-aws-ec2-metadata-token"
	tokenTTLHeader = "X-aws-ec2-metadata-token-ttl-seconds"
	maxTokenTTL    = 21600
	// MinTokenSecret is the shortest Config.TokenSecret taken.
	MinTokenSecret = 32
)

// A token's bytes: expiry (Unix seconds, big-endian), nonce, MAC.
const (
	tokenExpiryLen = 8
	tokenNonceLen  = 8
	tokenMACLen    = sha256.Size
	tokenLen       = tokenExpiryLen + tokenNonceLen + tokenMACLen
)

type tokens struct {
	now    func() time.Time
	secret []byte
}

// newTokens makes tokens under secret; a nil secret is a random one of
// this process's own, whose tokens no other process accepts.
func newTokens(now func() time.Time, secret []byte) *tokens {
	if secret == nil {
		secret = make([]byte, MinTokenSecret)
		rand.Read(secret)
	}
	return &tokens{now: now, secret: bytes.Clone(secret)}
}

func (t *tokens) mac(head []byte, remote netip.Addr) []byte {
	m := hmac.New(sha256.New, t.secret)
	m.Write([]byte("seedinit imdsv2 token\x00"))
	m.Write(head)
	a := remote.Unmap().As16()
	m.Write(a[:])
	return m.Sum(nil)
}

// issue makes a token for remote that lasts ttl.
func (t *tokens) issue(remote netip.Addr, ttl time.Duration) string {
	raw := make([]byte, tokenExpiryLen+tokenNonceLen, tokenLen)
	// Rounded up to the second: a token lasts its TTL at least.
	exp := t.now().Add(ttl)
	secs := exp.Unix()
	if exp.Nanosecond() > 0 {
		secs++
	}
	binary.BigEndian.PutUint64(raw, uint64(secs))
	rand.Read(raw[tokenExpiryLen:])
	raw = append(raw, t.mac(raw, remote)...)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// check says why tok does not let remote in, "" when it does.
func (t *tokens) check(tok string, remote netip.Addr) string {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) != tokenLen {
		return "unknown IMDSv2 token"
	}
	head := raw[:tokenExpiryLen+tokenNonceLen]
	if !hmac.Equal(raw[len(head):], t.mac(head, remote)) {
		// Not told apart from a forged one: the MAC covers the
		// address, so a token of another address fails here too.
		return "unknown IMDSv2 token, or issued to another address"
	}
	if expires := time.Unix(int64(binary.BigEndian.Uint64(raw)), 0); !t.now().Before(expires) {
		return "expired IMDSv2 token"
	}
	return ""
}

// ec2Version is an API version in a path: latest, 1.0 or a date.
var ec2Version = regexp.MustCompile(`^(latest|1\.0|[0-9]{4}-[0-9]{2}-[0-9]{2})$`)

// ec2Versions are the versions the root lists.
var ec2Versions = []string{"1.0", "2009-04-04", "2016-09-02", "2018-09-24", "2021-03-23", "latest"}

// serveEC2 answers EC2's instance metadata service for the instance
// asking by its address, and anything on the mux no other layout took.
func (s *Server) serveEC2(w http.ResponseWriter, r *request) {
	p := r.URL.Path
	if p == "/latest/api/token" {
		s.serveToken(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.refuse(w, r, http.StatusMethodNotAllowed, "only GET, and PUT for /latest/api/token")
		return
	}
	if p == "/" {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Join(ec2Versions, "\n")))
		return
	}
	version, rest, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	if !ec2Version.MatchString(version) {
		s.refuse(w, r, http.StatusNotFound, "no such path")
		return
	}
	if tok := r.Header.Get(tokenHeader); tok != "" {
		if why := s.tokens.check(tok, r.remote); why != "" {
			s.refuse(w, r, http.StatusUnauthorized, why)
			return
		}
	} else if !s.cfg.IMDSv1 {
		s.refuse(w, r, http.StatusUnauthorized, "no IMDSv2 token (IMDSv1 is off: seedinit serve --imdsv1 allows it)")
		return
	}
	inst, _, why := s.byAddress(r)
	if inst == nil {
		s.refuse(w, r, http.StatusNotFound, why)
		return
	}
	switch {
	case rest == "":
		s.serve(w, r, inst, "listing", "text/plain", []byte("dynamic\nmeta-data\nuser-data"))
	case rest == "user-data":
		if inst.UserData == nil {
			http.Error(w, "instance "+inst.Name+" has no user-data", http.StatusNotFound)
			return
		}
		s.serve(w, r, inst, "user-data", "application/octet-stream", inst.UserData)
	case rest == "meta-data" || strings.HasPrefix(rest, "meta-data/"):
		s.serveEC2Tree(w, r, inst, ec2MetaTree(inst, r.remote), strings.TrimPrefix(rest, "meta-data"), "meta-data")
	case rest == "dynamic" || strings.HasPrefix(rest, "dynamic/"):
		doc, err := json.MarshalIndent(identityDocument(inst, r.remote), "", "  ")
		if err != nil {
			s.refuse(w, r, http.StatusInternalServerError, "encode identity document: "+err.Error())
			return
		}
		tree := map[string]any{"instance-identity": map[string]any{"document": string(doc)}}
		s.serveEC2Tree(w, r, inst, tree, strings.TrimPrefix(rest, "dynamic"), "dynamic")
	default:
		http.Error(w, "no such path", http.StatusNotFound)
	}
}

// serveToken is the IMDSv2 token PUT.
func (s *Server) serveToken(w http.ResponseWriter, r *request) {
	if r.Method != http.MethodPut {
		s.refuse(w, r, http.StatusMethodNotAllowed, "a token is asked for with PUT")
		return
	}
	if r.Header.Get("X-Forwarded-For") != "" {
		s.refuse(w, r, http.StatusForbidden, "token PUT with X-Forwarded-For (a proxy asking)")
		return
	}
	ttl, err := strconv.Atoi(r.Header.Get(tokenTTLHeader))
	if err != nil || ttl < 1 || ttl > maxTokenTTL {
		s.refuse(w, r, http.StatusBadRequest, "want "+tokenTTLHeader+" of 1 to 21600")
		return
	}
	if !r.remote.IsValid() {
		s.refuse(w, r, http.StatusForbidden, "no source address to bind a token to")
		return
	}
	tok := s.tokens.issue(r.remote, time.Duration(ttl)*time.Second)
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set(tokenTTLHeader, strconv.Itoa(ttl))
	w.Write([]byte(tok))
}

// serveEC2Tree answers a path below a tree: a listing for a mapping
// (children with a trailing slash), the value for a leaf.
func (s *Server) serveEC2Tree(w http.ResponseWriter, r *request, inst *inventory.Instance, tree map[string]any, sub, part string) {
	var node any = tree
	for _, seg := range strings.Split(strings.Trim(sub, "/"), "/") {
		if seg == "" {
			continue
		}
		m, ok := node.(map[string]any)
		if !ok {
			http.Error(w, "no such path", http.StatusNotFound)
			return
		}
		if node, ok = m[seg]; !ok {
			http.Error(w, "no such path", http.StatusNotFound)
			return
		}
	}
	switch x := node.(type) {
	case string:
		s.serve(w, r, inst, part+sub, "text/plain", []byte(x))
	case map[string]any:
		var names []string
		for k, v := range x {
			if _, dir := v.(map[string]any); dir {
				k += "/"
			}
			names = append(names, k)
		}
		sort.Strings(names)
		if strings.Trim(sub, "/") == "public-keys" {
			// EC2 lists keys as N=name, each at N/openssh-key.
			names = names[:0]
			for i := range len(x) {
				names = append(names, strconv.Itoa(i)+"=key-"+strconv.Itoa(i))
			}
		}
		s.serve(w, r, inst, part+sub, "text/plain", []byte(strings.Join(names, "\n")))
	}
}

// ec2MetaTree is the meta-data tree of inst as EC2 lays it out, from its
// NoCloud meta-data; local-ipv4 is the address it asks from.
func ec2MetaTree(inst *inventory.Instance, remote netip.Addr) map[string]any {
	md := inst.MetaData
	hostname := inst.Hostname
	if h, ok := md["local-hostname"].(string); ok && h != "" {
		hostname = h
	}
	t := map[string]any{
		"instance-id": inst.InstanceID,
	}
	if hostname != "" {
		t["local-hostname"] = hostname
		t["hostname"] = hostname
	}
	if remote.IsValid() {
		t["local-ipv4"] = remote.String()
	}
	placement := map[string]any{}
	if az := ec2Zone(md); az != "" {
		placement["availability-zone"] = az
	}
	if region, ok := md["region"].(string); ok && region != "" {
		placement["region"] = region
	}
	if len(placement) > 0 {
		t["placement"] = placement
	}
	if keys := publicKeys(md); len(keys) > 0 {
		pk := map[string]any{}
		for i, k := range keys {
			pk[strconv.Itoa(i)] = map[string]any{"openssh-key": k}
		}
		t["public-keys"] = pk
	}
	if len(inst.MACs) > 0 {
		macs := map[string]any{}
		for i, mac := range inst.MACs {
			nic := map[string]any{"mac": mac, "device-number": strconv.Itoa(i)}
			macs[mac] = nic
		}
		t["mac"] = inst.MACs[0]
		t["network"] = map[string]any{"interfaces": map[string]any{"macs": macs}}
	}
	return t
}

func ec2Zone(md map[string]any) string {
	for _, k := range []string{"availability-zone", "availability_zone"} {
		if az, ok := md[k].(string); ok && az != "" {
			return az
		}
	}
	return ""
}

// identityDocument is dynamic/instance-identity/document.
func identityDocument(inst *inventory.Instance, remote netip.Addr) map[string]any {
	doc := map[string]any{"instanceId": inst.InstanceID, "version": "2017-09-30"}
	if az := ec2Zone(inst.MetaData); az != "" {
		doc["availabilityZone"] = az
	}
	if region, ok := inst.MetaData["region"].(string); ok && region != "" {
		doc["region"] = region
	}
	if remote.IsValid() {
		doc["privateIp"] = remote.String()
	}
	return doc
}
