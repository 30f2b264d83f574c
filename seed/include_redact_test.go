package seed

import (
	"errors"
	"strings"
	"testing"
)

func TestRedactError(t *testing.T) {
	raw := "https://user:pw@example.invalid/p?X-Amz-Signature=secret"
	got := RedactError(errors.New(`Get "`+raw+`": dial tcp: refused`), raw)
	if strings.Contains(got, "secret") || strings.Contains(got, "pw@") {
		t.Errorf("RedactError kept a secret: %s", got)
	}
	if !strings.Contains(got, "example.invalid/p") {
		t.Errorf("RedactError lost the place: %s", got)
	}
}
