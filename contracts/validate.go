package contracts

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed schemas/*.schema.json names.json
var files embed.FS

// SchemaBase is the $id prefix of every schema.
const SchemaBase = "https://schemas.benchq.invalid/v1/"

// Schema names (file names without .schema.json), one per message type.
const (
	SchemaRequest       = "request"
	SchemaRejected      = "rejected"
	SchemaPlanned       = "planned"
	SchemaDeploy        = "deploy"
	SchemaTeardown      = "teardown"
	SchemaSUTReady      = "sut_ready"
	SchemaSUTFailed     = "sut_failed"
	SchemaSUTRemoved    = "sut_removed"
	SchemaSUTEdge       = "sut_edge"
	SchemaShardJob      = "shard_job"
	SchemaBarrierReady  = "barrier_ready"
	SchemaBarrierGo     = "barrier_go"
	SchemaInterval      = "interval"
	SchemaFinal         = "final"
	SchemaPhase         = "phase"
	SchemaExperimentEnd = "experiment_end"
	SchemaStop          = "stop"
	SchemaDrivers       = "drivers"
	SchemaDriverEnded   = "driver_ended"
	SchemaDriverLost    = "driver_lost"
)

// ErrInvalid is wrapped by every validation failure.
var ErrInvalid = errors.New("invalid message")

// ValidationError lists what is wrong with a message, field by field.
type ValidationError struct {
	Schema string
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fe.Field + ": " + fe.Message
	}
	return fmt.Sprintf("%s: %s", e.Schema, strings.Join(parts, "; "))
}

func (e *ValidationError) Unwrap() error { return ErrInvalid }

var (
	compileOnce sync.Once
	compiled    map[string]*jsonschema.Schema
	propsOf     map[string][]string // top-level property names per schema, for "allowed" hints
	compileErr  error
)

func compile() {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	compiled = map[string]*jsonschema.Schema{}
	propsOf = map[string][]string{}
	names, err := fs.Glob(files, "schemas/*.schema.json")
	if err != nil {
		compileErr = err
		return
	}
	for _, n := range names {
		raw, _ := files.ReadFile(n)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			compileErr = fmt.Errorf("parse %s: %w", n, err)
			return
		}
		if err := c.AddResource(SchemaBase+path.Base(n), doc); err != nil {
			compileErr = fmt.Errorf("add %s: %w", n, err)
			return
		}
		var top struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(raw, &top)
		name := strings.TrimSuffix(path.Base(n), ".schema.json")
		for p := range top.Properties {
			propsOf[name] = append(propsOf[name], p)
		}
		sort.Strings(propsOf[name])
	}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".schema.json")
		s, err := c.Compile(SchemaBase + path.Base(n))
		if err != nil {
			compileErr = fmt.Errorf("compile %s: %w", n, err)
			return
		}
		compiled[name] = s
	}
}

// SchemaNames lists the message schemas (envelope excluded).
func SchemaNames() []string {
	compileOnce.Do(compile)
	var out []string
	for n := range compiled {
		if n != "envelope" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Validate checks raw JSON against the named schema. A failure is a
// *ValidationError (errors.Is(err, ErrInvalid)) naming each bad field.
func Validate(schema string, raw []byte) error {
	compileOnce.Do(compile)
	if compileErr != nil {
		return compileErr
	}
	s, ok := compiled[schema]
	if !ok {
		return fmt.Errorf("unknown schema %q", schema)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return &ValidationError{Schema: schema, Errors: []FieldError{{Field: "(message)", Message: "not valid JSON: " + err.Error()}}}
	}
	err = s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	out := &ValidationError{Schema: schema}
	collect(ve, schema, &out.Errors)
	sort.SliceStable(out.Errors, func(i, j int) bool { return out.Errors[i].Field < out.Errors[j].Field })
	return out
}

var printer = message.NewPrinter(language.English)

// collect flattens the error tree into one FieldError per leaf.
func collect(ve *jsonschema.ValidationError, schema string, acc *[]FieldError) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			collect(c, schema, acc)
		}
		return
	}
	field := fieldPath(ve.InstanceLocation)
	switch k := ve.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			*acc = append(*acc, FieldError{Field: joinField(field, p), Message: "unknown field; allowed fields: " + strings.Join(allowed(schema, ve.InstanceLocation), ", ")})
		}
		return
	case *kind.FalseSchema:
		// unevaluatedProperties: false (a schema that extends the
		// envelope): a property no part of the schema names.
		if n := len(ve.InstanceLocation); n > 0 {
			*acc = append(*acc, FieldError{Field: field, Message: "unknown field; allowed fields: " + strings.Join(allowed(schema, ve.InstanceLocation[:n-1]), ", ")})
			return
		}
	case *kind.Required:
		for _, m := range k.Missing {
			*acc = append(*acc, FieldError{Field: joinField(field, m), Message: "is required"})
		}
		return
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			b, _ := json.Marshal(w)
			want[i] = string(b)
		}
		got, _ := json.Marshal(k.Got)
		*acc = append(*acc, FieldError{Field: field, Message: fmt.Sprintf("%s is not allowed; allowed: %s", got, strings.Join(want, ", "))})
		return
	case *kind.Pattern:
		// The value is quoted back with its control characters escaped:
		// the message is printed on a terminal, where they would act.
		got := strconv.Quote(k.Got)
		got = got[1 : len(got)-1]
		msg := fmt.Sprintf("'%s' does not match pattern '%s'", got, k.Want)
		if strings.ContainsFunc(k.Got, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }) {
			msg = fmt.Sprintf("'%s' holds a control character; free text may hold none (on a terminal an escape sequence would act, a right-to-left override reorder what is shown)", got)
		}
		*acc = append(*acc, FieldError{Field: field, Message: msg})
		return
	}
	*acc = append(*acc, FieldError{Field: field, Message: ve.ErrorKind.LocalizedString(printer)})
}

func allowed(schema string, loc []string) []string {
	if len(loc) == 0 {
		return propsOf[schema]
	}
	return []string{"see docs/events.md"}
}

// fieldPath renders ["dbms","0"] as "dbms[0]".
func fieldPath(loc []string) string {
	var b strings.Builder
	for _, t := range loc {
		if _, err := strconv.Atoi(t); err == nil {
			b.WriteString("[" + t + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(fieldName(t))
	}
	if b.Len() == 0 {
		return "(message)"
	}
	return b.String()
}

func joinField(parent, child string) string {
	if parent == "(message)" {
		return fieldName(child)
	}
	return parent + "." + fieldName(child)
}

// fieldName quotes a key that would not read as one field in a path: the
// empty key, or one with dots, brackets, quotes or blanks.
func fieldName(key string) string {
	if key == "" || strings.ContainsAny(key, ".[]\" \t\n") {
		return strconv.Quote(key)
	}
	return key
}

// Names returns names.json, for the test that keeps Go and the file in step.
func Names() []byte {
	b, _ := files.ReadFile("names.json")
	return b
}
