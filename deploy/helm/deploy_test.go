package helmchart_test

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestObservability renders the ServiceMonitor and the KEDA ScaledObject
// on the durable consumer's lag.
func TestObservability(t *testing.T) {
	objs, _ := mustRender(t, []string{"values-observability.yaml"})
	if got := objs.kinds(); !strings.Contains(strings.Join(got, ","), "ScaledObject") || !strings.Contains(strings.Join(got, ","), "ServiceMonitor") {
		t.Fatalf("kinds %v", got)
	}
	sm := objs.ofKind("ServiceMonitor")[0].obj.(*unstructured.Unstructured)
	ep, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(ep) != 1 || ep[0].(map[string]any)["path"] != "/metrics" || ep[0].(map[string]any)["port"] != "http" {
		t.Errorf("ServiceMonitor endpoints %v", ep)
	}
	if sm.GetLabels()["release"] != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor labels %v", sm.GetLabels())
	}
	so := objs.ofKind("ScaledObject")[0].obj.(*unstructured.Unstructured)
	target, _, _ := unstructured.NestedString(so.Object, "spec", "scaleTargetRef", "name")
	if target != objs.deployment().Name {
		t.Errorf("ScaledObject targets %q, want %q", target, objs.deployment().Name)
	}
	triggers, _, _ := unstructured.NestedSlice(so.Object, "spec", "triggers")
	if len(triggers) != 1 {
		t.Fatalf("triggers %v", triggers)
	}
	tr := triggers[0].(map[string]any)
	md := tr["metadata"].(map[string]any)
	want := map[string]any{"natsServerMonitoringEndpoint": "nats.nats.svc:8222", "account": "$G", "stream": "CONVSTREAM_EVENTS",
		"consumer": "convstream-worker", "lagThreshold": "1000", "activationLagThreshold": "1", "useHttps": "false"}
	if tr["type"] != "nats-jetstream" || len(md) != len(want) {
		t.Errorf("trigger %v", tr)
	}
	for k, v := range want {
		if md[k] != v {
			t.Errorf("trigger metadata %s = %v, want %v", k, md[k], v)
		}
	}
	if min, _, _ := unstructured.NestedInt64(so.Object, "spec", "minReplicaCount"); min != 0 {
		t.Errorf("minReplicaCount %d", min)
	}
	if len(objs.ofKind("HorizontalPodAutoscaler")) != 0 {
		t.Error("an HPA beside the ScaledObject")
	}
	wantArgs(t, worker(t, objs), "--max-event-bytes=2097152", "--cache-bytes=2147483648", "--stream-max-bytes=53687091200")

	objs, _ = mustRender(t, []string{"values-observability.yaml"}, "subjectPrefix=tenant-a.chat", "keda.consumer=w")
	md = mustTrigger(t, objs)
	if md["stream"] != "TENANT-A_CHAT_EVENTS" || md["consumer"] != "w" {
		t.Errorf("trigger for prefix tenant-a.chat: %v", md)
	}

	for sets, want := range map[string]string{
		"autoscaling.enabled=true":     "not both",
		"keda.natsMonitoringEndpoint=": "natsMonitoringEndpoint is required",
		"jetstream.partitions=3":       "partitions",
		"service.enabled=false":        "needs service.enabled",
	} {
		if _, _, err := render(t, []string{"values-observability.yaml"}, sets); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", sets, err, want)
		}
	}
}

func mustTrigger(t *testing.T, objs objects) map[string]any {
	t.Helper()
	so := objs.ofKind("ScaledObject")[0].obj.(*unstructured.Unstructured)
	triggers, _, _ := unstructured.NestedSlice(so.Object, "spec", "triggers")
	return triggers[0].(map[string]any)["metadata"].(map[string]any)
}

// TestTenantValues: a per-tenant release mounts its own credentials.
func TestTenantValues(t *testing.T) {
	objs, _ := mustRender(t, []string{"values-tenant.yaml"})
	wantArgs(t, worker(t, objs), "--subject-prefix=tenant-a", "--nats-creds=/etc/convstream/nats/creds/nats.creds", "--nats-url=nats://nats.nats.svc:4222")
}

// TestTemplateOffline renders the chart as `helm template
// deploy/helm/convstream` does on a fresh clone: its dependencies are all
// in charts/ (helm checks them whatever their condition), and without
// --kube-version, so with Helm's default capabilities. With nats.enabled
// the vendored NATS chart renders its StatefulSet. Before the NATS chart
// was vendored, helm refused: "found in Chart.yaml, but missing in
// charts/ directory: nats"; and the chart's kubeVersion >=1.25 refused
// Helm's default v1.20 without --kube-version.
func TestTemplateOffline(t *testing.T) {
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := action.CheckDependencies(c, c.Metadata.Dependencies); err != nil {
		t.Fatalf("helm template would refuse the chart: %v", err)
	}
	for _, nats := range []bool{false, true} {
		c, err := loader.Load(chartDir) // Run drops the disabled dependencies from c
		if err != nil {
			t.Fatal(err)
		}
		install := action.NewInstall(&action.Configuration{Log: t.Logf})
		install.DryRun, install.ClientOnly, install.Replace = true, true, true
		install.ReleaseName, install.Namespace = releaseName, namespace
		vals := map[string]any{"nats": map[string]any{"enabled": nats}}
		rel, err := install.Run(c, vals)
		if err != nil {
			t.Fatalf("nats.enabled=%v, default capabilities (%s): %v", nats, chartutil.DefaultCapabilities.KubeVersion.Version, err)
		}
		var sts bool
		for _, m := range releaseutil.SplitManifests(rel.Manifest) {
			if isSubchart("", m) && strings.Contains(m, "kind: StatefulSet") {
				sts = true
			}
		}
		if sts != nats {
			t.Errorf("nats.enabled=%v: NATS StatefulSet rendered: %v", nats, sts)
		}
		if _, err := decodeRelease(rel.Manifest); err != nil {
			t.Errorf("nats.enabled=%v: %v", nats, err)
		}
	}
}
