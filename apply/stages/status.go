package stages

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/merge"
	"github.com/seedinit/seedinit/apply/target"
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
}

// MarshalJSON flattens the stages beside datasource and stage, as
// cloud-init lays them out.
func (s StatusV1) MarshalJSON() ([]byte, error) {
	m := map[string]any{"datasource": s.Datasource, "stage": s.Stage}
	for k, v := range s.Stages {
		m[k] = v
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
func ReadStatus(root *target.Root) (*Status, error) {
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

func loadStatus(root *target.Root, fresh bool) *Status {
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
func NoteFinalStageWait(root *target.Root, reason string) error {
	s, err := ReadStatus(root)
	if err != nil {
		return fmt.Errorf("note the final stage's wait: %w", err)
	}
	s.V1.Stages[statusNames[apply.StageFinal]].Waiting = reason
	b, _ := json.MarshalIndent(s, "", " ")
	return root.WriteFile(StatusPath, append(b, '\n'), 0o644, target.KeepOwner)
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

func writeStatus(root *target.Root, s *Status, log *slog.Logger) {
	b, _ := json.MarshalIndent(s, "", " ")
	if err := root.WriteFile(StatusPath, append(b, '\n'), 0o644, target.KeepOwner); err != nil {
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

func writeResult(root *target.Root, s *Status, log *slog.Logger) {
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
	if err := root.WriteFile(ResultPath, append(b, '\n'), 0o644, target.KeepOwner); err != nil {
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
func readSystemConfig(root *target.Root) (map[string]any, []string) {
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
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return []byte("#cloud-config\n{}\n")
	}
	return append([]byte("#cloud-config\n"), b...)
}

func marshalJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return []byte("{}\n")
	}
	return append(b, '\n')
}

// fsMode keeps setuid, setgid and sticky, which fs.FileMode(m) would lose.
func fsMode(m uint32) fs.FileMode { return target.UnixMode(m) }
