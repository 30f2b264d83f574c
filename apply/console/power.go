package console

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seedinit/seedinit/apply"
)

// PowerRequest is a power_state change (apply.PowerRequest).
type PowerRequest = apply.PowerRequest

// PowerScheduler is the System capability that carries it out.
type PowerScheduler = apply.PowerScheduler

var shutdownFlags = map[string]string{"halt": "-H", "poweroff": "-P", "reboot": "-r"}

func runPowerStateChange(ctx context.Context, env *apply.Env) error {
	req, condition, ok, err := LoadPowerState(env.Config)
	if err != nil {
		// cloud-init refuses the change with a warning, not a failure.
		env.Warn("power_state: %v; not changing the power state", err)
		return nil
	}
	if !ok {
		return apply.Skip("no power_state in the config")
	}
	met, err := checkCondition(ctx, env, condition)
	if errors.Is(err, apply.ErrSkipped) {
		// The target cannot run the condition yet (no shell): neither
		// "go" nor "do not", so ask again next time.
		return fmt.Errorf("condition: %w", err)
	}
	if err != nil {
		env.Warn("power_state: condition: %v; not changing the power state", err)
		return nil
	}
	if !met {
		return apply.Skip("power_state condition not met")
	}
	ps, capable := env.Sys.(PowerScheduler)
	if !capable {
		env.Warn("power_state: this system cannot change the power state (%s requested); not done", req.Mode)
		return nil
	}
	env.Log.Info("power state change scheduled", "mode", req.Mode, "delay", req.Delay, "timeout", req.Timeout)
	if err := ps.SchedulePowerState(ctx, req); err != nil {
		return fmt.Errorf("schedule power state %s: %w", req.Mode, err)
	}
	return nil
}

// LoadPowerState reads power_state with cloud-init's rules: mode is
// required (halt, poweroff, reboot), delay is "now" or minutes ("+5", 5),
// timeout defaults to 30 seconds, condition is a bool, a shell string or
// an argv list (default true). ok is false when power_state is absent.
func LoadPowerState(cfg apply.Config) (req PowerRequest, condition any, ok bool, err error) {
	if cfg["power_state"] == nil {
		return PowerRequest{}, nil, false, nil
	}
	ps, _, err := cfg.Map("power_state")
	if err != nil {
		return PowerRequest{}, nil, true, errors.New("power_state is not a mapping")
	}
	mode, _ := ps["mode"].(string)
	flag, known := shutdownFlags[mode]
	if !known {
		return PowerRequest{}, nil, true, fmt.Errorf("power_state.mode is required, one of halt, poweroff, reboot; found %q", fmt.Sprint(ps["mode"]))
	}
	req = PowerRequest{Mode: mode, Timeout: 30 * time.Second}
	delay := "now"
	if v, has := ps["delay"]; has && v != "now" {
		s, err := apply.AsString(v)
		n, convErr := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || convErr != nil || n < 0 {
			return PowerRequest{}, nil, true, fmt.Errorf("power_state.delay must be 'now' or '+m' (minutes); found %q", fmt.Sprint(v))
		}
		delay = "+" + strconv.Itoa(n)
		req.Delay = time.Duration(n) * time.Minute
	}
	req.Command = []string{"shutdown", flag, delay}
	if msg, _, err := ps.String("message"); err == nil && msg != "" {
		req.Message = msg
		req.Command = append(req.Command, msg)
	}
	if v, has := ps["timeout"]; has {
		secs, err := toFloat(v)
		if err != nil || secs < 0 {
			return PowerRequest{}, nil, true, fmt.Errorf("power_state.timeout: cannot convert %q to seconds", fmt.Sprint(v))
		}
		req.Timeout = time.Duration(secs * float64(time.Second))
	}
	condition = true
	if v, has := ps["condition"]; has {
		switch v.(type) {
		case bool, string, []any:
			condition = v
		default:
			return PowerRequest{}, nil, true, fmt.Errorf("power_state.condition must be a bool, a string or a list; found %s", apply.TypeName(v))
		}
	}
	return req, condition, true, nil
}

func toFloat(v any) (float64, error) {
	switch n := v.(type) {
	case int64:
		return float64(n), nil
	case int:
		return float64(n), nil
	case float64:
		return n, nil
	case string:
		return strconv.ParseFloat(strings.TrimSpace(n), 64)
	}
	return 0, fmt.Errorf("not a number: %s", apply.TypeName(v))
}

// checkCondition runs a condition command in the target: exit 0 means
// go, exit 1 means do not, anything else is a warning and means do not.
func checkCondition(ctx context.Context, env *apply.Env, condition any) (bool, error) {
	var argv []string
	switch c := condition.(type) {
	case bool:
		return c, nil
	case string:
		argv = []string{"/bin/sh", "-c", c}
	case []any:
		l, err := apply.AsStringList(c, false)
		if err != nil || len(l) == 0 {
			return false, fmt.Errorf("want a non-empty list of strings")
		}
		argv = l
	}
	err := env.Sys.Run(ctx, apply.Command{Argv: argv})
	if err == nil {
		return true, nil
	}
	var exit interface{ ExitCode() int }
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return false, nil
	}
	return false, fmt.Errorf("run %q: %w", strings.Join(argv, " "), err)
}
