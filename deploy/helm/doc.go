// Package helmchart checks the convstream Helm chart in ./convstream.
//
// It is a Go module of its own, so that the Helm SDK and the Kubernetes API
// packages it needs stay out of the convstream module. Its tests render the
// chart with the Helm SDK (as `helm template` does) for the value sets in
// testdata/ and decode every manifest strictly into the typed Kubernetes
// objects of client-go's scheme: an unknown field, a wrong type or a
// duplicate key fails, and so do broken references inside the chart (a
// selector that misses the pods, a probe on a port that does not exist, a
// mount of a missing volume). `make helm-lint` runs them, then `helm lint
// --strict` and `helm template` from the helm module, whose output the
// tests decode again.
//
// The chart declares the official NATS chart as an optional dependency that
// is not vendored. Helm checks dependencies without looking at their
// conditions: `helm lint` warns that charts/ lacks it (an error under
// --strict) and `helm template` refuses to render. WriteOfflineCopy (and
// cmd/offlinechart) writes a copy of the chart without the dependencies
// that are both absent and disabled by default, which is what Helm would
// render anyway, so the chart can be linted without a network.
package helmchart
