package ds

import (
	"context"

	"github.com/seedinit/seedinit/internal/safego"
)

// firstAnswer opens every metadata base URL at once (open is the cheap
// first request: a token, a version listing) and returns the index of the
// first that answers and what open gave, the others cancelled; -1 and
// every error when none does. A cloud that serves its metadata on IPv4
// and IPv6 (EC2's 169.254.169.254 and fd00:ec2::254, OpenStack's
// link-local fe80::a9fe:a9fe) is thus found on whichever the instance
// reaches, within one budget: tried one after the other, an IPv4 address
// that swallows packets used the budget before IPv6 was tried.
func firstAnswer[T any](ctx context.Context, bases []string, open func(context.Context, string) (T, error)) (int, T, []error) {
	var zero T
	if len(bases) == 1 {
		v, err := open(ctx, bases[0])
		if err != nil {
			return -1, zero, []error{err}
		}
		return 0, v, nil
	}
	raceCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		i   int
		v   T
		err error
	}
	answers := make(chan answer, len(bases))
	for i, base := range bases {
		safego.Go("open "+Redact(base), func() {
			v, err := open(raceCtx, base)
			answers <- answer{i: i, v: v, err: err}
		}, func(err error) { answers <- answer{i: i, err: err} })
	}
	errs := make([]error, len(bases))
	for range bases {
		a := <-answers
		if a.err == nil {
			return a.i, a.v, nil
		}
		errs[a.i] = a.err
	}
	return -1, zero, errs
}
