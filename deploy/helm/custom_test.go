package helmchart_test

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// customKinds are the custom resources the chart may render, which
// client-go's scheme does not know, by apiVersion and kind, with the
// fields of their spec the chart may set.
var customKinds = map[string]map[string]bool{
	"monitoring.coreos.com/v1 ServiceMonitor": {"selector": true, "namespaceSelector": true, "endpoints": true},
	"monitoring.coreos.com/v1 PodMonitor":     {"selector": true, "namespaceSelector": true, "podMetricsEndpoints": true},
	"monitoring.coreos.com/v1 PrometheusRule": {"groups": true},
	"keda.sh/v1alpha1 ScaledObject":           {"scaleTargetRef": true, "minReplicaCount": true, "maxReplicaCount": true, "pollingInterval": true, "cooldownPeriod": true, "triggers": true},
}

// decodeCustom decodes a manifest of one of customKinds strictly (no
// duplicate keys) into an unstructured object; ok is false for any other
// kind, left to the typed decoder.
func decodeCustom(source, doc string) (o *object, ok bool, err error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
		return nil, false, nil
	}
	fields, ok := customKinds[head.APIVersion+" "+head.Kind]
	if !ok {
		return nil, false, nil
	}
	var m map[string]any
	if err := yaml.UnmarshalStrict([]byte(doc), &m); err != nil {
		return nil, true, fmt.Errorf("%s: %w", source, err)
	}
	u := &unstructured.Unstructured{Object: m}
	spec, _ := m["spec"].(map[string]any)
	for k := range spec {
		if !fields[k] {
			return nil, true, fmt.Errorf("%s: %s: unknown field spec.%s", source, head.Kind, k)
		}
	}
	for k := range m {
		if k != "apiVersion" && k != "kind" && k != "metadata" && k != "spec" {
			return nil, true, fmt.Errorf("%s: %s: unknown field %s", source, head.Kind, k)
		}
	}
	return &object{source: source, obj: u, meta: u, kind: head.Kind}, true, nil
}

// isSubchart reports whether a manifest comes from a dependency in
// charts/, by its path or its "# Source: convstream/charts/nats/..." line.
func isSubchart(source, doc string) bool {
	if strings.Contains(source, "/charts/") {
		return true
	}
	for line := range strings.Lines(doc) {
		if src, ok := strings.CutPrefix(strings.TrimSpace(line), "# Source: "); ok {
			return strings.Contains(src, "/charts/")
		}
	}
	return false
}
