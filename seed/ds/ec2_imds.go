package ds

// The EC2 instance metadata service protocol, shared by Ec2, AliYun,
// Exoscale and CloudStack: IMDSv2 session tokens, the API version choice
// and the crawl of a one-key-per-URL tree into a map, the way cloud-init's
// ec2 helper materialises it.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

const (
	imdsTokenPath      = "latest/api/token"
	imdsTokenHeader    = "X-aws-ec2-metadata-token"
	imdsTokenTTLHeader = "X-aws-ec2-metadata-token-ttl-seconds"
	// imdsTokenTTL is cloud-init's six hours.
	imdsTokenTTL = 6 * time.Hour
	// imdsTokenMargin renews a token this long before it expires, so a
	// request never races the expiry.
	imdsTokenMargin = 30 * time.Second

	// A hostile or broken server could list itself forever: the crawl
	// stops at these bounds.
	imdsMaxDepth   = 12
	imdsMaxEntries = 4000
)

// imdsTokenMode says whether a service uses IMDSv2 session tokens.
type imdsTokenMode int

const (
	// imdsNoToken: plain GETs, as cloud-init does for every EC2 copy.
	imdsNoToken imdsTokenMode = iota
	// imdsTokenRequired: IMDSv2 only; no token, no data.
	imdsTokenRequired
	// imdsTokenFirst: IMDSv2, falling back to IMDSv1 when the token PUT
	// fails for a reason other than 403 (endpoint disabled).
	imdsTokenFirst
)

// imdsSession talks to one IMDS base URL, holding the session token.
type imdsSession struct {
	client *metadataClient
	base   string
	mode   imdsTokenMode
	now    func() time.Time
	// tokenHeader and ttlHeader name the token's headers: EC2's unless
	// set (Firecracker's MMDS has its own).
	tokenHeader, ttlHeader string
	// ttl is the token's lifetime asked for: imdsTokenTTL unless set.
	ttl time.Duration

	mu          sync.Mutex
	token       string
	tokenExpiry time.Time
	// tokenless is set when IMDSv1 fallback was taken.
	tokenless bool
}

func newIMDSSession(client *metadataClient, base string, mode imdsTokenMode) *imdsSession {
	return &imdsSession{client: client, base: base, mode: mode, now: time.Now}
}

func (s *imdsSession) tokenTTL() time.Duration {
	if s.ttl > 0 {
		return s.ttl
	}
	return imdsTokenTTL
}

// connect obtains the first token (or settles on IMDSv1), telling whether
// the endpoint answers at all.
func (s *imdsSession) connect(ctx context.Context) error {
	if s.mode == imdsNoToken {
		return nil
	}
	err := s.refreshToken(ctx)
	if err == nil {
		return nil
	}
	if isStatus(err, http.StatusForbidden) {
		return fmt.Errorf("get IMDSv2 token from %s: the HTTP endpoint is disabled: %w", s.base, err)
	}
	if s.mode == imdsTokenFirst {
		s.client.log.Debug("IMDSv2 token refused, falling back to IMDSv1", "url", s.base, "err", err)
		s.mu.Lock()
		s.tokenless = true
		s.mu.Unlock()
		return nil
	}
	return fmt.Errorf("get IMDSv2 token from %s (IMDSv1 fallback not enabled): %w", s.base, err)
}

// refreshToken PUTs for a new token. The token itself is never logged and
// never appears in an error.
func (s *imdsSession) refreshToken(ctx context.Context) error {
	hdr := http.Header{}
	hdr.Set(cmp.Or(s.ttlHeader, imdsTokenTTLHeader), strconv.Itoa(int(s.tokenTTL()/time.Second)))
	body, err := s.client.do(ctx, http.MethodPut, joinURL(s.base, imdsTokenPath), hdr, nil)
	if err != nil {
		return err
	}
	token := strings.TrimSpace(string(body))
	if token == "" || strings.ContainsAny(token, "\r\n") {
		return fmt.Errorf("get IMDSv2 token from %s: empty or malformed token", s.base)
	}
	s.mu.Lock()
	s.token = token
	s.tokenExpiry = s.now().Add(s.tokenTTL())
	s.mu.Unlock()
	s.client.log.Debug("got IMDSv2 token", "url", s.base, "ttl", s.tokenTTL())
	return nil
}

// headers returns the token header, renewing the token when it is about
// to expire.
func (s *imdsSession) headers(ctx context.Context) (http.Header, error) {
	if s.mode == imdsNoToken {
		return nil, nil
	}
	s.mu.Lock()
	tokenless, token, expiry := s.tokenless, s.token, s.tokenExpiry
	s.mu.Unlock()
	if tokenless {
		return nil, nil
	}
	if token == "" || !s.now().Before(expiry.Add(-imdsTokenMargin)) {
		if err := s.refreshToken(ctx); err != nil {
			return nil, err
		}
		s.mu.Lock()
		token = s.token
		s.mu.Unlock()
	}
	hdr := http.Header{}
	hdr.Set(cmp.Or(s.tokenHeader, imdsTokenHeader), token)
	return hdr, nil
}

// get fetches base/path; a 401 means the token went stale (IMDS restarted
// or the clock jumped), so it renews the token once and asks again.
func (s *imdsSession) get(ctx context.Context, path string) ([]byte, error) {
	return s.getWith(ctx, path, nil)
}

// getWith is get with more headers (Firecracker's MMDS answers JSON to
// Accept: application/json).
func (s *imdsSession) getWith(ctx context.Context, path string, extra http.Header) ([]byte, error) {
	url := joinURL(s.base, path)
	headers := func() (http.Header, error) {
		hdr, err := s.headers(ctx)
		if err != nil || len(extra) == 0 {
			return hdr, err
		}
		if hdr == nil {
			hdr = http.Header{}
		}
		for k, vs := range extra {
			hdr[k] = vs
		}
		return hdr, nil
	}
	hdr, err := headers()
	if err != nil {
		return nil, err
	}
	data, err := s.client.get(ctx, url, hdr)
	if err != nil && s.mode != imdsNoToken && !s.isTokenless() && isStatus(err, http.StatusUnauthorized) {
		s.mu.Lock()
		s.token = ""
		s.mu.Unlock()
		if hdr, err = headers(); err != nil {
			return nil, err
		}
		data, err = s.client.get(ctx, url, hdr)
	}
	return data, err
}

func (s *imdsSession) isTokenless() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenless
}

// imdsVersions are cloud-init 22.4's API versions, newest first, then its
// minimum; "latest" is seedinit's last resort for servers (and the AWS
// mock) that serve nothing else.
var imdsVersions = []string{"2021-03-23", "2018-09-24", "2016-09-02", "2009-04-04", "latest"}

// pickVersion returns the first version whose meta-data/instance-id answers.
func (s *imdsSession) pickVersion(ctx context.Context, versions []string) (string, error) {
	var errs []error
	for _, v := range versions {
		_, err := s.get(ctx, v+"/meta-data/instance-id")
		if err == nil {
			return v, nil
		}
		errs = append(errs, err)
		if !isStatus(err, http.StatusNotFound) {
			// Not a missing version but a broken or absent server: no
			// point asking for older versions.
			break
		}
	}
	return "", fmt.Errorf("find an API version at %s: %w", s.base, errors.Join(errs...))
}

// crawl reads the tree under dir (ending in "/") into a map.
func (s *imdsSession) crawl(ctx context.Context, dir string) (map[string]any, error) {
	budget := imdsMaxEntries
	return s.crawlDir(ctx, dir, 0, &budget)
}

func (s *imdsSession) crawlDir(ctx context.Context, dir string, depth int, budget *int) (map[string]any, error) {
	if depth > imdsMaxDepth {
		return nil, fmt.Errorf("crawl %s: deeper than %d levels", joinURL(s.base, dir), imdsMaxDepth)
	}
	listing, err := s.get(ctx, dir)
	if err != nil {
		return nil, err
	}
	leaves, children := parseIMDSListing(listing)
	*budget -= len(leaves) + len(children)
	if *budget < 0 {
		return nil, fmt.Errorf("crawl %s: more than %d entries", joinURL(s.base, dir), imdsMaxEntries)
	}
	out := map[string]any{}
	for _, child := range children {
		sub, err := s.crawlDir(ctx, dir+child+"/", depth+1, budget)
		if err != nil {
			return nil, err
		}
		out[child] = sub
	}
	for _, leaf := range leaves {
		if _, dup := out[leaf.name]; dup {
			continue
		}
		blob, err := s.get(ctx, dir+leaf.resource)
		if err != nil {
			return nil, err
		}
		out[leaf.name] = decodeIMDSLeaf(blob)
	}
	return out, nil
}

// imdsLeaf is one value in a listing: its key in the tree and the path
// that holds its value (they differ for public-keys' "0=name").
type imdsLeaf struct {
	name, resource string
}

// parseIMDSListing splits a directory listing into leaves and children
// with cloud-init's rules: "x/" is a directory, "N=name" under public-keys
// is the key named name at N/openssh-key, security-credentials is never
// read (it holds IAM secrets).
func parseIMDSListing(listing []byte) (leaves []imdsLeaf, children []string) {
	seenChild := map[string]bool{}
	for _, line := range strings.Split(string(listing), "\n") {
		line = strings.TrimSpace(line)
		name := strings.TrimRight(line, "/")
		if name == "" || name == "security-credentials" || !validIMDSName(name) {
			continue
		}
		if strings.HasSuffix(line, "/") {
			if !seenChild[name] {
				seenChild[name] = true
				children = append(children, name)
			}
			continue
		}
		leaf := imdsLeaf{name: name, resource: name}
		if ident, keyName, ok := strings.Cut(name, "="); ok {
			if n, err := strconv.Atoi(ident); err == nil && n >= 0 {
				leaf = imdsLeaf{name: keyName, resource: strconv.Itoa(n) + "/openssh-key"}
			}
		}
		leaves = append(leaves, leaf)
	}
	return leaves, children
}

// validIMDSName refuses names that would walk out of the directory being
// crawled or break the URL.
func validIMDSName(name string) bool {
	if strings.ContainsAny(name, "?#\x00\\") {
		return false
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// decodeIMDSLeaf turns a value into what cloud-init's MetadataLeafDecoder
// gives: a JSON object when it looks like one, a list of lines when it has
// several, else the text. Binary values stay text (cloud-init keeps bytes).
func decodeIMDSLeaf(blob []byte) any {
	if len(blob) == 0 {
		return ""
	}
	if !utf8.Valid(blob) {
		return string(blob)
	}
	text := string(blob)
	trimmed := strings.TrimSpace(text)
	if strings.HasPrefix(trimmed, "{") && strings.HasSuffix(trimmed, "}") {
		var obj any
		if err := json.Unmarshal([]byte(trimmed), &obj); err == nil {
			return obj
		}
	}
	if strings.Contains(text, "\n") {
		return splitLinesPython(text)
	}
	return text
}

// splitLinesPython splits like Python's str.splitlines for \n and \r\n:
// no trailing empty element.
func splitLinesPython(text string) []any {
	text = strings.TrimSuffix(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var out []any
	for _, l := range strings.Split(text, "\n") {
		out = append(out, l)
	}
	return out
}

// publicKeysFromMetadata flattens a public-keys value like cloud-init's
// normalize_pubkey_data; it also reads {"0": {"openssh-key": ...}}, the
// shape a listing of "0/" gives (the AWS mock), which cloud-init drops.
func publicKeysFromMetadata(v any) []string {
	var keys []string
	add := func(item any) {
		switch x := item.(type) {
		case string:
			if x != "" {
				keys = append(keys, x)
			}
		case []any:
			for _, k := range x {
				if s, ok := k.(string); ok && s != "" {
					keys = append(keys, s)
				}
			}
		}
	}
	switch x := v.(type) {
	case string:
		for _, l := range strings.Split(strings.ReplaceAll(x, "\r\n", "\n"), "\n") {
			if l != "" {
				keys = append(keys, l)
			}
		}
	case []any:
		add(x)
	case map[string]any:
		for _, name := range sortedKeys(x) {
			switch inner := x[name].(type) {
			case map[string]any:
				add(inner["openssh-key"])
			default:
				add(inner)
			}
		}
	}
	return keys
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// stringAt walks a metadata tree by keys and returns the string there.
func stringAt(tree map[string]any, keys ...string) string {
	var cur any = tree
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[k]
	}
	switch v := cur.(type) {
	case string:
		return strings.TrimSpace(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case json.Number:
		return v.String()
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	}
	return ""
}
