package helmchart_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// strictDecoder decodes YAML manifests into client-go's typed objects and
// fails on unknown fields, duplicate keys and wrong types.
var strictDecoder = serializerjson.NewSerializerWithOptions(
	serializerjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
	serializerjson.SerializerOptions{Yaml: true, Strict: true},
)

// object is one decoded manifest and where it came from.
type object struct {
	source string
	obj    runtime.Object
	meta   metav1.Object
	kind   string
}

// decodeManifest decodes one YAML document; empty documents (only
// comments or blanks) give nil.
func decodeManifest(source, doc string) (*object, error) {
	if isBlank(doc) {
		return nil, nil
	}
	if o, ok, err := decodeCustom(source, doc); ok {
		return o, err
	}
	obj, gvk, err := strictDecoder.Decode([]byte(doc), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%s: %s has no object metadata", source, gvk)
	}
	return &object{source: source, obj: obj, meta: m, kind: gvk.Kind}, nil
}

func isBlank(doc string) bool {
	for line := range strings.Lines(doc) {
		line = strings.TrimSpace(line)
		if line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

// objects is a rendered release, decoded.
type objects []*object

func (objs objects) ofKind(kind string) []*object {
	var out []*object
	for _, o := range objs {
		if o.kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func (objs objects) kinds() []string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.kind)
	}
	slices.Sort(ks)
	return ks
}

func (objs objects) deployment() *appsv1.Deployment {
	ds := objs.ofKind("Deployment")
	if len(ds) != 1 {
		return nil
	}
	return ds[0].obj.(*appsv1.Deployment)
}

// validate checks what the API server would check on these objects and
// what makes them work together: names, labels, selectors that find the
// pods, ports, probes, volumes, env, resources and the security context.
func validate(objs objects) error {
	var errs []error
	add := func(o *object, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s %s/%s: %s", o.source, o.kind, o.meta.GetName(), fmt.Sprintf(format, args...)))
	}
	seen := map[string]bool{}
	for _, o := range objs {
		key := o.kind + "/" + o.meta.GetName()
		if seen[key] {
			add(o, "rendered twice")
		}
		seen[key] = true
		nameErrs := validation.IsDNS1123Subdomain(o.meta.GetName())
		if o.kind == "Service" {
			nameErrs = validation.IsDNS1035Label(o.meta.GetName())
		}
		for _, e := range nameErrs {
			add(o, "name: %s", e)
		}
		if o.meta.GetNamespace() == "" {
			add(o, "no namespace")
		}
		for _, e := range metavalidation.ValidateLabels(o.meta.GetLabels(), field.NewPath("metadata", "labels")) {
			add(o, "%v", e)
		}
		for _, e := range apivalidation.ValidateAnnotations(o.meta.GetAnnotations(), field.NewPath("metadata", "annotations")) {
			add(o, "%v", e)
		}
		for _, l := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "helm.sh/chart"} {
			if o.meta.GetLabels()[l] == "" {
				add(o, "label %s missing", l)
			}
		}
	}

	// The workers' Deployment; the orchestrator's (TestOrchestrator checks
	// it) is left aside.
	var ds []*object
	for _, d := range objs.ofKind("Deployment") {
		if d.obj.(*appsv1.Deployment).Labels["app.kubernetes.io/component"] != "orchestrator" {
			ds = append(ds, d)
		}
	}
	if len(ds) != 1 {
		return errors.Join(append(errs, fmt.Errorf("want one workers' Deployment, got %d", len(ds)))...)
	}
	dep := ds[0].obj.(*appsv1.Deployment)
	podLabels := labels.Set(dep.Spec.Template.Labels)
	selects := func(o *object, what string, sel *metav1.LabelSelector) {
		if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
			add(o, "%s: empty selector", what)
			return
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			add(o, "%s: %v", what, err)
			return
		}
		if !s.Matches(podLabels) {
			add(o, "%s %s does not select the pods (%v)", what, s, podLabels)
		}
	}
	selects(ds[0], "spec.selector", dep.Spec.Selector)
	for _, e := range metavalidation.ValidateLabels(dep.Spec.Template.Labels, field.NewPath("spec", "template", "metadata", "labels")) {
		add(ds[0], "%v", e)
	}
	for _, e := range apivalidation.ValidateAnnotations(dep.Spec.Template.Annotations, field.NewPath("spec", "template", "metadata", "annotations")) {
		add(ds[0], "%v", e)
	}
	ports := validatePodSpec(&dep.Spec.Template.Spec, func(format string, args ...any) { add(ds[0], format, args...) })
	for i, c := range dep.Spec.Template.Spec.TopologySpreadConstraints {
		selects(ds[0], fmt.Sprintf("topologySpreadConstraints[%d].labelSelector", i), c.LabelSelector)
	}

	// An autoscaler (an HPA, or KEDA's from a ScaledObject) owns the
	// replica count: spec.replicas would reset it on every helm upgrade.
	hpas := objs.ofKind("HorizontalPodAutoscaler")
	scaled := len(hpas) > 0 || len(objs.ofKind("ScaledObject")) > 0
	if scaled && dep.Spec.Replicas != nil {
		add(ds[0], "spec.replicas set although an autoscaler scales it")
	}
	if !scaled && (dep.Spec.Replicas == nil || *dep.Spec.Replicas < 1) {
		add(ds[0], "spec.replicas missing without an autoscaler")
	}
	for _, o := range hpas {
		h := o.obj.(*autoscalingv2.HorizontalPodAutoscaler)
		ref := h.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || ref.Name != dep.Name {
			add(o, "scaleTargetRef %+v is not the Deployment %s", ref, dep.Name)
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
			add(o, "minReplicas %v, maxReplicas %d", h.Spec.MinReplicas, h.Spec.MaxReplicas)
		}
		if len(h.Spec.Metrics) == 0 {
			add(o, "no metrics")
		}
		for _, m := range h.Spec.Metrics {
			if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource == nil || m.Resource.Target.AverageUtilization == nil {
				add(o, "metric %+v: want a resource utilization", m)
				continue
			}
			if _, ok := dep.Spec.Template.Spec.Containers[0].Resources.Requests[m.Resource.Name]; !ok {
				add(o, "scales on %s utilization but the container requests no %s", m.Resource.Name, m.Resource.Name)
			}
		}
	}

	for _, o := range objs.ofKind("Service") {
		svc := o.obj.(*corev1.Service)
		selects(o, "spec.selector", &metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
		if len(svc.Spec.Ports) == 0 {
			add(o, "no ports")
		}
		for _, p := range svc.Spec.Ports {
			if p.TargetPort.Type == intstr.String && !ports[p.TargetPort.StrVal] {
				add(o, "targetPort %q is not a container port", p.TargetPort.StrVal)
			}
		}
	}

	for _, o := range objs.ofKind("PodDisruptionBudget") {
		pdb := o.obj.(*policyv1.PodDisruptionBudget)
		selects(o, "spec.selector", pdb.Spec.Selector)
		if (pdb.Spec.MinAvailable == nil) == (pdb.Spec.MaxUnavailable == nil) {
			add(o, "want exactly one of minAvailable and maxUnavailable")
		}
		for _, v := range []*intstr.IntOrString{pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable} {
			if v != nil && v.Type == intstr.String && !strings.HasSuffix(v.StrVal, "%") {
				add(o, "%q is neither a number nor a percentage", v.StrVal)
			}
		}
	}

	for _, o := range objs.ofKind("ServiceAccount") {
		if got := dep.Spec.Template.Spec.ServiceAccountName; got != o.meta.GetName() {
			add(ds[0], "runs as ServiceAccount %q, the chart creates %q", got, o.meta.GetName())
		}
	}

	for _, o := range objs.ofKind("ConfigMap") {
		cm := o.obj.(*corev1.ConfigMap)
		if cm.Labels["grafana_dashboard"] != "" { // a dashboard, for Grafana (TestAlertsAndDashboard)
			continue
		}
		used := false
		for _, v := range dep.Spec.Template.Spec.Volumes {
			used = used || (v.ConfigMap != nil && v.ConfigMap.Name == cm.Name)
		}
		if !used {
			add(o, "no volume of the Deployment mounts it")
		}
		for k, spec := range cm.Data {
			for _, e := range validation.IsConfigMapKey(k) {
				add(o, "key %q: %s", k, e)
			}
			var doc struct {
				Name       string `json:"name"`
				Processors []any  `json:"processors"`
			}
			if err := yaml.UnmarshalStrict([]byte(spec), &doc); err != nil {
				add(o, "%s: not a pipeline spec: %v", k, err)
			} else if len(doc.Processors) == 0 {
				add(o, "%s: no processors", k)
			}
		}
	}
	return errors.Join(errs...)
}

// validatePodSpec checks the worker's pod; it returns the names of the
// container ports.
func validatePodSpec(spec *corev1.PodSpec, fail func(format string, args ...any)) map[string]bool {
	ports := map[string]bool{}
	if len(spec.Containers) != 1 {
		fail("want one container, got %d", len(spec.Containers))
		return ports
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		for _, e := range validation.IsDNS1123Label(v.Name) {
			fail("volume %q: %s", v.Name, e)
		}
		if volumes[v.Name] {
			fail("volume %q twice", v.Name)
		}
		volumes[v.Name] = true
		var items []corev1.KeyToPath
		switch {
		case v.Secret != nil:
			if v.Secret.SecretName == "" {
				fail("volume %q: no secretName", v.Name)
			}
			items = v.Secret.Items
		case v.ConfigMap != nil:
			if v.ConfigMap.Name == "" {
				fail("volume %q: no configMap name", v.Name)
			}
			items = v.ConfigMap.Items
		}
		for _, it := range items {
			for _, e := range validation.IsConfigMapKey(it.Key) {
				fail("volume %q: key %q: %s", v.Name, it.Key, e)
			}
			if it.Path == "" || strings.HasPrefix(it.Path, "/") || strings.Contains(it.Path, "..") {
				fail("volume %q: bad path %q", v.Name, it.Path)
			}
		}
	}
	if spec.TerminationGracePeriodSeconds == nil || *spec.TerminationGracePeriodSeconds <= 0 {
		fail("no terminationGracePeriodSeconds: SIGTERM drain needs time")
	}
	if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		fail("pod securityContext.runAsNonRoot is not true")
	}

	c := spec.Containers[0]
	for _, e := range validation.IsDNS1123Label(c.Name) {
		fail("container %q: %s", c.Name, e)
	}
	if c.Image == "" || strings.HasSuffix(c.Image, ":") {
		fail("container %q: image %q", c.Name, c.Image)
	}
	for _, p := range c.Ports {
		if p.Name != "" {
			for _, e := range validation.IsValidPortName(p.Name) {
				fail("port %q: %s", p.Name, e)
			}
			if ports[p.Name] {
				fail("port %q twice", p.Name)
			}
			ports[p.Name] = true
		}
		for _, e := range validation.IsValidPortNum(int(p.ContainerPort)) {
			fail("port %q: %s", p.Name, e)
		}
	}
	probe := func(what string, p *corev1.Probe, path string) {
		if p == nil {
			fail("no %s probe", what)
			return
		}
		if p.HTTPGet == nil {
			fail("%s probe: want an HTTP GET", what)
			return
		}
		if path != "" && p.HTTPGet.Path != path {
			fail("%s probe path %q, want %q", what, p.HTTPGet.Path, path)
		}
		if p.HTTPGet.Port.Type == intstr.String && !ports[p.HTTPGet.Port.StrVal] {
			fail("%s probe on port %q, not a container port", what, p.HTTPGet.Port.StrVal)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")
	if c.StartupProbe != nil {
		probe("startup", c.StartupProbe, "")
	}
	mounts := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			fail("volumeMount %q: no such volume", m.Name)
		}
		if !strings.HasPrefix(m.MountPath, "/") || mounts[m.MountPath] {
			fail("volumeMount %q: bad or repeated mountPath %q", m.Name, m.MountPath)
		}
		mounts[m.MountPath] = true
	}
	env := map[string]bool{}
	for _, e := range c.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			fail("env %q: %s", e.Name, msg)
		}
		if env[e.Name] {
			fail("env %q twice", e.Name)
		}
		env[e.Name] = true
		if e.ValueFrom != nil && e.Value != "" {
			fail("env %q: both value and valueFrom", e.Name)
		}
		if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && (r.SecretKeyRef.Name == "" || r.SecretKeyRef.Key == "") {
			fail("env %q: secretKeyRef without name or key", e.Name)
		}
	}
	for name, limit := range c.Resources.Limits {
		if req, ok := c.Resources.Requests[name]; ok && req.Cmp(limit) > 0 {
			fail("resources: %s request %s above limit %s", name, req.String(), limit.String())
		}
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		fail("container has no securityContext")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		fail("container root filesystem is not read-only")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		fail("container allows privilege escalation")
	case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL"):
		fail("container keeps its capabilities")
	}
	return ports
}
