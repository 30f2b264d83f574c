package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// This file is `cloud-init status [--long] [--format json|yaml|tabular]
// [--wait]` of cloud-init 22.4.2 (cloudinit/cmd/status.py), read from a
// target root's status.json and result.json.

// App statuses, as cloud-init names them.
const (
	StatusNotRun   = "not run"
	StatusRunning  = "running"
	StatusDone     = "done"
	StatusError    = "error"
	StatusDisabled = "disabled"
)

// runStatusDir is cloud-init's run_dir, where status tools look first.
const runStatusDir = "/run/cloud-init"

// FinalStageWaitFile is where the waiting final stage keeps what it
// still waits for.
const FinalStageWaitFile = "/run/seedinit/final-stage-waiting"

// disabledMarker turns cloud-init (and seedinit) off for the image.
const disabledMarker = "/etc/cloud/cloud-init.disabled"

// StatusDetails is what `cloud-init status` reports.
type StatusDetails struct {
	Status         string
	BootStatusCode string
	Description    string
	Errors         []string
	LastUpdate     string // "Mon, 02 Jan 2006 15:04:05 +0000", "" before any stage ran
	// Datasource is nil when status.json has a null datasource, as in
	// cloud-init.
	Datasource *string
}

// ReadStatusDetails derives the status the way cloud-init's
// get_status_details does: running while status.json exists without
// result.json or while a stage has started and not finished, error when
// any stage recorded errors, done once some stage has run.
//
// It reads /run/cloud-init/status.json and result.json; when the run
// directory has no status.json (an image inspected offline, where /run is
// gone), it reads the copies under /var/lib/cloud/data instead, which
// cloud-init does not do.
//
// The boot status code cannot come from systemd's generator, which
// seedinit does not use: it is disabled-by-marker-file when
// /etc/cloud/cloud-init.disabled exists in the target, and otherwise
// enabled-by-sysvinit, the code cloud-init gives on any system that is
// not run by systemd.
func ReadStatusDetails(root *rootfs.Root) StatusDetails {
	empty := ""
	d := StatusDetails{
		Status:         StatusNotRun,
		BootStatusCode: "enabled-by-sysvinit",
		Description:    "Cloud-init enabled on sysvinit",
		Errors:         []string{},
		Datasource:     &empty,
	}
	if root.Exists(disabledMarker) {
		d.Status = StatusDisabled
		d.BootStatusCode = "disabled-by-marker-file"
		d.Description = "Cloud-init disabled by " + disabledMarker
	}
	statusFile, resultFile := path.Join(runStatusDir, "status.json"), path.Join(runStatusDir, "result.json")
	if !root.Exists(statusFile) {
		statusFile, resultFile = StatusPath, ResultPath
	}
	var v1 map[string]any
	if raw, err := root.ReadFile(statusFile); err == nil {
		if !root.Exists(resultFile) {
			d.Status = StatusRunning
		}
		var doc map[string]any
		if json.Unmarshal(raw, &doc) == nil {
			v1, _ = doc["v1"].(map[string]any)
		}
	}
	keys := make([]string, 0, len(v1))
	for k := range v1 {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	latest := 0.0
	for _, k := range keys {
		value := v1[k]
		switch k {
		case "stage":
			if s, ok := value.(string); ok && s != "" {
				d.Status = StatusRunning
				d.Description = "Running in stage: " + s
			}
			continue
		case "datasource":
			s, ok := value.(string)
			if !ok {
				// A null datasource keeps the description so far.
				d.Datasource = nil
				continue
			}
			d.Description = s
			ds, _, _ := strings.Cut(s, " ")
			ds = strings.ReplaceAll(strings.ToLower(ds), "datasource", "")
			d.Datasource = &ds
			continue
		}
		stage, ok := value.(map[string]any)
		if !ok {
			continue
		}
		if errs, ok := stage["errors"].([]any); ok {
			for _, e := range errs {
				d.Errors = append(d.Errors, fmt.Sprint(e))
			}
		}
		start, _ := stage["start"].(float64)
		finished, _ := stage["finished"].(float64)
		if finished == 0 && start != 0 {
			d.Status = StatusRunning
		}
		if w, _ := stage["waiting"].(string); w != "" && start == 0 {
			// seedinit's final stage, started by PID 1, waits for the
			// real init; the process says what it still misses.
			d.Status = StatusRunning
			d.Description = "Stage " + k + " waits for " + w
			if now, err := root.ReadFile(FinalStageWaitFile); err == nil && len(strings.TrimSpace(string(now))) > 0 {
				d.Description += " (now: " + strings.TrimSpace(string(now)) + ")"
			}
		}
		if t := math.Max(start, finished); t > latest {
			latest = t
		}
	}
	if len(d.Errors) > 0 {
		d.Status = StatusError
		d.Description = strings.Join(d.Errors, "\n")
	} else if d.Status == StatusNotRun && latest > 0 {
		d.Status = StatusDone
	}
	if latest > 0 {
		d.LastUpdate = time.Unix(int64(latest), 0).UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700")
	}
	return d
}

// FormatStatus is `cloud-init status` with --long and --format
// (json, yaml or tabular), and the exit code: 1 when the status is
// error, 0 otherwise, 2 for an unknown format. After --wait, tabular
// output starts with a newline (cloud-init ends its line of dots first):
// the caller prints it.
func FormatStatus(root *rootfs.Root, long bool, format string) (string, int) {
	d := ReadStatusDetails(root)
	code := 0
	if d.Status == StatusError {
		code = 1
	}
	switch format {
	case "tabular", "":
		var b strings.Builder
		b.WriteString("status: " + d.Status + "\n")
		if long {
			b.WriteString("boot_status_code: " + d.BootStatusCode + "\n")
			if d.LastUpdate != "" {
				b.WriteString("last_update: " + d.LastUpdate + "\n")
			}
			b.WriteString("detail:\n" + d.Description + "\n")
		}
		return b.String(), code
	case "json":
		return pyJSON(d.dict()) + "\n", code
	case "yaml":
		return pyYAMLDocument(d.dict()) + "\n", code
	}
	return fmt.Sprintf("unknown status format %q: want json, yaml or tabular\n", format), 2
}

// dict is the details as cloud-init's handle_status_args lays them out;
// --long does not change the json and yaml output.
func (d StatusDetails) dict() map[string]any {
	var ds any
	if d.Datasource != nil {
		ds = *d.Datasource
	}
	errs := make([]any, len(d.Errors))
	for i, e := range d.Errors {
		errs[i] = e
	}
	inner := map[string]any{
		"datasource":       ds,
		"boot_status_code": d.BootStatusCode,
		"status":           d.Status,
		"detail":           d.Description,
		"errors":           errs,
		"last_update":      d.LastUpdate,
	}
	outer := map[string]any{"schemas": map[string]any{"1": inner}, "_schema_version": "1"}
	for k, v := range inner {
		outer[k] = v
	}
	return outer
}

// WaitStatus blocks while the status is "not run" or "running", checking
// every quarter second as cloud-init does; tick (may be nil) is called on
// every check, for the dots tabular output prints. It returns the final
// details, or ctx's error when it ends first.
func WaitStatus(ctx context.Context, root *rootfs.Root, tick func()) (StatusDetails, error) {
	for {
		d := ReadStatusDetails(root)
		if d.Status != StatusNotRun && d.Status != StatusRunning {
			return d, nil
		}
		if tick != nil {
			tick()
		}
		select {
		case <-ctx.Done():
			return d, fmt.Errorf("wait for status: %w", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// pyJSON is json.dumps(v, indent=2, sort_keys=True, separators=(",", ": "))
// with Python's default ensure_ascii.
func pyJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "{}"
	}
	out := strings.TrimSuffix(buf.String(), "\n")
	// Python writes empty containers as [] and {} on one line, as Go does;
	// it escapes every character beyond ASCII.
	var b strings.Builder
	for _, r := range out {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// pyYAMLDocument is cloud-init's safeyaml.dumps for the status dict:
// block style, four-space indents, sorted keys, "---" and "...".
func pyYAMLDocument(v map[string]any) string {
	var b strings.Builder
	b.WriteString("---\n")
	writeYAMLMap(&b, v, 0)
	b.WriteString("...\n")
	return b.String()
}

func writeYAMLMap(b *strings.Builder, m map[string]any, indent int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pad := strings.Repeat(" ", indent)
	for _, k := range keys {
		key := yamlScalar(k, indent+4, indent)
		b.WriteString(pad + key + ":")
		switch t := m[k].(type) {
		case map[string]any:
			if len(t) == 0 {
				b.WriteString(" {}\n")
				continue
			}
			b.WriteString("\n")
			writeYAMLMap(b, t, indent+4)
		case []any:
			if len(t) == 0 {
				b.WriteString(" []\n")
				continue
			}
			b.WriteString("\n")
			for _, e := range t {
				// PyYAML does not indent a block sequence inside a mapping.
				b.WriteString(pad + "- " + yamlValue(e, indent+4, indent+2) + "\n")
			}
		default:
			b.WriteString(" " + yamlValue(t, indent+4, indent+len(key)+2) + "\n")
		}
	}
}

// yamlValue writes a scalar that starts at column; continuation lines are
// indented to indent.
func yamlValue(v any, indent, column int) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		return yamlScalar(t, indent, column)
	case bool:
		return strconv.FormatBool(t)
	}
	return yamlScalar(fmt.Sprint(v), indent, column)
}

// implicitRE matches text that YAML 1.1 would read as something other
// than a string, which PyYAML therefore quotes.
var implicitRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:~|null|Null|NULL|yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|y|Y|n|N|[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?|[-+]?0x[0-9a-fA-F_]+|[-+]?0b[01_]+|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.*|<<|=)$`)
})

// yamlBestWidth is PyYAML's default line width.
const yamlBestWidth = 80

// yamlScalar writes a string as PyYAML's emitter does with
// allow_unicode off: plain when it can, else single-quoted, else
// double-quoted with escapes; long lines are folded past column 80.
func yamlScalar(s string, indent, column int) string {
	e := &yamlEmitter{indent: indent, column: column}
	switch {
	case plainOK(s):
		e.plain([]rune(s))
	case singleQuotedOK(s):
		e.singleQuoted([]rune(s))
	default:
		e.doubleQuoted([]rune(s))
	}
	return e.b.String()
}

// singleQuotedOK is PyYAML's analysis: no characters that need escapes,
// and no space next to a line break.
func singleQuotedOK(s string) bool {
	for _, r := range s {
		if r != '\n' && (r < 0x20 || r > 0x7e) {
			return false
		}
	}
	return !strings.Contains(s, " \n") && !strings.Contains(s, "\n ")
}

// yamlEmitter tracks the column as PyYAML's Emitter does, for folding.
type yamlEmitter struct {
	b      strings.Builder
	indent int
	column int
}

func (e *yamlEmitter) write(s string) {
	e.b.WriteString(s)
	e.column += utf8.RuneCountInString(s)
}

func (e *yamlEmitter) lineBreak() {
	e.b.WriteByte('\n')
	e.column = 0
}

// writeIndent is PyYAML's write_indent inside a scalar: a new line when
// past the indent, then spaces up to it.
func (e *yamlEmitter) writeIndent() {
	if e.column > e.indent || e.column == e.indent {
		e.lineBreak()
	}
	if e.column < e.indent {
		e.write(strings.Repeat(" ", e.indent-e.column))
	}
}

func (e *yamlEmitter) plain(text []rune) {
	spaces := false
	start := 0
	for end := 0; end <= len(text); end++ {
		var ch rune = -1
		if end < len(text) {
			ch = text[end]
		}
		if spaces {
			if ch != ' ' {
				if start+1 == end && e.column > yamlBestWidth {
					e.writeIndent()
				} else {
					e.write(string(text[start:end]))
				}
				start = end
			}
		} else if ch == -1 || ch == ' ' {
			e.write(string(text[start:end]))
			start = end
		}
		if ch != -1 {
			spaces = ch == ' '
		}
	}
}

func (e *yamlEmitter) singleQuoted(text []rune) {
	e.write("'")
	spaces, breaks := false, false
	start := 0
	for end := 0; end <= len(text); end++ {
		var ch rune = -1
		if end < len(text) {
			ch = text[end]
		}
		switch {
		case spaces:
			if ch != ' ' {
				if start+1 == end && e.column > yamlBestWidth && start != 0 && end != len(text) {
					e.writeIndent()
				} else {
					e.write(string(text[start:end]))
				}
				start = end
			}
		case breaks:
			if ch != '\n' {
				if text[start] == '\n' {
					e.lineBreak()
				}
				for range text[start:end] {
					e.lineBreak()
				}
				e.writeIndent()
				start = end
			}
		default:
			if ch == -1 || ch == ' ' || ch == '\n' || ch == '\'' {
				if start < end {
					e.write(string(text[start:end]))
					start = end
				}
			}
		}
		if ch == '\'' {
			e.write("''")
			start = end + 1
		}
		if ch != -1 {
			spaces = ch == ' '
			breaks = ch == '\n'
		}
	}
	e.write("'")
}

var yamlEscapes = map[rune]string{
	0: "0", 0x07: "a", 0x08: "b", 0x09: "t", 0x0a: "n", 0x0b: "v", 0x0c: "f",
	0x0d: "r", 0x1b: "e", '"': "\"", '\\': "\\", 0x85: "N", 0xa0: "_",
	0x2028: "L", 0x2029: "P",
}

func (e *yamlEmitter) doubleQuoted(text []rune) {
	e.write("\"")
	start := 0
	for end := 0; end <= len(text); end++ {
		var ch rune = -1
		if end < len(text) {
			ch = text[end]
		}
		if ch == -1 || ch == '"' || ch == '\\' || ch < 0x20 || ch > 0x7e {
			if start < end {
				e.write(string(text[start:end]))
				start = end
			}
			if ch != -1 {
				var esc string
				if r, ok := yamlEscapes[ch]; ok {
					esc = "\\" + r
				} else if ch <= 0xff {
					esc = fmt.Sprintf("\\x%02X", ch)
				} else if ch <= 0xffff {
					esc = fmt.Sprintf("\\u%04X", ch)
				} else {
					esc = fmt.Sprintf("\\U%08X", ch)
				}
				e.write(esc)
				start = end + 1
			}
		}
		if 0 < end && end < len(text)-1 && (ch == ' ' || start >= end) && e.column+(end-start) > yamlBestWidth {
			data := "\\"
			if start < end {
				data = string(text[start:end]) + "\\"
			}
			if start < end {
				start = end
			}
			e.write(data)
			e.writeIndent()
			if text[start] == ' ' {
				e.write("\\")
			}
		}
	}
	e.write("\"")
}

func plainOK(s string) bool {
	if s == "" || implicitRE().MatchString(s) {
		return false
	}
	if strings.TrimSpace(s) != s {
		return false
	}
	if strings.ContainsAny(s[:1], ",[]{}#&*!|>'\"%@`") {
		return false
	}
	if strings.ContainsAny(s[:1], "-?:") && (len(s) == 1 || s[1] == ' ') {
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r >= 0x7f {
			return false
		}
	}
	return true
}
