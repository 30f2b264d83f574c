package ssh

import (
	"crypto/rand"
	"sync"
	"testing"
)

// BenchmarkGenerateHostKeys makes an ed25519 and an ecdsa host key in
// parallel, as the module does, to compare with ssh-keygen's time.
func BenchmarkGenerateHostKeys(b *testing.B) {
	for b.Loop() {
		var wg sync.WaitGroup
		for _, keyType := range []string{"ed25519", "ecdsa"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := GenerateHostKey(keyType, "root@bench", rand.Reader); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
}

// BenchmarkGenerateRSAHostKey is the slow one: RSA 3072.
func BenchmarkGenerateRSAHostKey(b *testing.B) {
	for b.Loop() {
		if _, err := GenerateHostKey("rsa", "root@bench", rand.Reader); err != nil {
			b.Fatal(err)
		}
	}
}
