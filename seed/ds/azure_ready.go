package ds

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/seedinit/seedinit/seed"
)

// AzureWireserverURL is Azure's fabric endpoint (the "wireserver"),
// which is the same address in every Azure region.
const AzureWireserverURL = "http://168.63.129.16"

// azureWireserverOption is the DHCP option in which Azure may name another
// wireserver address.
const azureWireserverOption = 245

// The protocol version and agent name cloud-init 22.4 (like WALinuxAgent)
// sends on every wireserver request.
const (
	azureWireserverVersion = "2012-11-30"
	azureAgentName         = "WALinuxAgent"
)

// ReadyReporter is a datasource whose cloud must be told that the
// instance has provisioned: Azure fails a VM's deployment after a while
// when nothing reports ready.
type ReadyReporter interface {
	ReportReady(ctx context.Context, env *Env, s *seed.Seed) error
}

// ReadyReporterFor returns the datasource that found s when its cloud
// wants to be told that the instance has provisioned.
func ReadyReporterFor(s *seed.Seed) (ReadyReporter, bool) {
	d, ok := Lookup(s.Datasource)
	if !ok {
		return nil, false
	}
	r, ok := d.(ReadyReporter)
	return r, ok
}

// wireserverBase is the wireserver's URL: cloud-init's order is DHCP
// option 245 when the lease has it, else the fixed address; the
// wireserver_url setting is seedinit's, for tests and odd networks.
func wireserverBase(env *Env, settings map[string]any) string {
	if url := settingString(settings, "wireserver_url"); url != "" {
		return strings.TrimRight(url, "/")
	}
	if ip := env.DHCPSiteOptions[azureWireserverOption]; len(ip) == 4 {
		return "http://" + netip.AddrFrom4([4]byte(ip)).String()
	}
	return AzureWireserverURL
}

// ReportReady reads the goal state from the wireserver and posts a health
// report of state Ready for its incarnation, container and role instance,
// as cloud-init's GoalStateHealthReporter does in 22.4. cloud-init sends
// it in its local stage, before any module has run; seedinit sends it
// once the stages PID 1 runs have finished, so that "ready" means the
// users, keys and files are there.
//
// Settings (datasource: {Azure: {...}}): wireserver_url (seedinit's, over
// DHCP option 245 and the fixed address), timeout, retries.
func (d azureDatasource) ReportReady(ctx context.Context, env *Env, s *seed.Seed) error {
	base := wireserverBase(env, env.Settings(d.Name()))
	client := newMetadataClient(env, d.Name())
	client.header.Set("x-ms-agent-name", azureAgentName)
	client.header.Set("x-ms-version", azureWireserverVersion)
	body, err := client.get(ctx, base+"/machine/?comp=goalstate", nil)
	if err != nil {
		return fmt.Errorf("report ready to Azure: fetch the goal state: %w", err)
	}
	gs, err := parseAzureGoalState(body)
	if err != nil {
		return fmt.Errorf("report ready to Azure: %w", err)
	}
	report := azureHealthReport(gs, "Ready")
	if _, err := client.do(ctx, http.MethodPost, base+"/machine?comp=health",
		http.Header{"Content-Type": {"text/xml; charset=utf-8"}}, report); err != nil {
		return fmt.Errorf("report ready to Azure: post the health report: %w", err)
	}
	env.Logger().Info("reported ready to Azure", "incarnation", gs.Incarnation, "container", gs.ContainerID, "instance", gs.InstanceID)
	return nil
}

// azureGoalState holds what a health report must name from the goal
// state.
type azureGoalState struct {
	Incarnation string `xml:"Incarnation"`
	ContainerID string `xml:"Container>ContainerId"`
	InstanceID  string `xml:"Container>RoleInstanceList>RoleInstance>InstanceId"`
}

func parseAzureGoalState(body []byte) (azureGoalState, error) {
	var doc struct {
		XMLName xml.Name `xml:"GoalState"`
		azureGoalState
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		return azureGoalState{}, fmt.Errorf("read the goal state: %w", err)
	}
	gs := doc.azureGoalState
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"Incarnation", gs.Incarnation},
		{"Container/ContainerId", gs.ContainerID},
		{"Container/RoleInstanceList/RoleInstance/InstanceId", gs.InstanceID},
	} {
		if strings.TrimSpace(f.value) == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return azureGoalState{}, fmt.Errorf("read the goal state: no %s", strings.Join(missing, ", "))
	}
	gs.Incarnation = strings.TrimSpace(gs.Incarnation)
	gs.ContainerID = strings.TrimSpace(gs.ContainerID)
	gs.InstanceID = strings.TrimSpace(gs.InstanceID)
	return gs, nil
}

// azureHealthReport is the document cloud-init posts for a health state.
func azureHealthReport(gs azureGoalState, state string) []byte {
	esc := func(s string) string {
		var b bytes.Buffer
		xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	return fmt.Appendf(nil, `<?xml version="1.0" encoding="utf-8"?>
<Health xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema">
  <GoalStateIncarnation>%s</GoalStateIncarnation>
  <Container>
    <ContainerId>%s</ContainerId>
    <RoleInstanceList>
      <Role>
        <InstanceId>%s</InstanceId>
        <Health>
          <State>%s</State>
        </Health>
      </Role>
    </RoleInstanceList>
  </Container>
</Health>
`, esc(gs.Incarnation), esc(gs.ContainerID), esc(gs.InstanceID), esc(state))
}

var _ ReadyReporter = azureDatasource{}
