package helmchart_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// TestOrchestrator renders the orchestrator's Deployment: the image's
// orchestrator command with the model and NATS flags, keys from a Secret
// as environment (never arguments), its HTTP port with the liveness,
// readiness and startup probes on /healthz and /readyz, and labels that
// the workers' selector does not match (nor its own the workers' pods);
// the rest of the release still passes validate. With the ServiceMonitor
// on, a PodMonitor scrapes the orchestrator's pods at /metrics.
func TestOrchestrator(t *testing.T) {
	objs, _ := mustRender(t, nil, "orchestrator.enabled=true", "orchestrator.model=openai:gpt-4.1-mini",
		"orchestrator.apiKeysSecret=model-keys", "orchestrator.openaiBaseURL=http://vllm:8000/v1", "orchestrator.concurrency=8")
	var worker, orch *appsv1.Deployment
	var rest objects
	for _, o := range objs {
		d, ok := o.obj.(*appsv1.Deployment)
		switch {
		case ok && strings.HasSuffix(d.Name, "-orchestrator"):
			orch = d
			continue
		case ok:
			worker = d
		}
		rest = append(rest, o)
	}
	if worker == nil || orch == nil {
		t.Fatalf("kinds %v: want the workers' and the orchestrator's Deployments", objs.kinds())
	}
	if err := validate(rest); err != nil {
		t.Errorf("the release without the orchestrator: %v", err)
	}
	c := orch.Spec.Template.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"orchestrator"}) || c.Image != "ghcr.io/convstream/convstream:0.1.0" {
		t.Errorf("command %q image %q", c.Command, c.Image)
	}
	want := []string{"--nats-url=nats://nats:4222", "--subject-prefix=convstream", "--model=openai:gpt-4.1-mini", "--concurrency=8", "--http=0.0.0.0:8080"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "model-keys" {
		t.Errorf("envFrom %+v", c.EnvFrom)
	}
	if env := envOf(c); env["OPENAI_BASE_URL"].Value != "http://vllm:8000/v1" {
		t.Errorf("env %+v", c.Env)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("ports %+v", c.Ports)
	}
	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe, "/healthz ": c.StartupProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != strings.TrimSpace(name) || p.HTTPGet.Port.String() != "http" {
			t.Errorf("probe %s: %+v", name, p)
		}
	}
	ws, _ := metav1LabelSelector(worker)
	os, _ := metav1LabelSelector(orch)
	if ws.Matches(labels.Set(orch.Spec.Template.Labels)) || os.Matches(labels.Set(worker.Spec.Template.Labels)) {
		t.Error("the workers' and the orchestrator's selectors overlap")
	}
	if !os.Matches(labels.Set(orch.Spec.Template.Labels)) {
		t.Error("the orchestrator's selector misses its pods")
	}
	if objs, _ := mustRender(t, nil); len(objs.ofKind("Deployment")) != 1 {
		t.Error("an orchestrator by default")
	}

	objs, _ = mustRender(t, []string{"values-observability.yaml"}, "orchestrator.enabled=true", "orchestrator.httpPort=9090")
	pms := objs.ofKind("PodMonitor")
	if len(pms) != 1 {
		t.Fatalf("kinds %v: want one PodMonitor", objs.kinds())
	}
	pm := pms[0].obj.(*unstructured.Unstructured)
	ep, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(ep) != 1 || ep[0].(map[string]any)["path"] != "/metrics" || ep[0].(map[string]any)["port"] != "http" {
		t.Errorf("PodMonitor endpoints %v", ep)
	}
	sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	for _, o := range objs.ofKind("Deployment") {
		d := o.obj.(*appsv1.Deployment)
		if matches := labels.SelectorFromSet(sel).Matches(labels.Set(d.Spec.Template.Labels)); matches != strings.HasSuffix(d.Name, "-orchestrator") {
			t.Errorf("PodMonitor selector %v matches %s: %v", sel, d.Name, matches)
		}
		if strings.HasSuffix(d.Name, "-orchestrator") && d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort != 9090 {
			t.Errorf("orchestrator.httpPort=9090: ports %+v", d.Spec.Template.Spec.Containers[0].Ports)
		}
	}
}

func metav1LabelSelector(d *appsv1.Deployment) (labels.Selector, error) {
	return labels.SelectorFromSet(d.Spec.Selector.MatchLabels), nil
}
