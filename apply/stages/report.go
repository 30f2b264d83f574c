package stages

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/trust"
)

// seedinit's report: once the final stage is over, the run POSTs what
// `seedinit status --format json` prints to a report URL, so that the
// server that seeded the instance (`seedinit serve`: /report/<instance>)
// knows it provisioned, or failed and why. It is sent by every run that
// ends with the final stage: once per boot (the final stage PID 1 starts
// after the handoff), and again by each `seedinit run` or `seedinit
// apply` run by hand. It never fails the run or a module, and costs at
// most reportBudget.
//
// The URL is the cloud-config's seedinit.report.url (user-data, vendor-
// data, /etc/cloud in the image), else the meta-data's
// seedinit-report-url (or, in OpenStack's meta_data.json, its "meta"
// properties' one), which a server can give each instance without any
// user-data, else the kernel command line's seedinit.report=. The first
// two are read from what the seed's trust decision let through: under
// require, a URL in an unsigned part never reaches here; the command
// line, which nothing signs, is not used under require.
// seedinit.report.enabled: false turns the report off.

// ReportMetaKey is the meta-data key of the report URL.
const ReportMetaKey = seed.ReportURLKey

// reportTries is how often a report is tried before it is given up.
const reportTries = 3

// The report's budget: all tries within reportBudget, each at most
// reportTryTimeout, reportRetryWait between them. A variable for tests.
var (
	reportBudget     = 10 * time.Second
	reportTryTimeout = 3 * time.Second
	reportRetryWait  = 500 * time.Millisecond
)

// ReportURL is where a run with cfg and sd reports, and what gave it
// (for the log); "" when nowhere. An error names the key that is wrong.
func ReportURL(cfg apply.Config, sd *seed.Seed) (rawURL, from string, err error) {
	own, _, err := cfg.Map("seedinit")
	if err != nil {
		return "", "", fmt.Errorf("read cloud-config %w", err)
	}
	rep, ok, err := own.Map("report")
	if err != nil {
		return "", "", fmt.Errorf("read cloud-config seedinit.%w", err)
	}
	if ok {
		on, err := rep.Bool("enabled", true)
		if err != nil {
			return "", "", fmt.Errorf("read cloud-config seedinit.report.%w", err)
		}
		if !on {
			return "", "", nil
		}
		u, ok, err := rep.String("url")
		if err != nil {
			return "", "", fmt.Errorf("read cloud-config seedinit.report.%w", err)
		}
		if ok && strings.TrimSpace(u) != "" {
			return strings.TrimSpace(u), "cloud-config seedinit.report.url", nil
		}
	}
	if sd == nil {
		return "", "", nil
	}
	md := apply.Config(sd.Metadata)
	if u, ok, err := md.String(ReportMetaKey); err != nil {
		return "", "", fmt.Errorf("read meta-data %w", err)
	} else if ok && strings.TrimSpace(u) != "" {
		return strings.TrimSpace(u), "meta-data " + ReportMetaKey, nil
	}
	// OpenStack's instance properties (nova boot --property).
	if props, ok, _ := md.Map("meta"); ok {
		if u, ok, err := props.String(ReportMetaKey); err != nil {
			return "", "", fmt.Errorf("read meta-data meta.%w", err)
		} else if ok && strings.TrimSpace(u) != "" {
			return strings.TrimSpace(u), "meta-data meta." + ReportMetaKey, nil
		}
	}
	return "", "", nil
}

// reportTarget is where the run reports: ReportURL's, else the kernel
// command line's seedinit.report=, which no signature covers and which is
// therefore not used under require. A config that names it wrongly, and
// a command line's URL not used, are logged once here.
func reportTarget(opts Options, cfg apply.Config) (rawURL, from string) {
	rawURL, from, err := ReportURL(cfg, opts.Seed)
	if err != nil {
		opts.Log.Warn("no report will be sent", "error", err.Error())
		return "", ""
	}
	if rawURL != "" || opts.CmdlineReportURL == "" || reportOff(cfg) {
		return rawURL, from
	}
	if opts.SeedTrust != nil && opts.SeedTrust.Policy == trust.Require.String() {
		opts.Log.Warn("seedinit.report= on the kernel command line not used: seed trust is require, and no signature covers the command line; give the URL in the signed meta-data (seedinit-report-url)",
			"url", seed.RedactURL(opts.CmdlineReportURL))
		return "", ""
	}
	return opts.CmdlineReportURL, "seedinit.report= on the kernel command line"
}

// reportOff says whether the config turns the report off
// (seedinit.report.enabled: false), which a command line's URL does not
// turn back on. ReportURL has read the same keys without an error.
func reportOff(cfg apply.Config) bool {
	own, _, _ := cfg.Map("seedinit")
	rep, ok, _ := own.Map("report")
	if !ok {
		return false
	}
	on, _ := rep.Bool("enabled", true)
	return !on
}

// SendReport POSTs the target's status to rawURL ("": nowhere) within
// the report's budget, and logs one line with the outcome: the URL
// (redacted), from (where the URL came from), the status and the count
// of errors, never their text nor anything of the seed. PID 1 calls it
// itself when seedinit.strict refuses the handoff, and so no final stage
// runs to send it.
func SendReport(ctx context.Context, root *rootfs.Root, rawURL, from string, log *slog.Logger) {
	if rawURL == "" {
		return
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		log.Warn("report not sent", "url", seed.RedactURL(rawURL), "from", from, "error", "not an http or https URL")
		return
	}
	body, _ := FormatStatus(root, false, "json")
	details := ReadStatusDetails(root)
	start := time.Now()
	tries, err := postReport(ctx, u.String(), []byte(body))
	attrs := []any{"url", seed.RedactURL(rawURL), "from", from, "status", details.Status, "errors", len(details.Errors), "tries", tries, "duration", time.Since(start).Round(time.Millisecond)}
	if err != nil {
		log.Warn("report not sent", append(attrs, "error", seed.RedactError(err, rawURL))...)
		return
	}
	log.Info("report sent", attrs...)
}

// postReport tries the POST up to reportTries times within reportBudget
// and says how many tries it took. A server's 4xx answer is final (it
// refused this report; another try would be refused alike); a 5xx or a
// failed connection is tried again.
func postReport(ctx context.Context, target string, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, reportBudget)
	defer cancel()
	var last error
	for try := 1; try <= reportTries; try++ {
		_, err := seed.Web(ctx, seed.WebRequest{
			Method:  http.MethodPost,
			URL:     target,
			Header:  map[string]string{"Content-Type": "application/json", "User-Agent": "seedinit/" + apply.Version},
			Body:    body,
			Timeout: reportTryTimeout,
			MaxSize: 512,
		})
		var status *seed.WebStatusError
		switch {
		case err == nil, errors.Is(err, seed.ErrTooLarge):
			return try, nil // what the server says back is not used
		case errors.As(err, &status) && status.Code < 500:
			return try, fmt.Errorf("HTTP %d: %s", status.Code, clipSnippet(status.Snippet))
		case errors.As(err, &status):
			last = fmt.Errorf("HTTP %d: %s", status.Code, clipSnippet(status.Snippet))
		case ctx.Err() != nil:
			return try, fmt.Errorf("no answer within the report's budget of %s", reportBudget)
		case errors.Is(err, context.DeadlineExceeded):
			last = fmt.Errorf("no answer within %s", reportTryTimeout)
		default:
			last = err
		}
		if try == reportTries {
			return try, last
		}
		select {
		case <-ctx.Done():
			return try, fmt.Errorf("%w; the report's budget of %s is over", last, reportBudget)
		case <-time.After(reportRetryWait):
		}
	}
	return reportTries, last
}

// clipSnippet keeps a server's answer short in the log line.
func clipSnippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
