package system

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

const urandom = "/dev/urandom"

// maxSeedBytes bounds a gzip'd seed once inflated.
const maxSeedBytes = 1 << 20

func runSeedRandom(ctx context.Context, env *apply.Env) error {
	cfg := apply.Config{}
	if env.Config["random_seed"] != nil {
		m, _, err := env.Config.Map("random_seed")
		if err != nil {
			return fmt.Errorf("read random_seed: %w", err)
		}
		cfg = m
	}
	var metadataSeed any
	if env.Seed != nil && env.Seed.Metadata != nil {
		metadataSeed = env.Seed.Metadata["random_seed"]
	}
	data, err := SeedData(cfg, metadataSeed)
	if err != nil {
		return err
	}
	file := urandom
	if s, ok, err := cfg.String("file"); err != nil {
		return fmt.Errorf("read random_seed: %w", err)
	} else if ok {
		file = s
	}
	var errs []error
	if len(data) > 0 {
		// The seed is never logged: it seeds the instance's keys.
		env.Log.Debug("adding random seed entropy", "bytes", len(data), "file", file)
		if err := writeSeed(env, file, data); err != nil {
			errs = append(errs, err)
		}
	}
	if err := runSeedCommand(ctx, env, cfg, file); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// writeSeed appends the seed to file. /dev/urandom means the running
// kernel's pool: only a System that offers RandomPool can reach it, and
// only when the target is the running system.
func writeSeed(env *apply.Env, file string, data []byte) error {
	if file == urandom {
		pool, ok := env.Sys.(RandomPool)
		if !ok || !env.Sys.Live() {
			env.Warn("seed_random: the kernel's random pool is not reachable from here (not the running system); %d bytes of seed not added", len(data))
			return nil
		}
		if err := pool.AddRandom(data); err != nil {
			return fmt.Errorf("add the random seed to the kernel pool: %w", err)
		}
		return nil
	}
	if strings.HasPrefix(file, "/dev/") || strings.HasPrefix(file, "/proc/") || strings.HasPrefix(file, "/sys/") {
		return fmt.Errorf("write the random seed to %s: only /dev/urandom or a file in the target is supported", file)
	}
	if err := env.Root.AppendFile(file, data, 0o600, rootfs.Owner{}); err != nil {
		return fmt.Errorf("write the random seed to %s: %w", file, err)
	}
	return nil
}

// SeedData is random_seed.data decoded by random_seed.encoding (raw,
// base64/b64, gzip/gz) followed by the metadata's random_seed, as
// cloud-init concatenates them.
func SeedData(cfg apply.Config, metadataSeed any) ([]byte, error) {
	var buf bytes.Buffer
	if text, _, err := cfg.String("data"); err != nil {
		return nil, fmt.Errorf("read random_seed: %w", err)
	} else if text != "" {
		enc, _, err := cfg.String("encoding")
		if err != nil {
			return nil, fmt.Errorf("read random_seed: %w", err)
		}
		raw, err := decodeSeed(text, enc)
		if err != nil {
			return nil, fmt.Errorf("decode random_seed.data: %w", err)
		}
		buf.Write(raw)
	}
	if metadataSeed != nil {
		s, err := apply.AsString(metadataSeed)
		if err != nil {
			return nil, fmt.Errorf("read the metadata's random_seed: %w", err)
		}
		buf.WriteString(s)
	}
	return buf.Bytes(), nil
}

func decodeSeed(text, encoding string) ([]byte, error) {
	switch strings.ToLower(encoding) {
	case "", "raw":
		return []byte(text), nil
	case "base64", "b64":
		return base64.StdEncoding.DecodeString(text)
	case "gzip", "gz":
		zr, err := gzip.NewReader(strings.NewReader(text))
		if err != nil {
			return nil, err
		}
		out, err := io.ReadAll(io.LimitReader(zr, maxSeedBytes+1))
		if err != nil {
			return nil, err
		}
		if len(out) > maxSeedBytes {
			return nil, fmt.Errorf("inflates to more than %d bytes", maxSeedBytes)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown encoding %q (want raw, base64, b64, gzip or gz)", encoding)
}

// runSeedCommand runs random_seed.command (pollinate and the like) in the
// target with RANDOM_SEED_FILE set; a missing command is an error only
// with command_required.
func runSeedCommand(ctx context.Context, env *apply.Env, cfg apply.Config, file string) error {
	required, err := cfg.Bool("command_required", false)
	if err != nil {
		return fmt.Errorf("read random_seed: %w", err)
	}
	argv, _, err := cfg.StringList("command", false)
	if err != nil {
		return fmt.Errorf("read random_seed: %w", err)
	}
	if len(argv) == 0 {
		if required {
			return errors.New("run random_seed.command: no command given but command_required is true")
		}
		return nil
	}
	bin, ok := apply.LookPath(env.Root, argv[0])
	if !ok {
		if required {
			return fmt.Errorf("run random_seed.command: %q is not available on this image but command_required is true", argv[0])
		}
		env.Log.Debug("random_seed command not found", "command", argv[0])
		return nil
	}
	cmd := apply.Command{Argv: append([]string{bin}, argv[1:]...), Env: []string{"RANDOM_SEED_FILE=" + file}}
	if err := env.Sys.Run(ctx, cmd); err != nil {
		return fmt.Errorf("run random_seed.command %s: %w", argv[0], err)
	}
	return nil
}
