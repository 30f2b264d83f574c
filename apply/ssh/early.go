package ssh

import (
	"sync"
	"time"

	"github.com/seedinit/seedinit/internal/safego"
)

// early are host keys started before the run's config is known. An RSA
// key takes seconds of a slow CPU; on a machine with a CPU to spare PID 1
// starts one as soon as the root it boots is on its first boot and the
// kernel's pool is ready, while the datasource is still looked for. The
// ssh module's Prestart takes it when the config asks for an RSA key that
// Run makes; otherwise it is dropped. RSA keys come from the system's
// secure source whatever the run's Random (Go 1.26), so an early key is
// the one Run would have made, and its comment is written when taken.
var early = struct {
	sync.Mutex
	keys map[string]chan signerResult
}{keys: map[string]chan signerResult{}}

// StartEarlyRSA starts making an RSA host key in the background for this
// process's ssh module to take; done, when set, is told when it is made
// and how long that took. A key already started is not started again.
// Only RSA is started early: the other types take milliseconds, and their
// keys read the run's Random, which the config may yet replace.
func StartEarlyRSA(done func(start time.Time, d time.Duration, err error)) {
	early.Lock()
	defer early.Unlock()
	if _, ok := early.keys["rsa"]; ok {
		return
	}
	ch := make(chan signerResult, 1)
	early.keys["rsa"] = ch
	start := time.Now()
	safego.Go("make the early rsa host key", func() {
		priv, err := generateSigner("rsa", nil)
		if done != nil {
			done(start, time.Since(start), err)
		}
		ch <- signerResult{priv: priv, err: err}
	}, func(err error) { ch <- signerResult{err: err} })
}

// takeEarly hands over the early key of keyType, if one was started; it is
// taken once.
func takeEarly(keyType string) (chan signerResult, bool) {
	early.Lock()
	defer early.Unlock()
	ch, ok := early.keys[keyType]
	delete(early.keys, keyType)
	return ch, ok
}
