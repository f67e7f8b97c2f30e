package helmchart_test

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/releaseutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

const (
	chartDir    = "convstream"
	releaseName = "demo"
	namespace   = "chat"
	// kubeVersion is the cluster version rendered for; the chart needs 1.25+.
	kubeVersion = "v1.33.0"
)

// renderManifest renders the chart as `helm template` does, with value
// files from testdata/ and --set style overrides.
func renderManifest(t *testing.T, files []string, sets ...string) (manifest, notes string, err error) {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	opts := values.Options{Values: sets}
	for _, f := range files {
		opts.ValueFiles = append(opts.ValueFiles, filepath.Join("testdata", f))
	}
	vals, err := opts.MergeValues(getter.Providers{})
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{Log: t.Logf})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = releaseName
	install.Namespace = namespace
	install.KubeVersion = kv
	rel, err := install.Run(c, vals)
	if err != nil {
		return "", "", err
	}
	for _, h := range rel.Hooks {
		if !strings.Contains(h.Path, "/charts/") { // the NATS chart's test pod
			t.Errorf("unexpected hook %s", h.Path)
		}
	}
	return rel.Manifest, rel.Info.Notes, nil
}

// decodeRelease decodes every manifest of a release strictly and checks
// the objects together.
func decodeRelease(manifest string) (objects, error) {
	var objs objects
	manifests := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(manifests))
	for k := range manifests {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	for _, k := range keys {
		if isSubchart(k, manifests[k]) {
			continue // the vendored NATS chart's own objects (TestBundledNATSRenders)
		}
		o, err := decodeManifest(k, manifests[k])
		if err != nil {
			return nil, fmt.Errorf("not a valid Kubernetes object: %w", err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	if err := validate(objs); err != nil {
		return nil, fmt.Errorf("invalid release:\n%w", err)
	}
	return objs, nil
}

// render renders the chart and decodes and checks the result; a rendering
// error (a `fail` in the chart) is returned, an invalid object fails t.
func render(t *testing.T, files []string, sets ...string) (objects, string, error) {
	t.Helper()
	manifest, notes, err := renderManifest(t, files, sets...)
	if err != nil {
		return nil, "", err
	}
	objs, err := decodeRelease(manifest)
	if err != nil {
		t.Fatalf("%v\n%s", err, manifest)
	}
	return objs, notes, nil
}

func mustRender(t *testing.T, files []string, sets ...string) (objects, string) {
	t.Helper()
	objs, notes, err := render(t, files, sets...)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return objs, notes
}

func worker(t *testing.T, objs objects) corev1.Container {
	t.Helper()
	d := objs.deployment()
	if d == nil {
		t.Fatal("no Deployment")
	}
	return d.Spec.Template.Spec.Containers[0]
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

func wantArgs(t *testing.T, c corev1.Container, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(c.Args, w) {
			t.Errorf("args lack %q: %q", w, c.Args)
		}
	}
}

func noArgPrefix(t *testing.T, c corev1.Container, prefixes ...string) {
	t.Helper()
	for _, a := range c.Args {
		for _, p := range prefixes {
			if strings.HasPrefix(a, p) {
				t.Errorf("unexpected arg %q", a)
			}
		}
	}
}

func TestDefaults(t *testing.T) {
	objs, notes := mustRender(t, nil)
	if got, want := objs.kinds(), []string{"Deployment", "PodDisruptionBudget", "Service", "ServiceAccount"}; !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	d := objs.deployment()
	if d.Name != "demo-convstream" || d.Namespace != namespace || *d.Spec.Replicas != 1 {
		t.Errorf("deployment %s/%s replicas %d", d.Namespace, d.Name, *d.Spec.Replicas)
	}
	c := worker(t, objs)
	if c.Image != "ghcr.io/convstream/convstream:0.1.0" || !slices.Equal(c.Command, []string{"worker"}) {
		t.Errorf("image %q command %q", c.Image, c.Command)
	}
	wantExact := []string{
		"--nats-url=nats://nats:4222",
		"--subject-prefix=convstream",
		"--http=0.0.0.0:8080",
		"--stream-replicas=1",
		"--bucket-replicas=1",
		"--max-event-bytes=1048576",
		"--max-messages=10000",
		"--max-snapshot-bytes=0",
		"--cache-conversations=10000",
		"--cache-bytes=536870912",
		"--cache-idle=1m",
		"--cache-ttl=30m",
	}
	if !slices.Equal(c.Args, wantExact) {
		t.Errorf("args\n got %q\nwant %q", c.Args, wantExact)
	}
	env := envOf(c)
	if _, ok := env["OTEL_EXPORTER_OTLP_ENDPOINT"]; ok {
		t.Error("an OTLP endpoint by default: nothing should be exported")
	}
	if env["OTEL_SERVICE_NAME"].Value != "demo-convstream" {
		t.Errorf("OTEL_SERVICE_NAME %q", env["OTEL_SERVICE_NAME"].Value)
	}
	if a := env["OTEL_RESOURCE_ATTRIBUTES"].Value; !strings.Contains(a, "k8s.pod.name=$(POD_NAME)") || !strings.Contains(a, "service.version=0.1.0") {
		t.Errorf("OTEL_RESOURCE_ATTRIBUTES %q", a)
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "CONVSTREAM_NATS_") {
			t.Errorf("credentials env %s without a Secret", e.Name)
		}
	}
	spec := d.Spec.Template.Spec
	if *spec.TerminationGracePeriodSeconds != 60 || *spec.AutomountServiceAccountToken {
		t.Errorf("grace %d automount %v", *spec.TerminationGracePeriodSeconds, *spec.AutomountServiceAccountToken)
	}
	if len(spec.Volumes) != 1 || spec.Volumes[0].Name != "tmp" {
		t.Errorf("volumes %+v: want only /tmp", spec.Volumes)
	}
	if !strings.Contains(notes, "nats://nats:4222") || !strings.Contains(notes, "Telemetry: off") {
		t.Errorf("notes:\n%s", notes)
	}
}

func TestFull(t *testing.T) {
	objs, notes := mustRender(t, []string{"values-full.yaml"})
	if got, want := objs.kinds(), []string{"ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "ServiceAccount"}; !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	d := objs.deployment()
	c := worker(t, objs)
	if *d.Spec.Replicas != 3 || c.Image != "ghcr.io/convstream/convstream:0.1.0-rc.1" {
		t.Errorf("replicas %d image %s", *d.Spec.Replicas, c.Image)
	}
	wantArgs(t, c,
		"--nats-url=tls://nats-0.nats.messaging:4222,tls://nats-1.nats.messaging:4222",
		"--subject-prefix=chat-prod",
		"--nats-creds=/etc/convstream/nats/creds/nats.creds",
		"--nats-tls-ca=/etc/convstream/nats/tls/ca.crt",
		"--nats-tls-cert=/etc/convstream/nats/tls/tls.crt",
		"--nats-tls-key=/etc/convstream/nats/tls/tls.key",
		"--stream-replicas=3", "--bucket-replicas=3",
		"--stream-max-bytes=10737418240", "--stream-max-age=720h", "--duplicate-window=5m",
		"--placement-cluster=east", "--placement-tags=ssd,fast",
		"--partitions=6", "--pinned-ttl=15s", "--watch-idle=10m", "--snapshot-interval=100ms", "--snapshot-max-interval=2s",
		"--heads-confirmed-from=65536", "--store-stall-limit=3m", "--checkpoints=false", "--reconcile",
		"--max-event-bytes=2097152", "--max-messages=50000", "--max-snapshot-bytes=8388608",
		"--cache-conversations=20000",
		"--cache-bytes=536870912",
		"--cache-idle=1m",
		"--cache-ttl=30m",
		"--pipelines-dir=/etc/convstream/pipelines",
		"--ack-wait=2m",
	)
	if c.Args[len(c.Args)-1] != "--ack-wait=2m" {
		t.Errorf("extraArgs should come last: %q", c.Args)
	}
	env := envOf(c)
	for name, want := range map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector.observability:4318",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_SERVICE_NAME":           "convstream-prod",
		"OTEL_TRACES_SAMPLER":         "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG":     "0.1",
		"GOMEMLIMIT":                  "900MiB",
	} {
		if env[name].Value != want {
			t.Errorf("%s=%q, want %q", name, env[name].Value, want)
		}
	}
	if a := env["OTEL_RESOURCE_ATTRIBUTES"].Value; !strings.HasSuffix(a, ",deployment.environment=prod,team=chat") {
		t.Errorf("OTEL_RESOURCE_ATTRIBUTES %q", a)
	}
	if r := env["OTEL_EXPORTER_OTLP_HEADERS"].ValueFrom; r == nil || r.SecretKeyRef.Name != "otel-headers" || r.SecretKeyRef.Key != "headers" {
		t.Errorf("OTEL_EXPORTER_OTLP_HEADERS %+v", env["OTEL_EXPORTER_OTLP_HEADERS"])
	}

	vols := map[string]corev1.Volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	if v := vols["nats-creds"]; v.Secret == nil || v.Secret.SecretName != "convstream-nats-creds" || len(v.Secret.Items) != 1 {
		t.Errorf("nats-creds volume %+v", v)
	}
	if v := vols["nats-tls"]; v.Secret == nil || v.Secret.SecretName != "convstream-nats-tls" || len(v.Secret.Items) != 3 {
		t.Errorf("nats-tls volume %+v", v)
	}
	if v := vols["pipelines"]; v.ConfigMap == nil || v.ConfigMap.Name != "demo-convstream-pipelines" {
		t.Errorf("pipelines volume %+v", v)
	}
	cm := objs.ofKind("ConfigMap")[0].obj.(*corev1.ConfigMap)
	if keys := slices.Sorted(maps.Keys(cm.Data)); !slices.Equal(keys, []string{"default.yaml", "raw.yaml"}) {
		t.Errorf("pipeline files %v", keys)
	}
	if !strings.Contains(cm.Data["default.yaml"], "historyCount: 20") {
		t.Errorf("default.yaml:\n%s", cm.Data["default.yaml"])
	}
	if d.Spec.Template.Annotations["checksum/pipelines"] == "" || d.Spec.Template.Annotations["example.com/team"] != "chat" {
		t.Errorf("pod annotations %v", d.Spec.Template.Annotations)
	}
	if d.Spec.Template.Labels["tier"] != "backend" {
		t.Errorf("pod labels %v", d.Spec.Template.Labels)
	}
	pdb := objs.ofKind("PodDisruptionBudget")[0].obj.(*policyv1.PodDisruptionBudget)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 2 {
		t.Errorf("pdb %+v", pdb.Spec)
	}
	if !strings.Contains(notes, "OTLP to http://otel-collector.observability:4318") {
		t.Errorf("notes:\n%s", notes)
	}
}

// Changing a pipeline spec changes the pod template, so the workers roll.
func TestPipelineChangeRollsPods(t *testing.T) {
	a, _ := mustRender(t, []string{"values-full.yaml"})
	b, _ := mustRender(t, []string{"values-full.yaml"}, "pipelines.default.processors[0].config.historyCount=30")
	ca := a.deployment().Spec.Template.Annotations["checksum/pipelines"]
	cb := b.deployment().Spec.Template.Annotations["checksum/pipelines"]
	if ca == "" || ca == cb {
		t.Errorf("checksum %q then %q", ca, cb)
	}
}

func TestAutoscaling(t *testing.T) {
	objs, notes := mustRender(t, []string{"values-hpa.yaml"})
	if got, want := objs.kinds(), []string{"Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Service", "ServiceAccount"}; !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	c := worker(t, objs)
	env := envOf(c)
	for name, key := range map[string]string{"CONVSTREAM_NATS_USER": "username", "CONVSTREAM_NATS_PASSWORD": "password"} {
		r := env[name].ValueFrom
		if r == nil || r.SecretKeyRef == nil || r.SecretKeyRef.Name != "convstream-nats-user" || r.SecretKeyRef.Key != key {
			t.Errorf("%s = %+v", name, env[name])
		}
	}
	for _, a := range c.Args {
		if strings.Contains(a, "password") || strings.Contains(a, "user") {
			t.Errorf("credentials on the command line: %q", a)
		}
	}
	wantArgs(t, c, "--nats-tls-ca=/etc/convstream/nats/tls/ca.crt")
	noArgPrefix(t, c, "--nats-tls-cert", "--nats-tls-key", "--nats-creds", "--pipelines-dir")
	if !strings.Contains(notes, "2 to 10 (HorizontalPodAutoscaler)") {
		t.Errorf("notes:\n%s", notes)
	}
}

func TestTokenExistingConfigMap(t *testing.T) {
	objs, _ := mustRender(t, []string{"values-token.yaml"})
	if got, want := objs.kinds(), []string{"Deployment"}; !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	d := objs.deployment()
	c := worker(t, objs)
	if r := envOf(c)["CONVSTREAM_NATS_TOKEN"].ValueFrom; r == nil || r.SecretKeyRef.Name != "convstream-nats-token" || r.SecretKeyRef.Key != "token" {
		t.Errorf("CONVSTREAM_NATS_TOKEN %+v", envOf(c)["CONVSTREAM_NATS_TOKEN"])
	}
	wantArgs(t, c, "--pipelines-dir=/etc/convstream/pipelines")
	found := false
	for _, v := range d.Spec.Template.Spec.Volumes {
		found = found || (v.ConfigMap != nil && v.ConfigMap.Name == "convstream-pipelines")
	}
	if !found || d.Spec.Template.Spec.ServiceAccountName != "convstream" || c.StartupProbe != nil {
		t.Errorf("volumes %+v sa %q startup %v", d.Spec.Template.Spec.Volumes, d.Spec.Template.Spec.ServiceAccountName, c.StartupProbe)
	}
}

// With the bundled NATS chart the workers find its Service
// (TestBundledNATSRenders checks the subchart's side).
func TestBundledNATS(t *testing.T) {
	objs, notes := mustRender(t, []string{"values-nats.yaml"})
	c := worker(t, objs)
	wantArgs(t, c, "--nats-url=nats://demo-nats:4222", "--stream-replicas=3", "--bucket-replicas=3")
	if !strings.Contains(notes, "the bundled NATS chart") {
		t.Errorf("notes:\n%s", notes)
	}
	objs, _ = mustRender(t, []string{"values-nats.yaml"}, "nats.fullnameOverride=js", "nats.namespaceOverride=messaging")
	wantArgs(t, worker(t, objs), "--nats-url=nats://js.messaging.svc:4222")
	objs, _ = mustRender(t, []string{"values-nats.yaml"}, "natsConnection.url=nats://elsewhere:4222")
	wantArgs(t, worker(t, objs), "--nats-url=nats://elsewhere:4222")
}

// Contradictory values fail with a message that names them.
func TestRejectedValues(t *testing.T) {
	for name, tc := range map[string]struct {
		sets []string
		want string
	}{
		"two auth methods":  {[]string{"natsConnection.token.existingSecret=a", "natsConnection.credentials.existingSecret=b"}, "at most one NATS authentication method"},
		"cert without key":  {[]string{"natsConnection.tls.existingSecret=t", "natsConnection.tls.keyKey="}, "certKey and natsConnection.tls.keyKey go together"},
		"tls with no keys":  {[]string{"natsConnection.tls.existingSecret=t", "natsConnection.tls.keyKey=", "natsConnection.tls.certKey=", "natsConnection.tls.caKey="}, "all empty"},
		"hpa max below min": {[]string{"autoscaling.enabled=true", "autoscaling.minReplicas=5", "autoscaling.maxReplicas=2"}, "maxReplicas is below"},
		"hpa no target":     {[]string{"autoscaling.enabled=true", "autoscaling.targetCPUUtilizationPercentage=null"}, "without a CPU or memory target"},
		"bad pipeline name": {[]string{"pipelines.a/b.processors[0]=X"}, "must match"},
		"pipelines twice":   {[]string{"pipelines.a.processors[0]=X", "pipelinesExistingConfigMap=c"}, "not both"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := render(t, nil, tc.sets...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestRenderedDir decodes and checks the output of `helm template
// --output-dir` (the helm CLI, run by `make helm-lint`), one release a
// folder under $CONVSTREAM_HELM_RENDERED. Without it the test is skipped.
func TestRenderedDir(t *testing.T) {
	root := os.Getenv("CONVSTREAM_HELM_RENDERED")
	if root == "" {
		t.Skip("CONVSTREAM_HELM_RENDERED not set (make helm-lint sets it)")
	}
	releases, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(releases) == 0 {
		t.Fatalf("nothing rendered in %s", root)
	}
	for _, r := range releases {
		t.Run(r.Name(), func(t *testing.T) {
			var objs objects
			err := filepath.WalkDir(filepath.Join(root, r.Name()), func(path string, e fs.DirEntry, err error) error {
				if err != nil || e.IsDir() || !strings.HasSuffix(path, ".yaml") || strings.Contains(path, "/charts/") {
					return err
				}
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				for i, doc := range releaseutil.SplitManifests(string(data)) {
					o, err := decodeManifest(path+"#"+i, doc)
					if err != nil {
						return err
					}
					if o != nil {
						objs = append(objs, o)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("not a valid Kubernetes object: %v", err)
			}
			if err := validate(objs); err != nil {
				t.Fatalf("invalid release:\n%v", err)
			}
			t.Logf("%d objects: %v", len(objs), objs.kinds())
		})
	}
}

// The checks above must catch what a chart author gets wrong: each edit of
// the default release below breaks it in one way.
func TestValidatorCatchesMistakes(t *testing.T) {
	base, _, err := renderManifest(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeRelease(base); err != nil {
		t.Fatalf("the default release is invalid: %v", err)
	}
	for name, tc := range map[string]struct{ old, new, want string }{
		"unknown field":       {"  revisionHistoryLimit: 5\n", "  revisionHistoryLimit: 5\n  replica: 2\n", "unknown field"},
		"wrong type":          {"  replicas: 1\n", "  replicas: \"1\"\n", "cannot unmarshal"},
		"duplicate key":       {"  revisionHistoryLimit: 5\n", "  revisionHistoryLimit: 5\n  revisionHistoryLimit: 6\n", "already set"},
		"unknown kind":        {"kind: PodDisruptionBudget", "kind: PodDisruptionBudgett", "no kind"},
		"bad quantity":        {"cpu: 250m", "cpu: 250q", "quantities must match"},
		"service misses pods": {"  selector:\n    app.kubernetes.io/name: convstream", "  selector:\n    app.kubernetes.io/name: convstreamx", "does not select the pods"},
		"probe port":          {"              path: /readyz\n              port: http", "              path: /readyz\n              port: metrics", "not a container port"},
		"probe path":          {"path: /readyz", "path: /ready", "want \"/readyz\""},
		"missing volume":      {"            - name: tmp\n              mountPath: /tmp", "            - name: temp\n              mountPath: /tmp", "no such volume"},
		"writable root":       {"readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "not read-only"},
		"root":                {"        runAsNonRoot: true\n        runAsUser", "        runAsNonRoot: false\n        runAsUser", "runAsNonRoot is not true"},
		"bad label":           {"app.kubernetes.io/managed-by: Helm\nautomountServiceAccountToken", "app.kubernetes.io/managed-by: -Helm\nautomountServiceAccountToken", "metadata.labels"},
		"bad name":            {"name: demo-convstream\n  namespace: chat\n  labels:\n    helm.sh/chart: convstream-0.1.0\n    app.kubernetes.io/name: convstream\n    app.kubernetes.io/instance: demo\n    app.kubernetes.io/version: \"0.1.0\"\n    app.kubernetes.io/component: worker\n    app.kubernetes.io/part-of: convstream\n    app.kubernetes.io/managed-by: Helm\nspec:\n  type", "name: Demo_convstream\n  namespace: chat\n  labels:\n    helm.sh/chart: convstream-0.1.0\n    app.kubernetes.io/name: convstream\n    app.kubernetes.io/instance: demo\n    app.kubernetes.io/version: \"0.1.0\"\n    app.kubernetes.io/component: worker\n    app.kubernetes.io/part-of: convstream\n    app.kubernetes.io/managed-by: Helm\nspec:\n  type", "name:"},
		"no grace period":     {"terminationGracePeriodSeconds: 60", "terminationGracePeriodSeconds: 0", "terminationGracePeriodSeconds"},
		"request above limit": {"              memory: 256Mi", "              memory: 2Gi", "above limit"},
		"bad env name":        {"- name: POD_NAME\n", "- name: POD-NAME=\n", "env \"POD-NAME=\""},
	} {
		t.Run(name, func(t *testing.T) {
			if strings.Count(base, tc.old) != 1 {
				t.Fatalf("%q occurs %d times in the default release", tc.old, strings.Count(base, tc.old))
			}
			_, err := decodeRelease(strings.Replace(base, tc.old, tc.new, 1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
