package seed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// WebRequest is one request to a URL a user's config names: an #include,
// a write_files source, phone_home. Metadata services go through
// seed/ds's Fetcher instead, which never uses a proxy.
type WebRequest struct {
	Method string // "" is GET
	URL    string
	Header map[string]string
	Body   []byte
	// Timeout bounds the whole request; 0 is FetchTimeout.
	Timeout time.Duration
	// MaxSize caps the body read; 0 is DefaultMaxSize.
	MaxSize int64
}

// WebStatusError is a final answer outside 2xx.
type WebStatusError struct {
	Method string
	Code   int
	Status string
	// Snippet is the start of the answer's body, for messages.
	Snippet string
}

func (e *WebStatusError) Error() string {
	return fmt.Sprintf("%s: HTTP status %s", e.Method, e.Status)
}

// ErrTooLarge is returned (wrapped) for a body over the request's MaxSize.
var ErrTooLarge = errors.New("answer too large")

// webClient follows at most FetchMaxRedirects redirects, to http or https
// only, and takes the proxy from the environment (HTTP_PROXY, NO_PROXY),
// as cloud-init's requests-based url_helper does. The caller's headers do
// not follow a redirect to another origin.
var webClient = &http.Client{
	CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > FetchMaxRedirects {
			return fmt.Errorf("stopped after %d redirects", FetchMaxRedirects)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("refusing a redirect to scheme %q", req.URL.Scheme)
		}
		DropHeadersOffOrigin(req, via)
		return nil
	},
}

// headersAcrossOrigins are the headers a redirect to another origin
// keeps: seedinit's User-Agent, and those that describe a body net/http
// sends again (a 307 or 308; it drops them itself when it does not). No
// secret lives in them.
var headersAcrossOrigins = map[string]bool{
	"User-Agent":       true,
	"Content-Type":     true,
	"Content-Encoding": true,
	"Content-Language": true,
}

// DropHeadersOffOrigin is for an http.Client's CheckRedirect: once a
// redirect chain has left the first request's scheme, host and port, the
// redirected request carries none of the headers the caller set. net/http
// copies them all onto every redirect and drops only Authorization,
// Cookie and WWW-Authenticate, and only when the domain changes, so an
// IMDSv2 token, Azure's "Metadata: true", GCE's Metadata-Flavor or a
// user's header would reach whatever host a redirect names. The Referer
// that net/http adds goes too: it is the previous URL, whose query may
// hold a signed token. A redirect within the origin (a metadata service
// redirecting within itself) keeps everything.
func DropHeadersOffOrigin(req *http.Request, via []*http.Request) {
	if len(via) == 0 {
		return
	}
	origin := via[0].URL
	left := !sameOrigin(origin, req.URL)
	for _, r := range via[1:] {
		left = left || !sameOrigin(origin, r.URL)
	}
	if !left {
		return
	}
	for k := range req.Header {
		if !headersAcrossOrigins[http.CanonicalHeaderKey(k)] {
			delete(req.Header, k)
		}
	}
}

// sameOrigin compares scheme, host and port, a missing port being the
// scheme's own.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && urlPort(a) == urlPort(b)
}

func urlPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// Web sends r once and returns the body of a 2xx answer. Errors never
// repeat the URL (it may carry a token): callers name it with RedactURL.
func Web(ctx context.Context, r WebRequest) ([]byte, error) {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, errors.New("not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("unsupported URL scheme %q: only http and https are fetched", u.Scheme)
	}
	timeout, limit := r.Timeout, r.MaxSize
	if timeout <= 0 {
		timeout = FetchTimeout
	}
	if limit <= 0 {
		limit = DefaultMaxSize
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, body)
	if err != nil {
		return nil, fmt.Errorf("make request: %w", err)
	}
	req.Header.Set("User-Agent", "seedinit")
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	resp, err := webClient.Do(req)
	if err != nil {
		// url.Error repeats the URL, which may carry a token.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, &WebStatusError{Method: method, Code: resp.StatusCode, Status: resp.Status, Snippet: strings.TrimSpace(string(snippet))}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read body: more than %d bytes: %w", limit, ErrTooLarge)
	}
	return data, nil
}
