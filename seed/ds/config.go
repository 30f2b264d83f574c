package ds

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// Config is what the target's cloud.cfg says about datasources, plus
// seedinit's own bounds.
type Config struct {
	// DatasourceList is datasource_list; nil when not configured.
	DatasourceList []string
	// Datasource is the datasource: mapping, NAME to its settings.
	Datasource map[string]map[string]any
	// Budget bounds the whole search (DefaultBudget when zero).
	Budget time.Duration
	// Fetch bounds each HTTP request.
	Fetch FetchOptions
}

// DefaultBudget bounds a search in which nothing answers.
const DefaultBudget = 2 * time.Second

// Settings returns datasource: {name: {...}}, matching name without case;
// nil when absent.
func (c Config) Settings(name string) map[string]any {
	for k, v := range c.Datasource {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// FetchOptionsFor overlays a datasource's own timeout, retries and
// max_wait (cloud-init's per-datasource keys, seconds) on Fetch.
func (c Config) FetchOptionsFor(name string) FetchOptions {
	o := c.Fetch
	s := c.Settings(name)
	if d, ok := seconds(s["timeout"]); ok && d > 0 {
		o.Timeout = d
	}
	if n, ok := s["retries"]; ok {
		if r, err := strconv.Atoi(fmt.Sprint(n)); err == nil {
			if r <= 0 {
				o.Retries = NoRetries
			} else {
				o.Retries = r
			}
		}
	}
	return o
}

// MaxWait is a datasource's max_wait setting, 0 when unset or negative.
func (c Config) MaxWait(name string) time.Duration {
	d, _ := seconds(c.Settings(name)["max_wait"])
	if d < 0 {
		return 0
	}
	return d
}

// seconds reads a number of seconds (int, float or numeric string).
func seconds(v any) (time.Duration, bool) {
	switch n := v.(type) {
	case int:
		return time.Duration(n) * time.Second, true
	case int64:
		return time.Duration(n) * time.Second, true
	case float64:
		return time.Duration(n * float64(time.Second)), true
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(n), 64); err == nil {
			return time.Duration(f * float64(time.Second)), true
		}
		if d, err := time.ParseDuration(strings.TrimSpace(n)); err == nil {
			return d, true
		}
	}
	return 0, false
}

// Config files, read in cloud-init's order: cloud.cfg, then
// cloud.cfg.d/*.cfg sorted by name, later ones overriding.
const (
	cloudCfg  = "/etc/cloud/cloud.cfg"
	cloudCfgD = "/etc/cloud/cloud.cfg.d"
)

// LoadConfig reads datasource_list, datasource: and seedinit's
// seedinit_datasource: {budget, timeout, retries, backoff, max_bytes,
// max_redirects} from the target's cloud.cfg and cloud.cfg.d/*.cfg. A
// file that does not parse is reported and the others still count. root
// may be nil (no target: defaults).
func LoadConfig(root *rootfs.Root) (Config, error) {
	merged := map[string]any{}
	if root == nil {
		return parseConfig(merged)
	}
	var errs []error
	files := []string{cloudCfg}
	if entries, err := root.ReadDir(cloudCfgD); err == nil {
		var names []string
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".cfg") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			files = append(files, path.Join(cloudCfgD, n))
		}
	}
	for _, f := range files {
		data, err := root.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read datasource config %s: %w", f, err))
			continue
		}
		v, err := yaml11.Load(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("parse datasource config %s: %w", f, err))
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				errs = append(errs, fmt.Errorf("parse datasource config %s: want a mapping, got %T", f, v))
			}
			continue
		}
		mergeInto(merged, m)
	}
	c, err := parseConfig(merged)
	if err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// mergeInto merges src over dst: mappings recursively, anything else
// replaced, the way cloud-init's mergemanydict treats config files.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
			cp := map[string]any{}
			mergeInto(cp, sm)
			dst[k] = cp
			continue
		}
		dst[k] = v
	}
}

// ParseConfig builds a Config from an already merged cloud config.
func ParseConfig(cfg map[string]any) (Config, error) { return parseConfig(cfg) }

func parseConfig(cfg map[string]any) (Config, error) {
	var c Config
	var errs []error
	switch l := cfg["datasource_list"].(type) {
	case nil:
	case []any:
		c.DatasourceList = []string{}
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				errs = append(errs, fmt.Errorf("read datasource_list item %d: want a name, got %T", i, e))
				continue
			}
			c.DatasourceList = append(c.DatasourceList, strings.TrimSpace(s))
		}
	case string:
		// ds-identify accepts "datasource_list: [ A, B ]" written as text
		// too; a bare comma-separated string is what people write.
		c.DatasourceList = splitList(l)
	default:
		errs = append(errs, fmt.Errorf("read datasource_list: want a list, got %T", l))
	}
	if m, ok := cfg["datasource"].(map[string]any); ok {
		c.Datasource = map[string]map[string]any{}
		for k, v := range m {
			if vm, ok := v.(map[string]any); ok {
				c.Datasource[k] = vm
			} else if v != nil {
				errs = append(errs, fmt.Errorf("read datasource.%s: want a mapping, got %T", k, v))
			}
		}
	} else if cfg["datasource"] != nil {
		errs = append(errs, fmt.Errorf("read datasource: want a mapping, got %T", cfg["datasource"]))
	}
	if own, ok := cfg["seedinit_datasource"].(map[string]any); ok {
		durations := map[string]*time.Duration{"budget": &c.Budget, "timeout": &c.Fetch.Timeout, "backoff": &c.Fetch.Backoff}
		for k, dst := range durations {
			if v, ok := own[k]; ok {
				d, ok := seconds(v)
				if !ok || d < 0 {
					errs = append(errs, fmt.Errorf("read seedinit_datasource.%s: want seconds, got %v", k, v))
					continue
				}
				*dst = d
			}
		}
		ints := map[string]func(int){
			"retries": func(n int) {
				if n == 0 {
					n = NoRetries
				}
				c.Fetch.Retries = n
			},
			"max_bytes":     func(n int) { c.Fetch.MaxBytes = int64(n) },
			"max_redirects": func(n int) { c.Fetch.MaxRedirects = n },
		}
		for k, set := range ints {
			if v, ok := own[k]; ok {
				n, err := strconv.Atoi(fmt.Sprint(v))
				if err != nil || n < 0 {
					errs = append(errs, fmt.Errorf("read seedinit_datasource.%s: want a number, got %v", k, v))
					continue
				}
				set(n)
			}
		}
	}
	return c, errors.Join(errs...)
}

func splitList(s string) []string {
	s = strings.Trim(strings.TrimSpace(s), "[]")
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if f = strings.Trim(f, `"'`); f != "" {
			out = append(out, f)
		}
	}
	return out
}
