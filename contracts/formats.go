package contracts

import (
	"encoding/json"
	"slices"
	"sync"
)

var outputFormats = sync.OnceValue(func() map[string][]string {
	var n struct {
		Formats map[string]json.RawMessage `json:"output_formats"`
	}
	if err := json.Unmarshal(Names(), &n); err != nil {
		panic("contracts/names.json: output_formats is malformed") // embedded: a build that passed its tests has it
	}
	out := map[string][]string{}
	for output, raw := range n.Formats {
		var formats []string
		if json.Unmarshal(raw, &formats) == nil {
			out[output] = formats
		}
	}
	return out
})

// OutputFormats are the formats the reporter writes output ("summary",
// "export", "compare") in, the default first (names.json, "output_formats").
func OutputFormats(output string) []string { return slices.Clone(outputFormats()[output]) }
