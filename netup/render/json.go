package render

import (
	"encoding/json"
	"fmt"

	"github.com/seedinit/seedinit/netup/model"
)

// JSONPath is where the JSON dump of the model goes: seedinit's own
// record of the network it configured, beside cloud-init's state.
const JSONPath = "var/lib/seedinit/network.json"

// JSON renders the model itself, indented, for `seedinit net-convert -O
// json` and for tools that want seedinit's view of the network.
func JSON(n *model.Network) (Files, error) {
	data, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render network model as JSON: %w", err)
	}
	return Files{JSONPath: append(data, '\n')}, nil
}
