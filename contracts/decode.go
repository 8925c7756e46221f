package contracts

import (
	"encoding/json"
	"fmt"
)

// Decode checks raw JSON against the named schema, then unmarshals it into
// v. Every failure means the message itself is malformed: the bus treats
// them as permanent (bus.Decode), as redelivering cannot fix them.
func Decode(schema string, raw []byte, v any) error {
	if err := Validate(schema, raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode %s: %w", schema, err)
	}
	return nil
}

// DecodeSubject decodes a message by the type its subject carries
// (ForSubject), so that every consumer decodes by subject in one way.
func DecodeSubject(subject string, raw []byte) (Message, error) {
	schema, msg, err := ForSubject(subject)
	if err != nil {
		return nil, err
	}
	if err := Decode(schema, raw, msg); err != nil {
		return nil, err
	}
	return msg, nil
}
