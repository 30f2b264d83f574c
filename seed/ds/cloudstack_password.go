package ds

// The CloudStack password server (also run by Exoscale): a plain HTTP
// server on the virtual router, port 8080, that hands the instance's
// password to whoever sends "DomU_Request: send_my_password", once, until
// told "saved_password".

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

const passwordServerPort = "8080"

// fetchPassword asks for the password and acknowledges it; "" when the
// server has none (or already handed it out).
func fetchPassword(ctx context.Context, client *metadataClient, url string) (string, error) {
	ask := http.Header{}
	ask.Set("DomU_Request", "send_my_password")
	body, err := client.get(ctx, url, ask)
	if err != nil {
		return "", err
	}
	password := strings.TrimSpace(string(body))
	switch password {
	case "", "saved_password":
		return "", nil
	case "bad_request":
		return "", errors.New("the password server answered bad_request")
	}
	ack := http.Header{}
	ack.Set("DomU_Request", "saved_password")
	if _, err := client.get(ctx, url, ack); err != nil {
		// The password is good; without the ack the server offers it
		// again next boot, which is harmless.
		client.log.Warn("acknowledge the password", "url", url, "err", err)
	}
	return password, nil
}

// passwordConfig is the datasource config cloud-init's CloudStack source
// gives for a password from the server: set it for the default user,
// unexpired, and allow SSH password logins. It is the datasource's config,
// not vendor-data, so that vendor_data.enabled: false keeps it, as in
// cloud-init.
func passwordConfig(password string) map[string]any {
	return map[string]any{
		"password":   password,
		"chpasswd":   map[string]any{"expire": false},
		"ssh_pwauth": true,
	}
}
