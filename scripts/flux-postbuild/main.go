// flux-postbuild runs Flux's own post-build substitution code for Hoist's comparison tests
// (test/integration/processors/post-build/): github.com/fluxcd/pkg/kustomize's
// SubstituteVariables, which kustomize-controller calls for every object of a Kustomization with
// spec.postBuild, and the pieces under it — github.com/fluxcd/pkg/envsubst and kustomize's
// Resource.AsYAML (the text envsubst runs over). The controller never runs it. Built by scripts/ensure-tools.sh from the Go module proxy at the pinned version.
//
// Reads JSON requests, one per line, from stdin and writes one JSON answer per line:
//
//	{"op":"yaml","object":{...}}                       -> {"yaml":"..."} | {"error":"..."}
//	{"op":"envsubst","text":"...","vars":{},"strict":true} -> {"out":"..."} | {"error":"..."}
//	{"op":"substitute","object":{...},"vars":{},"strict":true,"always":false}
//	                                                   -> {"object":{...}} | {"skipped":true} | {"error":"..."}
//
// "substitute" passes the variables as the Kustomization's spec.postBuild.substitute and runs
// with SubstituteWithDryRun, so no cluster is read; the values go through the same code as
// values read from ConfigMaps and Secrets (newlines removed, names checked).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/hasher"
	"sigs.k8s.io/kustomize/api/resource"
)

type request struct {
	Op     string            `json:"op"`
	Object json.RawMessage   `json:"object"`
	Text   string            `json:"text"`
	Vars   map[string]string `json:"vars"`
	Strict bool              `json:"strict"`
	Always bool              `json:"always"`
}

type answer struct {
	YAML    *string                `json:"yaml,omitempty"`
	Out     *string                `json:"out,omitempty"`
	Object  map[string]interface{} `json:"object,omitempty"`
	Skipped bool                   `json:"skipped,omitempty"`
	Error   string                 `json:"error,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<30)
	out := json.NewEncoder(os.Stdout)
	factory := resource.NewFactory(&hasher.Hasher{})
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			os.Exit(2)
		}
		if err := out.Encode(serve(factory, req)); err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		os.Exit(2)
	}
}

func serve(factory *resource.Factory, req request) (a answer) {
	defer func() {
		// Go code that panics (a slice out of range) answers an error, as controller-runtime's
		// recovery turns a panicking reconcile into one
		if r := recover(); r != nil {
			a = answer{Error: fmt.Sprintf("panic: %v", r)}
		}
	}()
	switch req.Op {
	case "yaml":
		// what SubstituteVariables runs envsubst over: the resource's AsYAML (its MarshalJSON,
		// then sigs.k8s.io/yaml JSONToYAML)
		res, err := resourceOf(factory, req.Object)
		if err != nil {
			return answer{Error: err.Error()}
		}
		y, err := res.AsYAML()
		if err != nil {
			return answer{Error: err.Error()}
		}
		s := string(y)
		return answer{YAML: &s}
	case "envsubst":
		s, err := envsubst.Eval(req.Text, func(name string) (string, bool) {
			v, ok := req.Vars[name]
			if !req.Strict {
				return v, true
			}
			return v, ok
		})
		if err != nil {
			return answer{Error: err.Error()}
		}
		return answer{Out: &s}
	case "substitute":
		res, err := resourceOf(factory, req.Object)
		if err != nil {
			return answer{Error: err.Error()}
		}
		substitute := map[string]interface{}{}
		for k, v := range req.Vars {
			substitute[k] = v
		}
		ks := unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
			"kind":       "Kustomization",
			"metadata":   map[string]interface{}{"name": "reference", "namespace": "default"},
			"spec":       map[string]interface{}{"postBuild": map[string]interface{}{"substitute": substitute}},
		}}
		got, err := kustomize.SubstituteVariables(context.Background(), nil, ks, res,
			kustomize.SubstituteWithDryRun(true),
			kustomize.SubstituteWithStrict(req.Strict),
			kustomize.SubstituteWithAlways(req.Always))
		if err != nil {
			return answer{Error: err.Error()}
		}
		if got == nil {
			return answer{Skipped: true}
		}
		m, err := got.Map()
		if err != nil {
			return answer{Error: err.Error()}
		}
		return answer{Object: m}
	}
	return answer{Error: "unknown op " + req.Op}
}

func resourceOf(factory *resource.Factory, object json.RawMessage) (*resource.Resource, error) {
	var obj map[string]interface{}
	if err := json.Unmarshal(object, &obj); err != nil {
		return nil, err
	}
	return factory.FromMap(obj)
}
