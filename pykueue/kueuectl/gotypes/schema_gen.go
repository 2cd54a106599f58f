//go:build ignore

// Dumps how Go's encoding/json writes the Kueue v1beta2 types kueuectl prints: for every
// struct reachable from the printed kinds, its fields in declaration order with their JSON
// names, types and omitempty/omitzero options. regenerate.py runs it in a module that
// requires the pinned Kueue release and stores the result as gotypes.json.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Types with a MarshalJSON of their own, by what the Python side must do with them.
var custom = map[string]string{
	"k8s.io/apimachinery/pkg/api/resource.Quantity":   "quantity",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":       "time",
	"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime":  "microtime",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":   "duration",
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString": "intorstring",
	"k8s.io/apimachinery/pkg/runtime.RawExtension":    "rawext",
	"k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1":   "rawext",
}

var marshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

var structs = map[string][]any{}

func describe(t reflect.Type) any {
	if name, ok := custom[t.PkgPath()+"."+t.Name()]; ok {
		return name
	}
	if t.Kind() != reflect.Ptr && (t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler)) {
		panic("a type with its own MarshalJSON needs an entry in custom: " + t.String())
	}
	switch t.Kind() {
	case reflect.Ptr:
		return map[string]any{"ptr": describe(t.Elem())}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return map[string]any{"list": describe(t.Elem())}
	case reflect.Map:
		return map[string]any{"map": describe(t.Elem())}
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.Interface:
		return "any"
	case reflect.Struct:
		if _, ok := t.MethodByName("IsZero"); ok {
			panic("an omitzero-relevant IsZero method needs handling: " + t.String())
		}
		name := shortName(t)
		if _, seen := structs[name]; !seen {
			structs[name] = nil // breaks cycles
			structs[name] = fields(t)
		}
		return map[string]any{"struct": name}
	}
	panic("unhandled kind " + t.String())
}

func shortName(t reflect.Type) string {
	p := t.PkgPath()
	for _, prefix := range []string{"k8s.io/api/", "k8s.io/apimachinery/pkg/apis/", "sigs.k8s.io/kueue/apis/"} {
		p = strings.TrimPrefix(p, prefix)
	}
	return strings.ReplaceAll(p, "/", ".") + "." + t.Name()
}

func fields(t reflect.Type) []any {
	out := []any{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		parts := strings.Split(tag, ",")
		var options []string
		for _, option := range parts[1:] {
			if option == "omitempty" || option == "omitzero" {
				options = append(options, option)
			}
		}
		name := parts[0]
		if f.Anonymous && name == "" {
			options = append(options, "inline")
		} else if name == "" {
			name = f.Name
		}
		out = append(out, []any{name, describe(f.Type), strings.Join(options, ",")})
	}
	return out
}

func main() {
	kinds := map[string]any{}
	for name, obj := range map[string]any{
		"ClusterQueue": kueue.ClusterQueue{}, "ClusterQueueList": kueue.ClusterQueueList{},
		"LocalQueue": kueue.LocalQueue{}, "LocalQueueList": kueue.LocalQueueList{},
		"ResourceFlavor": kueue.ResourceFlavor{}, "ResourceFlavorList": kueue.ResourceFlavorList{},
		"Workload": kueue.Workload{}, "WorkloadList": kueue.WorkloadList{},
	} {
		kinds[name] = describe(reflect.TypeOf(obj))
	}
	out, err := json.MarshalIndent(map[string]any{"kinds": kinds, "structs": structs}, "", " ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(append(out, '\n'))
}
