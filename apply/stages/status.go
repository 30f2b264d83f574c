package stages

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/merge"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/pyfmt"
	"github.com/seedinit/seedinit/seed/trust"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// statusNames are cloud-init's names for the stages in status.json.
var statusNames = map[apply.Stage]string{
	apply.StageLocal:   "init-local",
	apply.StageNetwork: "init",
	apply.StageConfig:  "modules-config",
	apply.StageFinal:   "modules-final",
}

// StageStatus is one stage's entry in status.json.
type StageStatus struct {
	Start             *float64            `json:"start"`
	Finished          *float64            `json:"finished"`
	Errors            []string            `json:"errors"`
	RecoverableErrors map[string][]string `json:"recoverable_errors"`
	// Waiting says what a stage that has not started waits for (the
	// final stage, for the real init to set the system up); seedinit's
	// own key, which cloud-init's readers ignore.
	Waiting string `json:"waiting,omitempty"`
}

// StatusV1 is status.json's "v1" object in cloud-init's format.
type StatusV1 struct {
	Datasource *string                 `json:"datasource"`
	Stage      *string                 `json:"stage"`
	Stages     map[string]*StageStatus `json:"-"`
	// Trust is the seed's trust decision (seedinit's own key,
	// trustStatusKey; cloud-init's readers take an object without start,
	// finished and errors for a stage that never ran).
	Trust *trust.Decision `json:"-"`
}

// trustStatusKey holds the seed's trust decision in status.json's v1.
const trustStatusKey = "seedinit_trust"

// MarshalJSON flattens the stages beside datasource and stage, as
// cloud-init lays them out.
func (s StatusV1) MarshalJSON() ([]byte, error) {
	m := map[string]any{"datasource": s.Datasource, "stage": s.Stage}
	for k, v := range s.Stages {
		m[k] = v
	}
	if s.Trust != nil {
		m[trustStatusKey] = s.Trust
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the flat layout back.
func (s *StatusV1) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	s.Stages = map[string]*StageStatus{}
	for k, v := range raw {
		switch k {
		case "datasource":
			json.Unmarshal(v, &s.Datasource)
		case "stage":
			json.Unmarshal(v, &s.Stage)
		case trustStatusKey:
			var d trust.Decision
			if json.Unmarshal(v, &d) == nil {
				s.Trust = &d
			}
		default:
			var st StageStatus
			if json.Unmarshal(v, &st) == nil {
				s.Stages[k] = &st
			}
		}
	}
	return nil
}

// Status is status.json.
type Status struct {
	V1 StatusV1 `json:"v1"`
}

// StatusPath and ResultPath are where cloud-init keeps them.
var (
	StatusPath = apply.Path("data", "status.json")
	ResultPath = apply.Path("data", "result.json")
)

func emptyStatus() *Status {
	s := &Status{V1: StatusV1{Stages: map[string]*StageStatus{}}}
	for _, n := range statusNames {
		s.V1.Stages[n] = &StageStatus{Errors: []string{}, RecoverableErrors: map[string][]string{}}
	}
	return s
}

// ReadStatus reads the target's status.json; a missing one is an empty
// status.
func ReadStatus(root *rootfs.Root) (*Status, error) {
	b, err := root.ReadFile(StatusPath)
	if err != nil {
		return nil, err
	}
	s := emptyStatus()
	if err := json.Unmarshal(b, s); err != nil {
		return nil, err
	}
	for _, n := range statusNames {
		if s.V1.Stages[n] == nil {
			s.V1.Stages[n] = &StageStatus{Errors: []string{}, RecoverableErrors: map[string][]string{}}
		}
	}
	return s, nil
}

func loadStatus(root *rootfs.Root, fresh bool) *Status {
	if !fresh {
		if s, err := ReadStatus(root); err == nil {
			return s
		}
	}
	return emptyStatus()
}

func (s *Status) setDatasource(ds string) { s.V1.Datasource = &ds }

// NoteFinalStageWait records in status.json what the final stage, started
// in another process, waits for before it runs; its start clears it.
func NoteFinalStageWait(root *rootfs.Root, reason string) error {
	s, err := ReadStatus(root)
	if err != nil {
		return fmt.Errorf("note the final stage's wait: %w", err)
	}
	s.V1.Stages[statusNames[apply.StageFinal]].Waiting = reason
	return saveStatus(root, s)
}

// NoteHandoffRefused records in status.json that PID 1 did not hand off
// to the real init (seedinit.strict): the reason as an error of the last
// stage it ran, and the final stage waiting for a handoff that will not
// come. `seedinit status` and cloud-init's readers report the error.
func NoteHandoffRefused(root *rootfs.Root, reason string) error {
	s, err := ReadStatus(root)
	if errors.Is(err, fs.ErrNotExist) {
		s, err = emptyStatus(), nil
	}
	if err != nil {
		return fmt.Errorf("note the refused handoff: %w", err)
	}
	config := s.V1.Stages[statusNames[apply.StageConfig]]
	config.Errors = append(config.Errors, reason)
	s.V1.Stages[statusNames[apply.StageFinal]].Waiting = "never: the handoff to the real init was refused (seedinit.strict)"
	return saveStatus(root, s)
}

func (s *Status) start(stage apply.Stage, t time.Time) {
	name := statusNames[stage]
	ts := unixSeconds(t)
	s.V1.Stages[name] = &StageStatus{Start: &ts, Errors: []string{}, RecoverableErrors: map[string][]string{}}
	s.V1.Stage = &name
}

func (s *Status) finish(stage apply.Stage, t time.Time, errs, warnings []string) {
	st := s.V1.Stages[statusNames[stage]]
	ts := unixSeconds(t)
	st.Finished = &ts
	st.Errors = append([]string{}, errs...)
	if len(warnings) > 0 {
		st.RecoverableErrors["WARNING"] = append([]string{}, warnings...)
	}
	s.V1.Stage = nil
}

func unixSeconds(t time.Time) float64 {
	return float64(t.UnixMicro()) / 1e6
}

// saveStatus writes status.json, atomically, and leaves it to the next
// Sync: each run writes it anew from its first stage (an unreadable one
// is started over), so a copy lost in a power cut costs nothing, and its
// own flush was six journal commits of every boot.
func saveStatus(root *rootfs.Root, s *Status) error {
	b, _ := json.MarshalIndent(s, "", " ")
	return root.WriteMarkFile(StatusPath, append(b, '\n'), 0o644, rootfs.KeepOwner)
}

// writeStatus saves status.json and links it where cloud-init's tools
// look; failures are logged.
func writeStatus(root *rootfs.Root, s *Status, log *slog.Logger) {
	if err := saveStatus(root, s); err != nil {
		log.Error("write status", "error", err.Error())
		return
	}
	if err := root.Symlink(StatusPath, "/run/cloud-init/status.json"); err != nil {
		log.Error("link status", "error", err.Error())
	}
}

// Result is result.json.
type Result struct {
	V1 struct {
		Datasource *string  `json:"datasource"`
		Errors     []string `json:"errors"`
	} `json:"v1"`
}

func writeResult(root *rootfs.Root, s *Status, log *slog.Logger) {
	var r Result
	r.V1.Datasource = s.V1.Datasource
	r.V1.Errors = []string{}
	names := make([]string, 0, len(s.V1.Stages))
	for n := range s.V1.Stages {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r.V1.Errors = append(r.V1.Errors, s.V1.Stages[n].Errors...)
	}
	b, _ := json.MarshalIndent(r, "", " ")
	if err := root.WriteFile(ResultPath, append(b, '\n'), 0o644, rootfs.KeepOwner); err != nil {
		log.Error("write result", "error", err.Error())
		return
	}
	if err := root.Symlink(ResultPath, "/run/cloud-init/result.json"); err != nil {
		log.Error("link result", "error", err.Error())
	}
}

// readSystemConfig merges the target's /etc/cloud/cloud.cfg with
// cloud.cfg.d/*.cfg, later files winning, as cloud-init's
// read_conf_with_confd does.
func readSystemConfig(root *rootfs.Root) (map[string]any, []string) {
	var errs []string
	load := func(name string) map[string]any {
		b, err := root.ReadFile(name)
		if err != nil {
			if !isNotExist(err) {
				errs = append(errs, err.Error())
			}
			return nil
		}
		v, err := yaml11.Load(b)
		if err != nil {
			errs = append(errs, "parse "+name+": "+err.Error())
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			errs = append(errs, "parse "+name+": want a mapping at the top")
		}
		return m
	}
	var confd []map[string]any
	if entries, err := root.ReadDir("/etc/cloud/cloud.cfg.d"); err == nil {
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".cfg") {
				if m := load(path.Join("/etc/cloud/cloud.cfg.d", e.Name())); m != nil {
					confd = append(confd, m)
				}
			}
		}
	}
	var sources []map[string]any
	for i := len(confd) - 1; i >= 0; i-- {
		sources = append(sources, confd[i])
	}
	sources = append(sources, load("/etc/cloud/cloud.cfg"))
	return merge.MergeMany(sources...), errs
}

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist)
}

func cloudConfigText(cfg map[string]any) []byte {
	if len(cfg) == 0 {
		return []byte("#cloud-config\n{}\n")
	}
	b := []byte("#cloud-config\n")
	b, err := appendYAML(b, cfg, 0)
	if err != nil {
		return []byte("#cloud-config\n{}\n")
	}
	return b
}

// appendYAML writes v as block YAML at the given indentation; only its
// scalars go through yaml.v3. yaml.v3's emitter keeps every event of a
// document until it ends (its queue never shrinks), about 1.6 KB a
// scalar: a config of 100,000 keys took 300 MiB to write out, more than
// anything else a boot does. Mappings come out in sorted key order, as
// cloud-init's safeyaml.dumps writes them.
func appendYAML(b []byte, v any, indent int) ([]byte, error) {
	pad := strings.Repeat(" ", indent)
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			key, err := yamlKey(k)
			if err != nil {
				return nil, err
			}
			if len(key) > 1000 {
				// A key without "?" must end within 1024 characters.
				b = append(append(append(append(b, pad...), "? "...), key...), '\n')
				key = ""
			}
			b = append(append(append(b, pad...), key...), ':')
			if b, err = appendValue(b, x[k], indent); err != nil {
				return nil, err
			}
		}
	case []any:
		for _, e := range x {
			b = append(append(b, pad...), '-')
			var err error
			if b, err = appendValue(b, e, indent); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// appendValue writes what follows a key's colon or a list item's dash:
// a scalar on the same line, or a collection on the lines below.
func appendValue(b []byte, v any, indent int) ([]byte, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return append(b, " {}\n"...), nil
		}
		return appendYAML(append(b, '\n'), x, indent+4)
	case []any:
		if len(x) == 0 {
			return append(b, " []\n"...), nil
		}
		return appendYAML(append(b, '\n'), x, indent+4)
	}
	out, err := scalarYAML(v)
	if err != nil {
		return nil, err
	}
	// A block scalar ("|-" and its lines, indented by 4) moves to where
	// it is written.
	lines := strings.SplitAfter(string(out), "\n")
	b = append(append(b, ' '), lines[0]...)
	for _, line := range lines[1:] {
		if line != "" && line != "\n" {
			b = append(b, strings.Repeat(" ", indent)...)
		}
		b = append(b, line...)
	}
	return b, nil
}

// scalarYAML writes a scalar so that it loads back under YAML 1.1 as the
// same value: yaml.v3 writes by YAML 1.2, where 1.0 may be "1" and
// "0644" needs no quotes.
func scalarYAML(v any) ([]byte, error) {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsNaN(x):
			return []byte(".nan\n"), nil
		case math.IsInf(x, 1):
			return []byte(".inf\n"), nil
		case math.IsInf(x, -1):
			return []byte("-.inf\n"), nil
		}
		// PyYAML's floats have a dot: 1.0, 1.0e+16.
		s := pyfmt.Float(x)
		if !strings.ContainsAny(s, ".") {
			mant, exp, hasExp := strings.Cut(s, "e")
			s = mant + ".0"
			if hasExp {
				s += "e" + exp
			}
		}
		return []byte(s + "\n"), nil
	case int64:
		return append(strconv.AppendInt(nil, x, 10), '\n'), nil
	case bool:
		return []byte(strconv.FormatBool(x) + "\n"), nil
	case nil:
		return []byte("null\n"), nil
	case string:
		if plainWord(x) {
			// Most keys and values: no call into yaml.v3, which costs a
			// new encoder each time.
			return []byte(x + "\n"), nil
		}
		out, err := yaml.Marshal(x)
		if err != nil {
			return nil, err
		}
		text := strings.TrimSuffix(string(out), "\n")
		if text != "" && !strings.ContainsAny(text[:1], "'\"|>") && !strings.Contains(text, "\n") && !yaml11.PlainIsString(text) {
			return json.Marshal(x)
		}
		return out, nil
	}
	return yaml.Marshal(v)
}

// plainWord is a string that YAML 1.1 reads back unquoted as itself: a
// word of letters, digits and "_./-" that is no number, boolean or null.
func plainWord(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '/':
		case (c == '.' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return yaml11.PlainIsString(s)
}

// yamlKey spells a mapping key; one that yaml.v3 would write on lines of
// its own goes in JSON's double quotes, which YAML reads the same.
func yamlKey(k string) (string, error) {
	out, err := scalarYAML(k)
	if err != nil {
		return "", err
	}
	key := strings.TrimSuffix(string(out), "\n")
	if strings.Contains(key, "\n") || strings.HasPrefix(key, "|") || strings.HasPrefix(key, ">") {
		j, err := json.Marshal(k)
		return string(j), err
	}
	return key, nil
}

func marshalJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return []byte("{}\n")
	}
	return append(b, '\n')
}

// fsMode keeps setuid, setgid and sticky, which fs.FileMode(m) would lose.
func fsMode(m uint32) fs.FileMode { return rootfs.UnixMode(m) }
