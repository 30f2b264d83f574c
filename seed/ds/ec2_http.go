package ds

// Helpers shared by the metadata-service clouds (EC2 and its copies, GCE,
// DigitalOcean, Hetzner, Oracle, Vultr, Scaleway, Exoscale, CloudStack,
// Azure): a Fetcher with the service's fixed headers, and readers for the
// datasource: settings.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
)

// isStatus reports whether err is a final HTTP answer with one of codes.
func isStatus(err error, codes ...int) bool {
	var se *StatusError
	if !errors.As(err, &se) {
		return false
	}
	for _, c := range codes {
		if se.Code == c {
			return true
		}
	}
	return false
}

// metadataClient does the requests of one datasource fetch through the
// package's Fetcher, with the datasource's own timeout and retries and
// the headers its service demands on every request.
type metadataClient struct {
	fetcher *Fetcher
	log     *slog.Logger
	// header is sent on every request (Metadata-Flavor, Authorization...).
	header http.Header
}

func newMetadataClient(env *Env, name string) *metadataClient {
	return &metadataClient{
		fetcher: env.HTTP().WithOptions(env.Config.FetchOptionsFor(name)),
		log:     env.Logger(),
		header:  http.Header{},
	}
}

// get fetches url with the client's headers plus extra.
func (c *metadataClient) get(ctx context.Context, url string, extra http.Header) ([]byte, error) {
	return c.do(ctx, http.MethodGet, url, extra, nil)
}

// do sends one request (with the Fetcher's retries) and returns the body.
func (c *metadataClient) do(ctx context.Context, method, url string, extra http.Header, body []byte) ([]byte, error) {
	hdr := c.header.Clone()
	for k, vs := range extra {
		hdr[k] = vs
	}
	resp, err := c.fetcher.Do(ctx, Request{Method: method, URL: url, Header: hdr, Body: body})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// joinURL appends path to base with exactly one slash between them.
func joinURL(base, path string) string {
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}

// endpointPath makes fetch --url accept the server's root: the cloud's
// path (suffix) is appended unless the URL already holds marker.
func endpointPath(env *Env, marker, suffix string) string {
	if strings.Contains(env.Endpoint, marker) {
		return env.Endpoint
	}
	return joinURL(env.Endpoint, suffix)
}

// settingFloat reads a number (or a numeric string) from a settings map.
func settingFloat(settings map[string]any, key string) (float64, bool) {
	switch v := settings[key].(type) {
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case float64:
		return v, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f, err == nil
	}
	return 0, false
}

// settingString reads a string from a settings map, "" when absent.
func settingString(settings map[string]any, key string) string {
	s, _ := settings[key].(string)
	return strings.TrimSpace(s)
}

// settingStrings reads a string or a list of strings.
func settingStrings(settings map[string]any, key string) []string {
	switch v := settings[key].(type) {
	case string:
		if s := strings.TrimSpace(v); s != "" {
			return []string{s}
		}
	case []string:
		return v
	case []any:
		var out []string
		for _, item := range v {
			if s, ok := item.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, strings.TrimSpace(s))
			}
		}
		return out
	}
	return nil
}

// settingBool reads a boolean with cloud-init's spellings.
func settingBool(settings map[string]any, key string, def bool) bool {
	switch v := settings[key].(type) {
	case bool:
		return v
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "yes", "on", "1", "y":
			return true
		case "false", "no", "off", "0", "n":
			return false
		}
	case int:
		return v != 0
	}
	return def
}

// baseURLs picks the endpoint list: fetch --url first, then the
// datasource's configured key (a string or a list), then the defaults.
func baseURLs(env *Env, settings map[string]any, key string, defaults ...string) []string {
	if env != nil && env.Endpoint != "" {
		return []string{strings.TrimRight(env.Endpoint, "/")}
	}
	if urls := settingStrings(settings, key); len(urls) > 0 {
		return urls
	}
	return defaults
}

// getJSONObject fetches url and decodes a JSON object, numbers kept exact
// (droplet and instance ids are large integers).
func (c *metadataClient) getJSONObject(ctx context.Context, url string, extra http.Header) (map[string]any, error) {
	body, err := c.get(ctx, url, extra)
	if err != nil {
		return nil, err
	}
	obj, err := decodeJSONObject(body)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", Redact(url), err)
	}
	return obj, nil
}

// decodeJSONObject decodes one JSON object and nothing after it.
func decodeJSONObject(body []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, errors.New("not a JSON object")
	}
	if dec.More() {
		return nil, errors.New("data after the JSON object")
	}
	return obj, nil
}

// decodeJSONList decodes one JSON array.
func decodeJSONList(body []byte) ([]any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var list []any
	if err := dec.Decode(&list); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the JSON array")
	}
	return list, nil
}

// rawNetwork encodes a cloud's own network description for netup, nil
// when there is none.
func rawNetwork(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode network metadata: %w", err)
	}
	return raw, nil
}

// userDataBytes turns a JSON user-data value into bytes: a string as it
// is, null or "" as none.
func userDataBytes(v any) []byte {
	if s, ok := v.(string); ok && s != "" {
		return []byte(s)
	}
	return nil
}

// listOfStrings collects the strings of a JSON list (or one string).
func listOfStrings(v any) []string {
	switch x := v.(type) {
	case string:
		if x != "" {
			return []string{x}
		}
	case []any:
		var out []string
		for _, item := range x {
			if s, ok := item.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// cmdlineHasWord reports whether word is a whole field of the kernel
// command line (ds-identify's test for "vultr" and "scaleway").
func cmdlineHasWord(cmdline, word string) bool {
	for _, f := range strings.Fields(cmdline) {
		if f == word {
			return true
		}
	}
	return false
}
