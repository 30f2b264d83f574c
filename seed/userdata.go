package seed

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seedinit/seedinit/seed/jinja"
	"github.com/seedinit/seedinit/seed/pyfmt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// DefaultMaxSize caps the user-data a ProcessUserData call may expand to
// when Options.MaxSize is 0.
const DefaultMaxSize int64 = 16 << 20

// maxIncludeDepth bounds #include chains (cloud-init has no bound and
// recurses until Python gives up); maxFetches bounds the URLs one
// user-data may fetch in all, and DefaultIncludeBudget the time all of
// them may take together.
const (
	maxIncludeDepth = 10
	maxFetches      = 100
	// DefaultIncludeBudget is the time all of a user-data's #include
	// fetches may take together when Options.IncludeBudget is 0. cloud-init
	// gives each URL 5 s a try and 10 retries a second apart, with no
	// bound on the whole: 20 URLs that never answer hold its boot for 20
	// minutes. 25 s leaves a user-data with includes that never answer
	// applied, or refused, within 30 s in all.
	DefaultIncludeBudget = 25 * time.Second
)

// maxParts bounds the parts of one user-data: those of its MIME message,
// and all it attaches (MIME, archive entries, included content). The
// largest real multipart user-data has tens of parts; merging 10,000
// cloud-config parts takes about a second.
const maxParts = 10_000

// Options tune ProcessUserData.
type Options struct {
	// MaxSize caps the user-data's size in total: the raw input plus every
	// byte decompressed, fetched or rendered from it. 0 means
	// DefaultMaxSize.
	MaxSize int64
	// Fetch gets #include and text/x-include-url URLs. nil means Web, for
	// http and https only: cloud-init also reads file:// URLs and bare
	// paths, but user-data must not read the files of the machine it
	// configures.
	Fetch func(ctx context.Context, url string) ([]byte, error)
	// NoIncludes, when set, refuses every #include and
	// text/x-include-url (a cached #include-once too) with this reason:
	// under a trust policy that applies only what a signed manifest
	// covers, content fetched from a URL is not applied.
	NoIncludes string
	// IncludeOnce keeps #include-once content, which cloud-init fetches
	// once per instance and reads from its urlcache ever after. nil
	// fetches #include-once URLs every time, like #include.
	IncludeOnce IncludeCache
	// TemplateVars is the instance data (instance-data-sensitive.json as
	// a tree) for "## template: jinja" parts, passed to jinja.Render as it
	// is (Render makes cloud-init's aliases itself). nil means no
	// instance data: templates are dropped with a warning, as cloud-init
	// does when the file is missing.
	TemplateVars map[string]any
	// LaunchIndex, when set, keeps only the parts whose Launch-Index (a
	// MIME header, an archive entry's launch-index or a cloud-config's
	// launch-index key) is absent or equal to it, as cloud-init's
	// launch_index filter does for user-data (not for vendor-data).
	LaunchIndex *int
	// Name is what the input is called in messages: "user-data" (the
	// default) or "vendor-data".
	Name string
	// IncludeBudget bounds the time all #include fetches take together;
	// each fetch gets what is left of it, at most FetchTimeout. 0 means
	// DefaultIncludeBudget.
	IncludeBudget time.Duration
	// ErrorOnFailure is cloud-init's ERROR_ON_USER_DATA_FAILURE (true in
	// cloud-init since 20.3): an #include that cannot be fetched or a
	// part that cannot be decompressed fails the whole call instead of
	// being a warning. seedinit's default keeps the other parts.
	ErrorOnFailure bool
}

// Content types with special meaning to cloud-init's UserDataProcessor.
const (
	typeNotMultipart = "text/x-not-multipart"
	typePlain        = "text/plain"
	typeShellScript  = "text/x-shellscript"
	typeCloudConfig  = "text/cloud-config"
	typeJSONPatch    = "text/cloud-config-jsonp"
	typeInclude      = "text/x-include-url"
	typeIncludeOnce  = "text/x-include-once-url"
	typeArchive      = "text/cloud-config-archive"
	typeBoothook     = "text/cloud-boothook"
	typePartHandler  = "text/part-handler"
	typeJinja        = "text/jinja2"
	typeOctetStream  = "application/octet-stream"
)

// startsWith maps the first characters of a payload to its content type,
// longest first, as cloud-init's handlers.INCLUSION_TYPES_MAP. The last
// three are content types, not markers; cloud-init lists them anyway, so a
// payload that starts with one of those words is typed by it.
var startsWith = func() []struct{ prefix, ctype string } {
	m := map[string]string{
		"#include":                        typeInclude,
		"#include-once":                   typeIncludeOnce,
		"#!":                              typeShellScript,
		"#cloud-config":                   typeCloudConfig,
		"#part-handler":                   typePartHandler,
		"#cloud-boothook":                 typeBoothook,
		"#cloud-config-archive":           typeArchive,
		"#cloud-config-jsonp":             typeJSONPatch,
		"## template: jinja":              typeJinja,
		"text/x-shellscript-per-boot":     "text/x-shellscript-per-boot",
		"text/x-shellscript-per-instance": "text/x-shellscript-per-instance",
		"text/x-shellscript-per-once":     "text/x-shellscript-per-once",
	}
	var list []struct{ prefix, ctype string }
	for p, t := range m {
		list = append(list, struct{ prefix, ctype string }{p, t})
	}
	sort.Slice(list, func(i, j int) bool {
		if len(list[i].prefix) != len(list[j].prefix) {
			return len(list[i].prefix) > len(list[j].prefix)
		}
		return list[i].prefix < list[j].prefix
	})
	return list
}()

// decompressTypes are the content types cloud-init gunzips.
var decompressTypes = map[string]bool{
	"application/gzip":              true,
	"application/gzip-compressed":   true,
	"application/gzipped":           true,
	"application/x-compress":        true,
	"application/x-compressed":      true,
	"application/x-gunzip":          true,
	"application/x-gzip":            true,
	"application/x-gzip-compressed": true,
}

// scriptFrequency is the frequency of the per-boot, per-instance and
// per-once script types, in cloud-init's settings names.
var scriptFrequency = map[string]string{
	"text/x-shellscript-per-boot":     "always",
	"text/x-shellscript-per-instance": "once-per-instance",
	"text/x-shellscript-per-once":     "once",
}

// TypeFromStartsWith is cloud-init's handlers.type_from_starts_with: the
// content type that the payload's first characters (after leading
// whitespace, in any case) announce, or "" when none does.
func TypeFromStartsWith(payload []byte) string {
	payload = pyLStrip(payload)
	for _, s := range startsWith {
		if hasPrefixFold(payload, s.prefix) {
			return s.ctype
		}
	}
	return ""
}

// hasPrefixFold compares like Python's str.lower().startswith for an ASCII
// prefix: only ASCII letters and the Kelvin sign (which lowers to "k")
// fold to ASCII.
func hasPrefixFold(b []byte, prefix string) bool {
	for i := 0; i < len(prefix); i++ {
		if len(b) == 0 {
			return false
		}
		c := b[0]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c < utf8.RuneSelf {
			if c != prefix[i] {
				return false
			}
			b = b[1:]
			continue
		}
		r, size := utf8.DecodeRune(b)
		if r != '\u212a' || prefix[i] != 'k' {
			return false
		}
		b = b[size:]
	}
	return true
}

// ProcessUserData decodes user-data (or vendor-data) into parts with
// cloud-init's rules (cloudinit/user_data.py and the part handlers):
// gzip, MIME multipart, #include and #include-once, #cloud-config-archive,
// "## template: jinja", and typing by the first line. Parts are in
// cloud-init's order and carry its file names (the MIME filename, or
// part-NNN counting attached parts from 1).
//
// It fails only when the input cannot be read at all: too large, gzip that
// does not decompress, or MIME that is not UTF-8. A part that cannot be
// fetched, decompressed or rendered is left out with a warning and the
// others go on.
func ProcessUserData(ctx context.Context, raw []byte, opts Options) (*Processed, error) {
	p := &processor{ctx: ctx, opts: opts, name: opts.Name}
	if p.name == "" {
		p.name = "user-data"
	}
	limit := opts.MaxSize
	if limit <= 0 {
		limit = DefaultMaxSize
	}
	p.limit = limit
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("read %s: %d bytes exceed the %d-byte cap", p.name, len(raw), limit)
	}
	p.remaining = limit - int64(len(raw))
	msg, err := p.toMessage(raw, "")
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p.name, err)
	}
	p.process(msg, 0)
	if p.tooManyParts {
		return nil, fmt.Errorf("read %s: more than %d parts (with its archives and includes)", p.name, maxParts)
	}
	if opts.ErrorOnFailure && len(p.failures) > 0 {
		return nil, fmt.Errorf("process %s: %w", p.name, errors.Join(p.failures...))
	}
	return p.result(), nil
}

type processor struct {
	ctx  context.Context
	opts Options
	name string
	// limit is the cap on the total size; remaining is what is left of it.
	limit, remaining int64
	fetches          int
	attached         []*mimePart
	processed        Processed
	// walked counts the parts the handlers see, for cloud-init's
	// part-%03d names of parts that were never attached.
	walked int
	// failures are the problems that ErrorOnFailure makes fatal.
	failures []error
	// tooManyParts is set once more than maxParts would be attached.
	tooManyParts bool
	// includeDeadline is when the include budget runs out, set at the
	// first fetch.
	includeDeadline time.Time
}

func (p *processor) warnf(format string, args ...any) {
	p.processed.Warnings = append(p.processed.Warnings, fmt.Sprintf(format, args...))
}

// failf is a warning that cloud-init, by default, treats as a failure of
// the whole user-data.
func (p *processor) failf(format string, args ...any) {
	p.failures = append(p.failures, fmt.Errorf(format, args...))
	p.warnf(format, args...)
}

// charge takes n bytes from the size budget.
func (p *processor) charge(n int) error {
	if int64(n) > p.remaining {
		return fmt.Errorf("%d more bytes exceed the %d-byte cap on %s", n, p.limit, p.name)
	}
	p.remaining -= int64(n)
	return nil
}

// toMessage is cloud-init's convert_string: gunzip when the data is gzip,
// parse as MIME when "MIME-Version:" appears in the first 4 KiB, else one
// text/x-not-multipart part.
func (p *processor) toMessage(data []byte, origin string) (*mimePart, error) {
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		out, err := p.gunzip(data)
		if err != nil {
			return nil, err
		}
		data = out
	}
	head := data[:min(len(data), 4096)]
	if !bytes.Contains(bytes.ToLower(head), []byte("mime-version:")) {
		msg := newPart(typeNotMultipart, data)
		msg.origin = origin
		return msg, nil
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("parse MIME: not valid UTF-8 at byte %d", invalidUTF8At(data))
	}
	msg, parts := parseMIME(data)
	if parts > maxParts {
		return nil, fmt.Errorf("parse MIME: more than %d MIME parts", maxParts)
	}
	msg.walk(func(part *mimePart) { part.origin = origin })
	return msg, nil
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}

// gunzip decompresses every gzip member in data (trailing zero bytes are
// allowed, as Python's gzip allows them) within the size budget, reading
// no further than the budget however large the output would be.
func (p *processor) gunzip(data []byte) ([]byte, error) {
	src := bytes.NewReader(data)
	zr, err := gzip.NewReader(src)
	if err != nil {
		return nil, fmt.Errorf("gunzip %d bytes: %w", len(data), err)
	}
	var out bytes.Buffer
	for {
		zr.Multistream(false)
		budget := p.remaining - int64(out.Len())
		n, err := io.Copy(&out, io.LimitReader(zr, budget+1))
		if err != nil {
			return nil, fmt.Errorf("gunzip %d bytes: %w", len(data), err)
		}
		if n > budget {
			return nil, fmt.Errorf("gunzip %d bytes: output exceeds the %d-byte cap on %s", len(data), p.limit, p.name)
		}
		rest := data[len(data)-src.Len():]
		if len(bytes.TrimLeft(rest, "\x00")) == 0 {
			break
		}
		if err := zr.Reset(src); err != nil {
			return nil, fmt.Errorf("gunzip %d bytes: member after byte %d: %w", len(data), len(data)-len(rest), err)
		}
	}
	if err := p.charge(out.Len()); err != nil {
		return nil, fmt.Errorf("gunzip %d bytes: %w", len(data), err)
	}
	return out.Bytes(), nil
}

// process is UserDataProcessor._process_msg: type each part of msg, expand
// includes and archives, and attach the rest.
func (p *processor) process(msg *mimePart, depth int) {
	msg.walk(func(part *mimePart) {
		if part.mainType() == "multipart" {
			return
		}
		origType := part.contentType()
		payload := part.payload()
		compressed := false
		if decompressTypes[origType] {
			out, err := p.gunzipPart(payload)
			if err != nil {
				p.failf("%s: decompress %s: %v", p.describe(part, 0), origType, err)
				return
			}
			payload, origType, compressed = out, typePlain, true
		}
		ctype := ""
		switch origType {
		case typePlain, typeNotMultipart, typeShellScript:
			// cloud-init trusts no text/x-shellscript that lacks #!.
			ctype = TypeFromStartsWith(payload)
		}
		if ctype == "" {
			ctype = origType
		}
		if compressed {
			unpacked := newPart(ctype, payload)
			if name := part.filename(); name != "" {
				unpacked.setFilename(name)
			}
			if index, ok := part.get("Launch-Index"); ok {
				unpacked.replace("Launch-Index", index)
			}
			unpacked.origin = part.origin
			part = unpacked
		}
		if ctype != origType {
			part.replace("Content-Type", ctype)
		}
		switch ctype {
		case typeInclude, typeIncludeOnce:
			p.include(part, payload, depth)
		case typeArchive:
			p.explodeArchive(part, payload)
		default:
			// cloud-init also sets the content type of the message being
			// walked, not just of the part. That matters when they are
			// one (a Content-Type parameter such as name= is lost) and
			// when the message is a message/rfc822 attached itself.
			msg.replace("Content-Type", ctype)
			p.attach(part)
		}
	})
}

// gunzipPart decompresses an application/gzip part; cloud-init then reads
// it as UTF-8 text and gives up on the part when it is not.
func (p *processor) gunzipPart(data []byte) ([]byte, error) {
	out, err := p.gunzip(data)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(out) {
		return nil, fmt.Errorf("decompressed content is not UTF-8 text (byte %d)", invalidUTF8At(out))
	}
	return out, nil
}

// attach is UserDataProcessor._attach_part: number the part, name it
// part-NNN unless it has a filename, and settle its launch index.
func (p *processor) attach(part *mimePart) {
	if len(p.attached) >= maxParts {
		p.tooManyParts = true
		return
	}
	p.attached = append(p.attached, part)
	part.attached = len(p.attached)
	if part.filename() == "" {
		part.setFilename(fmt.Sprintf("part-%03d", part.attached))
	}
	if p.opts.LaunchIndex == nil {
		return
	}
	if _, ok := part.get("Launch-Index"); ok {
		return
	}
	if part.contentType() != typeCloudConfig {
		return
	}
	doc, err := yaml11.Load(part.payload())
	if err != nil {
		return
	}
	cfg, _ := doc.(map[string]any)
	if index, ok := pyInt(cfg["launch-index"]); ok {
		part.add("Launch-Index", strconv.FormatInt(index, 10))
	}
}

// describe names a part in messages: user-data part 3 (text/x-shellscript,
// "setup.sh") from #include http://...
func (p *processor) describe(part *mimePart, number int) string {
	var b strings.Builder
	b.WriteString(p.name)
	b.WriteString(" part")
	if number > 0 {
		fmt.Fprintf(&b, " %d", number)
	}
	fmt.Fprintf(&b, " (%s", part.contentType())
	if name := part.filename(); name != "" {
		fmt.Fprintf(&b, ", %q", name)
	}
	b.WriteString(")")
	if part.origin != "" {
		b.WriteString(" from ")
		b.WriteString(part.origin)
	}
	return b.String()
}

// result walks the attached parts as cloud-init's handlers.walk does and
// keeps those a handler takes. A message/rfc822 part is walked into, so
// the parts inside it come out here and again where they were attached
// themselves: cloud-init 22.4.2 hands them to the handlers twice.
func (p *processor) result() *Processed {
	for _, part := range p.attached {
		p.emit(part, part.attached)
	}
	return &p.processed
}

func (p *processor) emit(part *mimePart, number int) {
	if !p.selected(part) {
		return
	}
	if part.mainType() != "multipart" {
		p.handle(part, number)
		p.walked++
	}
	if part.container {
		for _, child := range part.children {
			p.emit(child, child.attached)
		}
	}
}

// selected is cloud-init's launch_index filter for one part.
func (p *processor) selected(part *mimePart) bool {
	if p.opts.LaunchIndex == nil {
		return true
	}
	value, ok := part.get("Launch-Index")
	if !ok {
		return true
	}
	index, ok := pyInt(value)
	return ok && index == int64(*p.opts.LaunchIndex)
}

// handle turns one walked part into a Part the way the part handler for
// its content type would take it.
func (p *processor) handle(part *mimePart, number int) {
	if part.container {
		// A message/rfc822 has no payload of its own; cloud-init's
		// handlers ignore it or fail on it.
		return
	}
	ctype := part.contentType()
	filename := part.filename()
	if filename == "" {
		filename = fmt.Sprintf("part-%03d", p.walked)
	}
	payload := part.payload()
	out := Part{
		Filename:    filename,
		ContentType: ctype,
		Content:     payload,
		MergeHow:    mergeHow(part),
		Source:      p.describe(part, number),
	}
	switch ctype {
	case typeCloudConfig:
		out.Kind = KindCloudConfig
	case typeJSONPatch:
		out.Kind = KindJSONPatch
	case typeShellScript:
		out.Kind = KindScript
	case "text/x-shellscript-per-boot", "text/x-shellscript-per-instance", "text/x-shellscript-per-once":
		out.Kind = KindScript
		out.Frequency = scriptFrequency[ctype]
	case typeBoothook:
		out.Kind = KindBoothook
	case typePartHandler:
		out.Kind = KindPartHandler
		p.warnf("%s: seedinit cannot run Python part handlers; the part and the content types it would handle are ignored", out.Source)
	case typeJinja:
		rendered, kind, ok := p.renderJinja(out.Source, payload)
		if !ok {
			return
		}
		out.Content, out.Kind = rendered, kind
	default:
		if len(payload) == 0 {
			return
		}
		what := "content type " + ctype
		if ctype == typeNotMultipart {
			what = "non-multipart user-data"
		}
		p.warnf("%s: unhandled %s starting %q; ignored", out.Source, what, firstLine(payload, 24))
		return
	}
	p.processed.Parts = append(p.processed.Parts, out)
}

// mergeHow reads the merge type the way cloud-init's cloud-config handler
// does: the Merge-Type header, else X-Merge-Type, the names in exactly
// that case.
func mergeHow(part *mimePart) string {
	for _, name := range []string{"Merge-Type", "X-Merge-Type"} {
		if v, ok := part.getExact(name); ok && v != "" {
			return v
		}
	}
	return ""
}

// firstLine is the start of a payload for messages: the first line, at
// most n characters.
func firstLine(b []byte, n int) string {
	line, _, _ := bytes.Cut(b[:min(len(b), 4*n)], []byte("\n"))
	s := strings.ToValidUTF8(string(line), "\uFFFD")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n])
	}
	return s
}

// renderJinja is cloud-init's JinjaTemplatePartHandler: render the part
// without its "## template: jinja" line, then hand the result to the
// cloud-config or shell-script handler by its first line. Only those two
// take rendered templates in cloud-init 22.4.2.
func (p *processor) renderJinja(source string, payload []byte) ([]byte, PartKind, bool) {
	header, rest, _ := bytes.Cut(payload, []byte("\n"))
	if kind, ok := templateType(header); !ok || kind != "jinja" {
		p.warnf("%s: first line %q does not declare a jinja template; ignored", source, firstLine(header, 40))
		return nil, "", false
	}
	if p.opts.TemplateVars == nil {
		p.warnf("%s: cannot render the jinja template: no instance data; ignored", source)
		return nil, "", false
	}
	if p.remaining <= 0 {
		p.warnf("%s: render jinja template: the %d-byte cap on %s is used up; ignored", source, p.limit, p.name)
		return nil, "", false
	}
	rendered, err := jinja.RenderWith(rest, p.opts.TemplateVars, jinja.Options{
		Name:      source,
		Logger:    slog.New(slog.DiscardHandler), // reported as a warning below
		MaxOutput: int(min(p.remaining, math.MaxInt32)),
	})
	if err != nil {
		p.warnf("%s: %v; ignored", source, err)
		return nil, "", false
	}
	if err := p.charge(len(rendered)); err != nil {
		p.warnf("%s: render jinja template: %v; ignored", source, err)
		return nil, "", false
	}
	if missing := jinja.MissingVariables(rendered); len(missing) > 0 {
		for i, name := range missing {
			missing[i] = "'" + name + "'"
		}
		p.warnf("%s: could not render jinja template variables: %s", source, strings.Join(missing, ", "))
	}
	if len(rendered) == 0 {
		return nil, "", false
	}
	switch sub := TypeFromStartsWith(rendered); sub {
	case typeCloudConfig:
		return rendered, KindCloudConfig, true
	case typeShellScript:
		return rendered, KindScript, true
	case typeJSONPatch:
		// cloud-init 22.4.2 merges it as YAML, which a JSON patch is not.
		p.warnf("%s: a jinja template that renders to #cloud-config-jsonp cannot be merged (cloud-init reads it as a cloud-config); ignored", source)
	default:
		p.warnf("%s: ignoring the jinja template: no handler for rendered content of type %q", source, sub)
	}
	return nil, "", false
}

// templateType is cloud-init's templater TYPE_MATCHER ("##\s*template:")
// on a template's first line: the declared type, lower case.
func templateType(line []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("##"))
	if !ok {
		return "", false
	}
	rest = pyLStrip(rest)
	if len(rest) < len("template:") || !strings.EqualFold(string(rest[:len("template:")]), "template:") {
		return "", false
	}
	return strings.ToLower(pyStrip(string(rest[len("template:"):]))), true
}

// pyInt is Python's int(x) for the values a launch index comes as: ints,
// whole or truncated floats, bools and decimal strings.
func pyInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= 1<<63 {
			return 0, false
		}
		return int64(v), true
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	case string:
		s := pyStrip(v)
		if strings.Contains(s, "_") {
			if strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") || strings.Contains(s, "__") {
				return 0, false
			}
			s = strings.ReplaceAll(s, "_", "")
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// CleanFilename is cloud-init's util.clean_filename, which the script and
// boothook handlers apply to a part's filename: "/" becomes "_", and only
// letters, digits and "_-.()" stay.
func CleanFilename(name string) string {
	name = strings.ReplaceAll(name, "/", "_")
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("_-.()", r):
			return r
		}
		return -1
	}, name)
	return pyStrip(name)
}

// archiveSkipKeys are the archive entry keys that are not copied as
// headers.
var archiveSkipKeys = map[string]bool{
	"content": true, "filename": true, "type": true, "launch-index": true,
	"content-disposition": true, "number-attachments": true, "content-type": true,
}

// explodeArchive is UserDataProcessor._explode_archive: a YAML list whose
// entries (a string, or a mapping with content, type, filename,
// launch-index and headers) become parts. As in cloud-init, entries are
// attached as they are: an entry that is itself an #include or an archive
// is not expanded, and an entry with an explicit type is not re-typed.
func (p *processor) explodeArchive(part *mimePart, payload []byte) {
	source := p.describe(part, 0)
	doc, err := yaml11.Load(payload)
	if err != nil {
		p.warnf("%s: parse cloud-config-archive: %v; ignored", source, err)
		return
	}
	if doc == nil {
		return
	}
	entries, ok := doc.([]any)
	if !ok {
		p.warnf("%s: a cloud-config-archive must be a list, not %s; ignored", source, pyTypeName(doc))
		return
	}
	for i, ent := range entries {
		var entry map[string]any
		switch e := ent.(type) {
		case string:
			entry = map[string]any{"content": e}
		case map[string]any:
			entry = e
		default:
			p.warnf("%s: archive entry %d is %s, not a string or mapping; skipped", source, i, pyTypeName(ent))
			continue
		}
		content := ""
		switch c := entry["content"].(type) {
		case string:
			content = c
		case nil:
		default:
			p.warnf("%s: archive entry %d: content is %s, not a string; skipped", source, i, pyTypeName(c))
			continue
		}
		ctype := ""
		switch t := entry["type"].(type) {
		case string:
			ctype = t
		case nil:
		default:
			if yaml11.Truthy(t) {
				p.warnf("%s: archive entry %d: type is %s, not a string; skipped", source, i, pyTypeName(t))
				continue
			}
		}
		if ctype == "" {
			ctype = TypeFromStartsWith([]byte(content))
			if ctype == "" {
				ctype = typeCloudConfig
			}
		}
		if !strings.Contains(ctype, "/") {
			p.warnf("%s: archive entry %d: type %q has no subtype; skipped", source, i, ctype)
			continue
		}
		ent := newPart(ctype, []byte(content))
		ent.origin = part.origin
		if name, ok := entry["filename"]; ok {
			ent.setFilename(pyfmt.Str(name))
		}
		if index, ok := entry["launch-index"]; ok {
			ent.add("Launch-Index", pyfmt.Str(index))
		}
		keys := make([]string, 0, len(entry))
		for k := range entry {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if archiveSkipKeys[strings.ToLower(k)] {
				continue
			}
			value := ""
			if entry[k] != nil {
				value = pyfmt.Str(entry[k])
			}
			ent.add(k, value)
		}
		p.attach(ent)
	}
}

// pyTypeName names a YAML value's type as Python would, for messages.
func pyTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, int:
		return "an integer"
	case float64:
		return "a float"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("a %T", v)
}
