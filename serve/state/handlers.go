package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seedinit/seedinit/serve/inventory"
)

// Body caps: a phone_home form is a few host keys; a status report is
// status.json, whose errors are the bulk.
const (
	maxPhoneHomeBody = 64 << 10
	maxReportBody    = 1 << 20
	// maxErrors and maxErrorLen bound what a report keeps.
	maxErrors   = 100
	maxErrorLen = 2048
)

// The paths the handlers answer, for the server's mux (each also answers
// below it: /phone-home/<instance>, /report/<instance>).
const (
	PhoneHomePath = "/phone-home/"
	ReportPath    = "/report/"
	StatusPath    = "/status"
	MetricsPath   = "/metrics"
)

// Handlers are the tracker's HTTP handlers by the path they answer; each
// checks its own method.
func (t *Tracker) Handlers() map[string]http.Handler {
	return map[string]http.Handler{
		PhoneHomePath: http.HandlerFunc(t.servePhoneHome),
		ReportPath:    http.HandlerFunc(t.serveReport),
		StatusPath:    http.HandlerFunc(t.serveStatus),
		MetricsPath:   http.HandlerFunc(t.serveMetrics),
	}
}

// Entry is one line of the status: an instance's record, waiting when it
// has none.
type Entry struct {
	Record
	// Unknown marks a record of an instance the inventory no longer has.
	Unknown bool `json:"not_in_inventory,omitempty"`
}

// Entries lists every instance of the inventory with its state, then
// the records of instances it no longer has.
func (t *Tracker) Entries(ctx context.Context) ([]Entry, error) {
	return Entries(ctx, t.cfg.Store, t.cfg.Inventory())
}

// Entries lists the instances of inv (nil: every record) with their
// records from s.
func Entries(ctx context.Context, s Store, inv *inventory.Inventory) ([]Entry, error) {
	records, err := s.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the state: %w", err)
	}
	if inv == nil {
		out := make([]Entry, len(records))
		for i, r := range records {
			out[i] = Entry{Record: r}
		}
		return out, nil
	}
	byName := map[string]Record{}
	for _, r := range records {
		byName[r.Instance] = r
	}
	var out []Entry
	for _, inst := range inv.Instances {
		r, ok := byName[inst.Name]
		if !ok {
			r = Record{Instance: inst.Name, State: Waiting}
		}
		delete(byName, inst.Name)
		out = append(out, Entry{Record: r})
	}
	for _, r := range records {
		if _, left := byName[r.Instance]; left {
			out = append(out, Entry{Record: r, Unknown: true})
		}
	}
	return out, nil
}

// StatusJSON is /status?format=json and `seedinit serve status --format
// json`.
type StatusJSON struct {
	Counts    map[State]int `json:"counts"`
	Instances []Entry       `json:"instances"`
}

// NewStatusJSON counts entries by state.
func NewStatusJSON(entries []Entry) StatusJSON {
	out := StatusJSON{Counts: map[State]int{}, Instances: entries}
	for _, s := range States {
		out.Counts[s] = 0
	}
	for _, e := range entries {
		out.Counts[e.State]++
	}
	if out.Instances == nil {
		out.Instances = []Entry{}
	}
	return out
}

// WriteText writes the status as a table, one instance a line, and the
// counts by state; each failed instance's errors follow the table.
func WriteText(w io.Writer, entries []Entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tSTATE\tSINCE\tLAST FETCH\tREPORTED\tSOURCE\tERRORS")
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02T15:04:05Z")
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, e := range entries {
		name := e.Instance
		if e.Unknown {
			name += " (not in inventory)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", name, e.State, stamp(e.Since), stamp(e.LastFetched), stamp(e.Reported), dash(e.LastSource), len(e.Errors))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	counts := NewStatusJSON(entries).Counts
	parts := make([]string, 0, len(States))
	for _, s := range States {
		parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
	}
	fmt.Fprintf(w, "%d instances: %s\n", len(entries), strings.Join(parts, ", "))
	for _, e := range entries {
		if len(e.Errors) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s, %s):\n", e.Instance, e.State, e.Via)
		for _, msg := range e.Errors {
			fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(msg, "\n", "\n  "))
		}
	}
	return nil
}

func (t *Tracker) serveStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	entries, err := t.Entries(ctx)
	if err != nil {
		t.cfg.Log.Error("status: list the state", "err", err)
		http.Error(w, "the state store failed", http.StatusServiceUnavailable)
		return
	}
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(NewStatusJSON(entries))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	WriteText(w, entries)
}

// refuse answers a refused report, logs and counts why.
func (t *Tracker) refuse(w http.ResponseWriter, r *http.Request, code int, why string) {
	t.cfg.Log.Warn("serve: refused", "remote", hostOf(r.RemoteAddr), "path", clip(r.URL.Path, 200), "why", why)
	t.Refused(r.RemoteAddr, r.URL.Path, why)
	http.Error(w, why, code)
}

// reporter is the instance a report names, checked against where it
// comes from: an instance the inventory knows by address only reports
// from that address (a report from elsewhere is someone else's word).
func (t *Tracker) reporter(w http.ResponseWriter, r *http.Request, key string) (*inventory.Instance, bool) {
	inst, ok := t.resolve(key)
	if !ok {
		t.refuse(w, r, http.StatusNotFound, "unknown instance: "+clip(key, 100))
		return nil, false
	}
	if len(inst.Addresses) > 0 {
		a, err := netip.ParseAddr(hostOf(r.RemoteAddr))
		if err != nil || !inst.HasAddress(a.Unmap()) {
			t.refuse(w, r, http.StatusForbidden, fmt.Sprintf("source address not the instance's: %s reports as %s", hostOf(r.RemoteAddr), inst.Name))
			return nil, false
		}
	}
	return inst, true
}

// servePhoneHome takes cloud-init's phone_home POST: a form of
// instance_id, hostname, fqdn and the SSH host keys (pub_key_*), to a URL
// that names the instance ($INSTANCE_ID in phone_home's url) or not. The
// instance is provisioned: phone_home runs last, in the final stage.
func (t *Tracker) servePhoneHome(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxPhoneHomeBody)
	if err := r.ParseForm(); err != nil {
		code := http.StatusBadRequest
		if errors.As(err, new(*http.MaxBytesError)) {
			code = http.StatusRequestEntityTooLarge
		}
		t.refuse(w, r, code, "bad phone_home form: "+err.Error())
		return
	}
	key := strings.Trim(strings.TrimPrefix(r.URL.Path, strings.TrimSuffix(PhoneHomePath, "/")), "/")
	formID := r.PostForm.Get("instance_id")
	if key == "" {
		key = formID
	}
	if key == "" {
		t.refuse(w, r, http.StatusBadRequest, "phone_home names no instance: no instance in the path, no instance_id in the form")
		return
	}
	inst, ok := t.reporter(w, r, key)
	if !ok {
		return
	}
	// cloud-init sends "N/A" for what it could not read.
	if formID != "" && formID != "N/A" && formID != inst.InstanceID {
		t.refuse(w, r, http.StatusConflict, fmt.Sprintf("instance_id mismatch: the form says %s, %s is %s", clip(formID, 100), inst.Name, inst.InstanceID))
		return
	}
	rep := Report{Via: "phone-home", Source: hostOf(r.RemoteAddr), At: t.cfg.Now().UTC(), Final: true, HostKeys: map[string]string{}}
	for _, k := range []string{"fqdn", "hostname"} {
		if v := r.PostForm.Get(k); v != "" && v != "N/A" && rep.Hostname == "" {
			rep.Hostname = clip(v, 255)
		}
	}
	for k, v := range r.PostForm {
		if strings.HasPrefix(k, "pub_key_") && len(v) > 0 && v[0] != "N/A" && len(rep.HostKeys) < 8 {
			rep.HostKeys[clip(k, 40)] = clip(strings.TrimSpace(v[0]), 16<<10)
		}
	}
	t.record(w, inst.Name, rep)
}

func (t *Tracker) record(w http.ResponseWriter, instance string, rep Report) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := t.cfg.Store.Reported(ctx, instance, rep); err != nil {
		t.m.storeError()
		t.cfg.Log.Error("state: record a report", "instance", instance, "via", rep.Via, "err", err)
		http.Error(w, "the state store failed", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

// serveReport takes seedinit's own report: the JSON of `seedinit status
// --format json` (status, errors) or status.json itself (v1 and its
// stages' errors), POSTed to /report/<instance>.
func (t *Tracker) serveReport(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	key := strings.Trim(strings.TrimPrefix(r.URL.Path, strings.TrimSuffix(ReportPath, "/")), "/")
	if key == "" {
		t.refuse(w, r, http.StatusBadRequest, "report names no instance: want /report/<instance>")
		return
	}
	inst, ok := t.reporter(w, r, key)
	if !ok {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReportBody))
	if err != nil {
		code := http.StatusBadRequest
		if errors.As(err, new(*http.MaxBytesError)) {
			code = http.StatusRequestEntityTooLarge
		}
		t.refuse(w, r, code, "bad report: "+err.Error())
		return
	}
	errs, final, err := ParseReport(body)
	if err != nil {
		t.refuse(w, r, http.StatusBadRequest, "bad report: "+err.Error())
		return
	}
	t.record(w, inst.Name, Report{Via: "report", Source: hostOf(r.RemoteAddr), At: t.cfg.Now().UTC(), Errors: errs, Final: final})
}

// ParseReport reads a status report: the errors it lists, and whether
// the run it reports is over (a status of "running" or "not started" is
// not: its errors are kept, its state left). Both shapes are read:
// `seedinit status --format json`'s top-level status and errors, and
// status.json's v1 stages, each with its errors (named by stage).
func ParseReport(body []byte) (errs []string, final bool, err error) {
	var doc struct {
		Status *string                    `json:"status"`
		Errors []string                   `json:"errors"`
		V1     map[string]json.RawMessage `json:"v1"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, false, fmt.Errorf("want the JSON of seedinit status --format json or status.json: %w", err)
	}
	if doc.Status == nil && doc.V1 == nil {
		return nil, false, errors.New("neither status nor v1: not seedinit's status")
	}
	final = true
	add := func(msg string) {
		msg = clip(msg, maxErrorLen)
		if len(errs) < maxErrors && !slices.Contains(errs, msg) {
			errs = append(errs, msg)
		}
	}
	for _, e := range doc.Errors {
		add(e)
	}
	stages := make([]string, 0, len(doc.V1))
	for k := range doc.V1 {
		stages = append(stages, k)
	}
	slices.Sort(stages)
	for _, name := range stages {
		var st struct {
			Errors   []string `json:"errors"`
			Start    *float64 `json:"start"`
			Finished *float64 `json:"finished"`
		}
		if json.Unmarshal(doc.V1[name], &st) != nil {
			continue // datasource, stage: strings, not stages
		}
		if st.Start != nil && st.Finished == nil {
			final = false
		}
		for _, e := range st.Errors {
			add(name + ": " + e)
		}
	}
	if doc.Status != nil {
		switch s := strings.ToLower(*doc.Status); s {
		case "running", "not started", "not run":
			final = false
		case "error":
			if len(errs) == 0 {
				add("status error, without errors listed")
			}
		}
	}
	return errs, final, nil
}
