package ds

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seedinit/seedinit/internal/safego"
	"github.com/seedinit/seedinit/seed"
)

// Stage selects which sources a search may use.
type Stage int

const (
	// StageAll tries local sources, then network ones.
	StageAll Stage = iota
	// StageLocal tries only sources that need no network (PID 1 before
	// DHCP); Result.WantsNetwork says whether a network search should
	// follow.
	StageLocal
	// StageNetwork tries only the sources that need the network.
	StageNetwork
)

// Outcome of one datasource in a search.
const (
	OutcomeChosen  = "chosen"
	OutcomeFailed  = "failed"
	OutcomeSkipped = "skipped"
	OutcomeUnused  = "not needed"
)

// Attempt is what the search did with one datasource.
type Attempt struct {
	Datasource string `json:"datasource"`
	// Probe is the probe's verdict and evidence; ProbeError its error.
	Probe      Verdict `json:"-"`
	Verdict    string  `json:"probe"`
	Evidence   string  `json:"evidence"`
	ProbeError string  `json:"probe_error,omitempty"`
	// Outcome is chosen, failed, skipped or not needed; Detail says why.
	Outcome  string        `json:"outcome"`
	Detail   string        `json:"detail,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// Result is a search's decision and the evidence behind it.
type Result struct {
	// Seed is the chosen source's seed, nil when none answered.
	Seed *seed.Seed `json:"-"`
	// Datasource is the chosen source's name, "" when none.
	Datasource string `json:"datasource"`
	// ListFrom says where the list of candidates came from:
	// "kernel command line (ci.ds=...)", "datasource_list in cloud.cfg",
	// "built-in list".
	ListFrom string    `json:"list_from"`
	Attempts []Attempt `json:"attempts"`
	// WantsNetwork is set by a local search that found nothing but has
	// network sources left to try; NetworkCandidates names them.
	WantsNetwork      bool          `json:"wants_network,omitempty"`
	NetworkCandidates []string      `json:"network_candidates,omitempty"`
	Duration          time.Duration `json:"duration_ns"`
}

// ErrNoDatasource is returned (wrapped) when no source gave a seed.
var ErrNoDatasource = errors.New("no datasource found")

// AnsweredBudget bounds a network search once some metadata service has
// answered: the budget covers "nothing answers", not slow big user-data.
const AnsweredBudget = 30 * time.Second

// Detect finds the datasource and fetches its seed, trying local sources
// first and then network sources in parallel. budget (0: the configured
// one, else DefaultBudget) bounds the search while nothing answers.
func Detect(ctx context.Context, env *Env, budget time.Duration) (*Result, error) {
	return DetectStage(ctx, env, budget, StageAll)
}

type candidate struct {
	ds       Datasource
	attempt  *Attempt
	evidence Evidence
}

// DetectStage is Detect limited to one stage's sources.
func DetectStage(ctx context.Context, env *Env, budget time.Duration, stage Stage) (*Result, error) {
	start := time.Now()
	if budget <= 0 {
		budget = env.Config.Budget
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	log := env.Logger()
	res := &Result{}
	names, from, explicit := candidateNames(env)
	res.ListFrom = from
	var cands []*candidate
	seen := map[string]bool{}
	for _, n := range names {
		if strings.EqualFold(n, "None") {
			continue
		}
		d, ok := Lookup(n)
		if !ok {
			res.Attempts = append(res.Attempts, Attempt{Datasource: n, Verdict: "unknown", Outcome: OutcomeSkipped, Detail: "seedinit has no datasource of this name"})
			continue
		}
		if seen[d.Name()] {
			continue
		}
		seen[d.Name()] = true
		res.Attempts = append(res.Attempts, Attempt{Datasource: d.Name()})
		cands = append(cands, &candidate{ds: d})
	}
	for i := range cands {
		// res.Attempts may have unknown names in between: find ours.
		for j := range res.Attempts {
			if res.Attempts[j].Datasource == cands[i].ds.Name() && res.Attempts[j].Verdict != "unknown" {
				cands[i].attempt = &res.Attempts[j]
			}
		}
	}

	searchCtx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	// Probes are local and cheap; they run one after another.
	for _, c := range cands {
		t := time.Now()
		var ev Evidence
		var err error
		// A probe that panics is a probe that failed: the others go on.
		if perr := safego.Run("probe "+c.ds.Name(), func() { ev, err = c.ds.Probe(searchCtx, env) }); perr != nil {
			ev, err = Evidence{Verdict: NotFound, Reason: "the probe panicked"}, perr
		}
		c.evidence = ev
		c.attempt.Probe, c.attempt.Verdict, c.attempt.Evidence = ev.Verdict, ev.Verdict.String(), ev.Reason
		if err != nil {
			c.attempt.ProbeError = err.Error()
		}
		c.attempt.Duration = time.Since(t)
	}
	// Local sources need a positive probe. Network sources: those with a
	// positive marker; failing any, those that cannot be ruled out
	// (ds-identify's "maybe"). The user's explicit choice overrides both.
	var local, tryNet []*candidate
	anyNetFound := false
	for _, c := range cands {
		if (c.ds.NeedsNetwork() || c.evidence.Network) && c.evidence.Verdict == Found {
			anyNetFound = true
		}
	}
	for _, c := range cands {
		network := c.ds.NeedsNetwork() || c.evidence.Network
		switch {
		case !network && (explicit || c.evidence.Verdict == Found):
			local = append(local, c)
		case network && (explicit || c.evidence.Verdict == Found || !anyNetFound && c.evidence.Verdict == Maybe):
			tryNet = append(tryNet, c)
		default:
			c.attempt.Outcome, c.attempt.Detail = OutcomeSkipped, "probe: "+c.evidence.Reason
		}
	}
	var failures []error
	finish := func(c *candidate, s *seed.Seed) (*Result, error) {
		c.attempt.Outcome = OutcomeChosen
		res.Seed, res.Datasource = s, c.ds.Name()
		for i := range res.Attempts {
			if res.Attempts[i].Outcome == "" {
				res.Attempts[i].Outcome = OutcomeUnused
			}
		}
		res.Duration = time.Since(start)
		log.Info("datasource chosen", "datasource", c.ds.Name(), "subplatform", s.Subplatform, "instance_id", s.InstanceID, "duration", res.Duration)
		return res, nil
	}
	if stage != StageNetwork {
		for _, c := range local {
			t := time.Now()
			var s *seed.Seed
			var err error
			if perr := safego.Run("fetch "+c.ds.Name(), func() { s, err = fetchChecked(searchCtx, env, c.ds) }); perr != nil {
				s, err = nil, perr
			}
			c.attempt.Duration += time.Since(t)
			if err != nil {
				c.attempt.Outcome, c.attempt.Detail = OutcomeFailed, err.Error()
				failures = append(failures, err)
				log.Warn("datasource failed", "datasource", c.ds.Name(), "error", err.Error())
				continue
			}
			return finish(c, s)
		}
	}
	if stage == StageLocal {
		for _, c := range tryNet {
			c.attempt.Outcome, c.attempt.Detail = OutcomeSkipped, "needs the network"
			res.NetworkCandidates = append(res.NetworkCandidates, c.ds.Name())
		}
		res.WantsNetwork = len(tryNet) > 0
		res.Duration = time.Since(start)
		return res, fmt.Errorf("%w among local sources", ErrNoDatasource)
	}
	if len(tryNet) > 0 {
		c, s, errs := raceNetwork(ctx, env, tryNet, budget, start)
		failures = append(failures, errs...)
		if c != nil {
			return finish(c, s)
		}
	}
	res.Duration = time.Since(start)
	if len(failures) == 0 {
		return res, fmt.Errorf("%w: no source was found by its probe", ErrNoDatasource)
	}
	return res, fmt.Errorf("%w: %w", ErrNoDatasource, errors.Join(failures...))
}

// fetchChecked fetches and checks that the seed names its instance.
func fetchChecked(ctx context.Context, env *Env, d Datasource) (*seed.Seed, error) {
	s, err := d.Fetch(ctx, env)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("fetch %s: no seed returned", d.Name())
	}
	if s.InstanceID == "" {
		return nil, fmt.Errorf("fetch %s: the metadata has no instance-id", d.Name())
	}
	if s.Datasource == "" {
		s.Datasource = d.Name()
	}
	return s, nil
}

// raceNetwork fetches from all candidates at once and picks the first in
// list order that succeeds: a later source's answer waits only for the
// earlier ones still running. Nothing answering at all ends the race at
// budget; once any service has answered it may go on to AnsweredBudget.
func raceNetwork(ctx context.Context, env *Env, cands []*candidate, budget time.Duration, start time.Time) (*candidate, *seed.Seed, []error) {
	raceCtx, cancel := context.WithTimeout(ctx, AnsweredBudget)
	defer cancel()
	var answered atomic.Bool
	type outcome struct {
		i   int
		s   *seed.Seed
		err error
		d   time.Duration
	}
	results := make(chan outcome, len(cands))
	var wg sync.WaitGroup
	for i, c := range cands {
		cenv := *env
		base := env.HTTP()
		cenv.Fetcher = base.withAnswerHook(func() { answered.Store(true) })
		wg.Add(1)
		t := time.Now()
		safego.Go("datasource "+c.ds.Name(), func() {
			defer wg.Done()
			s, err := fetchChecked(raceCtx, &cenv, c.ds)
			results <- outcome{i: i, s: s, err: err, d: time.Since(t)}
		}, func(err error) { results <- outcome{i: i, err: err, d: time.Since(t)} })
	}
	remaining := budget - time.Since(start)
	if remaining < 0 {
		remaining = 0
	}
	giveUp := time.NewTimer(remaining)
	defer giveUp.Stop()
	done := make([]*outcome, len(cands))
	var errs []error
	pending := len(cands)
	pick := func() int {
		for i := range cands {
			if done[i] == nil {
				return -1 // an earlier source may still answer
			}
			if done[i].err == nil {
				return i
			}
		}
		return -1
	}
	for pending > 0 {
		select {
		case o := <-results:
			pending--
			done[o.i] = &o
			c := cands[o.i]
			c.attempt.Duration += o.d
			if o.err != nil {
				c.attempt.Outcome, c.attempt.Detail = OutcomeFailed, o.err.Error()
				errs = append(errs, o.err)
			}
			if i := pick(); i >= 0 {
				cancel()
				return cands[i], done[i].s, errs
			}
		case <-giveUp.C:
			if answered.Load() {
				continue // something answers: let it finish, within AnsweredBudget
			}
			cancel()
			for i, c := range cands {
				if done[i] == nil {
					c.attempt.Outcome = OutcomeFailed
					c.attempt.Detail = fmt.Sprintf("nothing answered within the %s budget", budget)
					c.attempt.Duration = time.Since(start)
				}
			}
			errs = append(errs, fmt.Errorf("no metadata service answered within %s", budget))
			waitBriefly(&wg)
			return nil, nil, errs
		case <-raceCtx.Done():
			for i, c := range cands {
				if done[i] == nil {
					c.attempt.Outcome = OutcomeFailed
					c.attempt.Detail = "stopped: " + raceCtx.Err().Error()
				}
			}
			errs = append(errs, fmt.Errorf("network search stopped: %w", raceCtx.Err()))
			waitBriefly(&wg)
			return nil, nil, errs
		}
	}
	// Everything finished; a success after an earlier failure is picked
	// above, so here all failed or the earliest success is pending none.
	if i := pick(); i >= 0 {
		return cands[i], done[i].s, errs
	}
	return nil, nil, errs
}

// waitBriefly lets cancelled fetches unwind, without trusting them to.
func waitBriefly(wg *sync.WaitGroup) {
	ch := make(chan struct{})
	safego.Go("wait for the cancelled fetches", func() { wg.Wait(); close(ch) }, nil)
	select {
	case <-ch:
	case <-time.After(100 * time.Millisecond):
	}
}

// candidateNames is the list to search and where it came from; explicit
// means the user named the sources (kernel command line, or a
// datasource_list of one), so their probes do not veto them.
func candidateNames(env *Env) (names []string, from string, explicit bool) {
	if n, param := CmdlineDatasources(env.Cmdline); len(n) > 0 {
		return n, "kernel command line (" + param + ")", true
	}
	if l := env.Config.DatasourceList; l != nil {
		real := 0
		for _, n := range l {
			if !strings.EqualFold(n, "None") {
				real++
			}
		}
		return l, "datasource_list in cloud.cfg", real == 1
	}
	var out []string
	for _, d := range All() {
		out = append(out, d.Name())
	}
	return out, "built-in list", false
}

// FetchNamed fetches one named datasource without probing (fetch
// --datasource NAME [--url URL]); endpoint overrides its URL.
func FetchNamed(ctx context.Context, env *Env, name, endpoint string) (*seed.Seed, error) {
	d, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("fetch datasource %q: seedinit has no datasource of this name", name)
	}
	cenv := *env
	cenv.Endpoint = endpoint
	return fetchChecked(ctx, &cenv, d)
}
