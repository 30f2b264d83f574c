package seed

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// IncludeCache keeps the content of #include-once URLs. cloud-init fetches
// such a URL once per instance, stores the content under the instance's
// data/urlcache, and reads it from there ever after, even when the URL
// has stopped answering (one-time tokens are the point of it).
type IncludeCache interface {
	// Get returns the content kept for url, if any.
	Get(url string) (content []byte, ok bool)
	// Put keeps content for url.
	Put(url string, content []byte) error
}

// IncludeOnceKey is the file name cloud-init gives url's content in its
// urlcache directory: the MD5 of the URL in hex.
func IncludeOnceKey(rawURL string) string {
	sum := md5.Sum([]byte(rawURL))
	return hex.EncodeToString(sum[:])
}

// IncludeOnceDir is cloud-init's urlcache directory in the target root.
const IncludeOnceDir = "/var/lib/cloud/instance/data/urlcache"

// FileIncludeCache keeps #include-once content as cloud-init does: one
// file per URL, named IncludeOnceKey(url), in Dir. The caller supplies the
// file access (a target-root writer), so this package writes nothing
// itself.
type FileIncludeCache struct {
	// Dir is the cache directory, normally IncludeOnceDir.
	Dir string
	// ReadFile reads a file; any error means "not cached".
	ReadFile func(name string) ([]byte, error)
	// WriteFile writes a file (cloud-init makes it mode 0600) and the
	// directories above it.
	WriteFile func(name string, data []byte) error
}

// Get reads the cached content for url.
func (c FileIncludeCache) Get(rawURL string) ([]byte, bool) {
	b, err := c.ReadFile(path.Join(c.Dir, IncludeOnceKey(rawURL)))
	return b, err == nil
}

// Put writes content for url.
func (c FileIncludeCache) Put(rawURL string, content []byte) error {
	name := path.Join(c.Dir, IncludeOnceKey(rawURL))
	if err := c.WriteFile(name, content); err != nil {
		return fmt.Errorf("cache %s as %s: %w", RedactURL(rawURL), name, err)
	}
	return nil
}

// MemoryIncludeCache is an IncludeCache in memory, for tests and for runs
// that should not remember anything. The zero value is ready to use.
type MemoryIncludeCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

// Get returns the content kept for url.
func (c *MemoryIncludeCache) Get(rawURL string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[rawURL]
	return b, ok
}

// Put keeps a copy of content for url.
func (c *MemoryIncludeCache) Put(rawURL string, content []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	c.m[rawURL] = append([]byte(nil), content...)
	return nil
}

// Limits of Web.
const (
	FetchTimeout      = 10 * time.Second
	FetchMaxRedirects = 5
)

// RedactURL shortens a URL for messages: no user information, and no
// query, which often holds a signature or token.
func RedactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		// Unparsable: nothing after a query or fragment mark, and short.
		if i := strings.IndexAny(rawURL, "?#"); i >= 0 {
			rawURL = rawURL[:i]
		}
		if utf8.RuneCountInString(rawURL) > 60 {
			return string([]rune(rawURL)[:60]) + "..."
		}
		return rawURL
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery, u.ForceQuery = "REDACTED", false
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// RedactError is err's text with rawURL in it redacted: net/http's and
// net/url's errors quote the whole URL, query string included.
func RedactError(err error, rawURL string) string {
	if err == nil {
		return ""
	}
	return strings.ReplaceAll(err.Error(), rawURL, RedactURL(rawURL))
}

// include is UserDataProcessor._do_include: one URL per line, "#include"
// and "#include-once" prefixes allowed (and switching include-once on or
// off for the lines after), other comments and blank lines skipped. Each
// URL's content is processed like user-data of its own.
func (p *processor) include(part *mimePart, payload []byte, depth int) {
	once := false
	for _, line := range pySplitLines(payload) {
		if hasPrefixFold(line, "#include-once") {
			line = pyLStrip(line[len("#include-once"):])
			once = true
		} else if hasPrefixFold(line, "#include") {
			line = pyLStrip(line[len("#include"):])
			once = false
		}
		if len(line) > 0 && line[0] == '#' {
			continue
		}
		rawURL := pyStrip(string(line))
		if rawURL == "" {
			continue
		}
		p.includeURL(part, rawURL, once, depth)
	}
}

func (p *processor) includeURL(part *mimePart, rawURL string, once bool, depth int) {
	source := p.describe(part, 0)
	shown := RedactURL(rawURL)
	if p.opts.NoIncludes != "" {
		p.processed.Refused = append(p.processed.Refused, fmt.Sprintf("%s: include %s: not applied: %s", source, shown, p.opts.NoIncludes))
		return
	}
	if depth >= maxIncludeDepth {
		p.failf("%s: include %s: more than %d levels of #include; skipped", source, shown, maxIncludeDepth)
		return
	}
	var content []byte
	cached := false
	if once && p.opts.IncludeOnce != nil {
		content, cached = p.opts.IncludeOnce.Get(rawURL)
	}
	if !cached {
		if p.fetches >= maxFetches {
			p.failf("%s: include %s: more than %d URLs to fetch; skipped", source, shown, maxFetches)
			return
		}
		p.fetches++
		body, err := p.fetch(rawURL)
		if err != nil {
			p.failf("%s: include %s: %v; skipped", source, shown, err)
			return
		}
		content = body
		if once && p.opts.IncludeOnce != nil {
			if err := p.opts.IncludeOnce.Put(rawURL, body); err != nil {
				p.warnf("%s: include-once %s: %v", source, shown, err)
			}
		}
	}
	if err := p.charge(len(content)); err != nil {
		p.warnf("%s: include %s: %v; skipped", source, shown, err)
		return
	}
	directive := "#include "
	if once {
		directive = "#include-once "
	}
	msg, err := p.toMessage(content, directive+shown)
	if err != nil {
		p.warnf("%s: include %s: %v; skipped", source, shown, err)
		return
	}
	p.process(msg, depth+1)
}

// fetch gets one URL within what is left of the include budget: one
// budget for all of a user-data's includes, so that URLs that accept and
// never answer cannot hold the boot for FetchTimeout each.
func (p *processor) fetch(rawURL string) ([]byte, error) {
	if err := p.ctx.Err(); err != nil {
		return nil, err
	}
	budget := p.opts.IncludeBudget
	if budget <= 0 {
		budget = DefaultIncludeBudget
	}
	if p.includeDeadline.IsZero() {
		p.includeDeadline = time.Now().Add(budget)
	}
	left := time.Until(p.includeDeadline)
	if left <= 0 {
		return nil, fmt.Errorf("the %v for all of %s's includes is used up", budget, p.name)
	}
	ctx, cancel := context.WithDeadline(p.ctx, p.includeDeadline)
	defer cancel()
	if p.opts.Fetch == nil {
		if p.remaining <= 0 {
			return nil, fmt.Errorf("the %d-byte cap on %s is reached", p.limit, p.name)
		}
		body, err := Web(ctx, WebRequest{URL: rawURL, MaxSize: p.remaining, Timeout: min(FetchTimeout, left)})
		return body, p.budgetError(err, budget)
	}
	body, err := p.opts.Fetch(ctx, rawURL)
	err = p.budgetError(err, budget)
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > p.remaining {
		return nil, fmt.Errorf("%d bytes exceed the %d-byte cap on %s", len(body), p.limit, p.name)
	}
	return body, nil
}

// budgetError says that a fetch stopped because the include budget ran
// out, rather than the deadline's bare "context deadline exceeded".
func (p *processor) budgetError(err error, budget time.Duration) error {
	if err == nil || p.ctx.Err() != nil || time.Now().Before(p.includeDeadline) {
		return err
	}
	return fmt.Errorf("stopped at the end of the %v for all of %s's includes: %w", budget, p.name, err)
}

// pySplitLines is Python's str.splitlines(): lines end at \n, \r, \r\n,
// \v, \f, \x1c, \x1d, \x1e, U+0085, U+2028 and U+2029.
func pySplitLines(b []byte) [][]byte {
	var lines [][]byte
	start := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		case '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				size = 2
			}
		default:
			i += size
			continue
		}
		lines = append(lines, b[start:i])
		i += size
		start = i
	}
	if start < len(b) {
		lines = append(lines, b[start:])
	}
	return lines
}
