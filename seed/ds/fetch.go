package ds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/seedinit/seedinit/seed"
)

// FetchOptions bound every HTTP request a datasource makes.
type FetchOptions struct {
	// Timeout bounds one attempt, connect to last byte.
	Timeout time.Duration
	// Retries is how many more attempts follow a failed one (network
	// errors, 5xx, 429); 404 and other 4xx are final.
	Retries int
	// Backoff is the wait before the first retry; it doubles each time.
	Backoff time.Duration
	// MaxBytes caps a response body; a larger one is an error.
	MaxBytes int64
	// MaxRedirects caps the redirects followed per attempt.
	MaxRedirects int
}

// Defaults for FetchOptions' zero fields.
const (
	DefaultTimeout      = time.Second
	DefaultRetries      = 2
	DefaultBackoff      = 100 * time.Millisecond
	DefaultMaxBytes     = 16 << 20
	DefaultMaxRedirects = 3
)

func (o FetchOptions) withDefaults() FetchOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Retries < 0 {
		o.Retries = 0
	} else if o.Retries == 0 {
		o.Retries = DefaultRetries
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	return o
}

// NoRetries is the Retries value that means "one attempt only" (0 means
// the default).
const NoRetries = -1

// Fetcher does datasources' HTTP requests with a per-attempt timeout,
// retries with backoff, a body size cap and a redirect limit; the caller's
// context is the overall budget. It logs URLs without their query strings
// and never logs headers or bodies, where tokens live, and the caller's
// headers never follow a redirect to another scheme, host or port.
type Fetcher struct {
	Options FetchOptions
	// Client is the HTTP client; NewFetcher makes one that does not use
	// proxies from the environment (metadata services are link-local).
	Client *http.Client
	Log    *slog.Logger
	// onAnswer is called on every HTTP response, whatever its status:
	// Detect's sign that a metadata service is there.
	onAnswer func()
}

// withAnswerHook returns a copy that calls hook on every response.
func (f *Fetcher) withAnswerHook(hook func()) *Fetcher {
	c := *f
	c.onAnswer = hook
	return &c
}

// NewFetcher returns a Fetcher with opts (zero fields take the defaults).
func NewFetcher(opts FetchOptions, log *slog.Logger) *Fetcher {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 0, // the per-attempt context bounds it
	}
	return &Fetcher{Options: opts, Client: &http.Client{Transport: tr}, Log: log}
}

// WithOptions returns a copy, sharing the client, whose options are
// opts' non-zero fields over the Fetcher's own.
func (f *Fetcher) WithOptions(opts FetchOptions) *Fetcher {
	c := *f
	if opts.Timeout != 0 {
		c.Options.Timeout = opts.Timeout
	}
	if opts.Retries != 0 {
		c.Options.Retries = opts.Retries
	}
	if opts.Backoff != 0 {
		c.Options.Backoff = opts.Backoff
	}
	if opts.MaxBytes != 0 {
		c.Options.MaxBytes = opts.MaxBytes
	}
	if opts.MaxRedirects != 0 {
		c.Options.MaxRedirects = opts.MaxRedirects
	}
	return &c
}

// Request is one HTTP request.
type Request struct {
	Method string // "" is GET
	URL    string
	Header http.Header
	Body   []byte
}

// Response is a complete, size-checked response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// URL is where the body came from after redirects.
	URL string
}

// StatusError is a final non-2xx answer. URL is redacted.
type StatusError struct {
	Method string
	URL    string
	Code   int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d %s", e.Method, e.URL, e.Code, http.StatusText(e.Code))
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == http.StatusNotFound
}

// ErrTooLarge is a body over MaxBytes.
var ErrTooLarge = errors.New("response body over the size limit")

// Redact hides the query, fragment and user info of a URL, for logs and
// errors: IMDS tokens and signed URLs live there.
func Redact(raw string) string { return seed.RedactURL(raw) }

// Get fetches a URL with extra headers (nil for none).
func (f *Fetcher) Get(ctx context.Context, rawURL string, header http.Header) (*Response, error) {
	return f.Do(ctx, Request{URL: rawURL, Header: header})
}

// Do sends req, retrying network errors, 5xx and 429 with backoff while
// ctx allows. It returns a *StatusError for a final non-2xx answer.
func (f *Fetcher) Do(ctx context.Context, req Request) (*Response, error) {
	opts := f.Options.withDefaults()
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	shown := Redact(req.URL)
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, shown, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%s %s: only http and https are fetched", method, shown)
	}
	backoff := opts.Backoff
	var lastErr error
	for attempt := 0; attempt <= opts.Retries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("%w (gave up: %v)", lastErr, ctx.Err())
			case <-t.C:
			}
			backoff *= 2
		}
		resp, err := f.once(ctx, method, u, req, opts)
		if err == nil {
			return resp, nil
		}
		lastErr = fmt.Errorf("%s %s: %w", method, shown, err)
		var se *StatusError
		if errors.As(err, &se) {
			se.Method, se.URL = method, shown
			lastErr = se
			if se.Code < 500 && se.Code != http.StatusTooManyRequests {
				return nil, se
			}
		}
		if errors.Is(err, ErrTooLarge) || ctx.Err() != nil {
			return nil, lastErr
		}
		f.Log.Debug("metadata request failed", "url", shown, "attempt", attempt+1, "error", seed.RedactError(err, req.URL))
	}
	return nil, lastErr
}

func (f *Fetcher) once(ctx context.Context, method string, u *url.URL, req Request, opts FetchOptions) (*Response, error) {
	actx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(actx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	if hr.Header.Get("User-Agent") == "" {
		hr.Header.Set("User-Agent", "seedinit")
	}
	client := *f.Client
	client.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if len(via) > opts.MaxRedirects {
			return fmt.Errorf("stopped after %d redirects", opts.MaxRedirects)
		}
		if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
			return fmt.Errorf("redirect to %s: only http and https are followed", r.URL.Scheme)
		}
		// Tokens and metadata headers are for the metadata service, not
		// for whatever host it (or a proxy in front of it) redirects to.
		seed.DropHeadersOffOrigin(r, via)
		return nil
	}
	resp, err := client.Do(hr)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	defer resp.Body.Close()
	if f.onAnswer != nil {
		f.onAnswer()
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, &StatusError{Code: resp.StatusCode}
	}
	if resp.ContentLength > opts.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes announced, limit %d", ErrTooLarge, resp.ContentLength, opts.MaxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, opts.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", unwrapURLError(err))
	}
	if int64(len(data)) > opts.MaxBytes {
		return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, opts.MaxBytes)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data, URL: Redact(resp.Request.URL.String())}, nil
}

// unwrapURLError drops *url.Error's "Get \"URL\":" prefix, which would
// print the query string.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
