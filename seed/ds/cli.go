package ds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seedinit/seedinit/seed"
)

// PrintResult writes a search's decision and its evidence, one line per
// datasource, or the Result as JSON.
func PrintResult(w io.Writer, res *Result, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	if res.Datasource != "" {
		fmt.Fprintf(w, "datasource: %s", res.Datasource)
		if res.Seed != nil {
			fmt.Fprintf(w, " (%s, instance-id %s)", res.Seed.Subplatform, res.Seed.InstanceID)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "datasource: none found")
	}
	fmt.Fprintf(w, "candidates from: %s; search took %s\n", res.ListFrom, res.Duration.Round(time.Millisecond))
	if res.WantsNetwork {
		fmt.Fprintln(w, "network sources remain: bring the network up and search again")
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DATASOURCE\tPROBE\tOUTCOME\tTIME\tEVIDENCE / DETAIL")
	for _, a := range res.Attempts {
		detail := a.Evidence
		if a.ProbeError != "" {
			detail += " (probe error: " + a.ProbeError + ")"
		}
		if a.Detail != "" && a.Detail != "probe: "+a.Evidence {
			detail += "; " + a.Detail
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Datasource, a.Verdict, a.Outcome,
			a.Duration.Round(time.Millisecond), strings.ReplaceAll(detail, "\n", " "))
	}
	return tw.Flush()
}

// RunDetect is `seedinit detect`: search with the budget and print the
// decision. The error is ErrNoDatasource (wrapped) when none was found.
func RunDetect(ctx context.Context, w io.Writer, env *Env, budget time.Duration, asJSON bool) (*Result, error) {
	res, err := Detect(ctx, env, budget)
	if perr := PrintResult(w, res, asJSON); perr != nil {
		return res, errors.Join(err, perr)
	}
	return res, err
}

// FetchRequest is what `seedinit fetch` was asked.
type FetchRequest struct {
	// Datasource names one source to fetch without probing ("" searches).
	Datasource string
	// URL overrides that source's endpoint (--url).
	URL string
	// Out is the directory to write (NoCloud layout + instance-data.json).
	Out string
	// Budget bounds the search (0: configured or DefaultBudget).
	Budget time.Duration
}

// RunFetch is `seedinit fetch [--datasource NAME] [--url URL] --out DIR`:
// it finds (or fetches the named) datasource, writes its seed to Out and
// prints one line saying what it wrote.
func RunFetch(ctx context.Context, w io.Writer, env *Env, req FetchRequest) (*seed.Seed, error) {
	if req.Out == "" {
		return nil, errors.New("fetch: --out DIR is required")
	}
	if req.URL != "" && req.Datasource == "" {
		return nil, errors.New("fetch: --url needs --datasource NAME")
	}
	var s *seed.Seed
	if req.Datasource != "" {
		budget := req.Budget
		if budget <= 0 {
			budget = AnsweredBudget
		}
		fctx, cancel := context.WithTimeout(ctx, budget)
		defer cancel()
		var err error
		if s, err = FetchNamed(fctx, env, req.Datasource, req.URL); err != nil {
			return nil, fmt.Errorf("fetch: %w", err)
		}
	} else {
		res, err := Detect(ctx, env, req.Budget)
		if err != nil {
			PrintResult(w, res, false)
			return nil, fmt.Errorf("fetch: %w", err)
		}
		s = res.Seed
	}
	if err := FetchToDir(s, req.Out); err != nil {
		return s, fmt.Errorf("fetch: %w", err)
	}
	fmt.Fprintf(w, "wrote the %s seed of instance %s (%s) to %s\n", s.Datasource, s.InstanceID, s.Subplatform, req.Out)
	return s, nil
}
