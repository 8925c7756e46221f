package main

import "encoding/json"

func marshal(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	return b, err
}
