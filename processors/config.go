package processors

import (
	"errors"
	"fmt"
	"github.com/convstream/convstream/internal/jsvalue"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalidConfig is matched (errors.Is) by every configuration error.
var ErrInvalidConfig = errors.New("invalid processor config")

// FieldError reports a problem with one configuration field. Path is the
// field's location inside the processor's config, such as
// "memories.identities[0].description"; it is empty for the config as a
// whole.
type FieldError struct {
	Path    string
	Problem string
}

// Error returns "PATH: PROBLEM".
func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Problem
	}
	return e.Path + ": " + e.Problem
}

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidConfig }

func fieldErr(path, format string, args ...any) *FieldError {
	return &FieldError{Path: path, Problem: fmt.Sprintf(format, args...)}
}

// configValue is implemented by config field types that decode themselves
// from a generic JSON value.
type configValue interface {
	decodeConfig(v any) error
}

var configValueType = reflect.TypeFor[configValue]()

// openStruct is implemented by config structs describing foreign records
// (tool manifests, memories) whose unknown keys are ignored instead of
// reported.
type openStruct interface {
	ignoresUnknownFields()
}

var openStructType = reflect.TypeFor[openStruct]()

// decodeConfig fills the struct pointed to by dst from a generic JSON object
// (as decoded by encoding/json or YAML). Field names come from json tags;
// fields tagged "-" are not configurable. Unknown keys and wrongly typed
// values are reported as *FieldError values, all of them, joined.
func decodeConfig(raw map[string]any, dst any) error {
	if raw == nil {
		return nil
	}
	var errs []error
	decodeValue("", raw, reflect.ValueOf(dst).Elem(), &errs)
	return errors.Join(errs...)
}

func joinPath(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

func decodeValue(path string, v any, dst reflect.Value, errs *[]error) {
	if dst.CanAddr() && dst.Addr().Type().Implements(configValueType) {
		if err := dst.Addr().Interface().(configValue).decodeConfig(v); err != nil {
			*errs = append(*errs, fieldErr(path, "%s", err.Error()))
		}
		return
	}
	if v == nil {
		dst.SetZero()
		return
	}
	switch dst.Kind() {
	case reflect.Pointer:
		elem := reflect.New(dst.Type().Elem())
		decodeValue(path, v, elem.Elem(), errs)
		dst.Set(elem)
	case reflect.Interface:
		dst.Set(reflect.ValueOf(v))
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			*errs = append(*errs, fieldErr(path, "must be a string, got %s", jsvalue.TypeName(v)))
			return
		}
		dst.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			*errs = append(*errs, fieldErr(path, "must be a boolean, got %s", jsvalue.TypeName(v)))
			return
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		f, ok := toFloat(v)
		if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			*errs = append(*errs, fieldErr(path, "must be an integer, got %s", jsvalue.TypeName(v)))
			return
		}
		dst.SetInt(int64(f))
	case reflect.Float64:
		f, ok := toFloat(v)
		if !ok {
			*errs = append(*errs, fieldErr(path, "must be a number, got %s", jsvalue.TypeName(v)))
			return
		}
		dst.SetFloat(f)
	case reflect.Slice:
		items, ok := v.([]any)
		if !ok {
			*errs = append(*errs, fieldErr(path, "must be an array, got %s", jsvalue.TypeName(v)))
			return
		}
		out := reflect.MakeSlice(dst.Type(), len(items), len(items))
		for i, item := range items {
			decodeValue(path+"["+strconv.Itoa(i)+"]", item, out.Index(i), errs)
		}
		dst.Set(out)
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			*errs = append(*errs, fieldErr(path, "must be an object, got %s", jsvalue.TypeName(v)))
			return
		}
		out := reflect.MakeMapWithSize(dst.Type(), len(obj))
		for _, k := range sortedKeys(obj) {
			elem := reflect.New(dst.Type().Elem()).Elem()
			decodeValue(joinPath(path, k), obj[k], elem, errs)
			out.SetMapIndex(reflect.ValueOf(k), elem)
		}
		dst.Set(out)
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			*errs = append(*errs, fieldErr(path, "must be an object, got %s", jsvalue.TypeName(v)))
			return
		}
		decodeStruct(path, obj, dst, errs)
	default:
		*errs = append(*errs, fieldErr(path, "cannot be configured"))
	}
}

func decodeStruct(path string, obj map[string]any, dst reflect.Value, errs *[]error) {
	t := dst.Type()
	known := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		known[name] = i
	}
	open := dst.CanAddr() && dst.Addr().Type().Implements(openStructType)
	for _, k := range sortedKeys(obj) {
		i, ok := known[k]
		if !ok {
			if !open {
				*errs = append(*errs, fieldErr(joinPath(path, k), "unknown field"))
			}
			continue
		}
		decodeValue(joinPath(path, k), obj[k], dst.Field(i), errs)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func toFloat(v any) (float64, bool) { return jsvalue.Float(v) }

// optionalText is a string setting that tolerates any JSON value: a
// non-string value counts as unset. Used where the reference treats
// malformed stored values (such as an agent's system role) as absent.
type optionalText string

func (t *optionalText) decodeConfig(v any) error {
	s, _ := v.(string)
	*t = optionalText(s)
	return nil
}
