// Package image builds the convstream container image without a container
// daemon: the static binaries worker, convctl and orchestrator for each platform, on
// nothing but a passwd file naming the non-root user, as an OCI image index
// written to an OCI image layout.
//
// It is a Go module of its own, so that go-containerregistry stays out of
// the convstream module. The build is reproducible: the binaries are built
// with -trimpath and no cgo, and every timestamp in the layers and configs
// is Config.Created (SOURCE_DATE_EPOCH in cmd/buildimage), so one commit
// gives one digest (TestReproducible). The Dockerfile at the repository's
// root builds the same image with Docker; TestDockerfileMatches keeps it so.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is; the Dockerfile states the same (TestDockerfileMatches).
const (
	// BinDir is where the binaries are, on PATH.
	BinDir = "/usr/local/bin"
	// User is the non-root user and group the image runs as, the "nonroot"
	// user of the distroless images, which the Helm chart's security
	// context names too.
	User = "65532:65532"
	// Home is the user's home and the working directory (the worker's
	// default ./data store is under it).
	Home = "/home/nonroot"
	// Path is the PATH of the image, distroless's.
	Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// Source is the repository named by the org.opencontainers.image.source label.
	Source = "https://github.com/convstream/convstream"
)

// Binaries are the commands built into BinDir, by name, from their
// package in the convstream module.
var Binaries = []Binary{
	{Name: "worker", Package: "./cmd/worker"},
	{Name: "convctl", Package: "./cmd/convctl"},
	{Name: "orchestrator", Package: "./cmd/orchestrator"},
}

// Binary is one command of the image.
type Binary struct {
	Name, Package string
}

// Entrypoint starts the worker; a container's args are its flags.
var Entrypoint = []string{BinDir + "/worker"}

// BuildFlags are the go build flags of every binary, with CGO_ENABLED=0:
// a static binary, no paths of the build machine, no symbol tables (stack
// traces keep their function names and lines).
var BuildFlags = []string{"-trimpath", "-ldflags=-s -w"}

// Platforms are the platforms of the image index.
var Platforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64"},
}

// Label names of the image config and annotations of its index.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
	// RefName annotates the index in the layout's index.json with the
	// image's tag, which `skopeo copy oci:DIR:TAG` and `crane push`-like
	// tools look up.
	RefName = "org.opencontainers.image.ref.name"
)

// Config says what to build.
type Config struct {
	// ModuleDir is the root of the convstream module.
	ModuleDir string
	// Version is the image's version (its tag and version label), e.g. 0.1.0.
	Version string
	// Revision is the commit the image is built from.
	Revision string
	// Created is the time of every file and of the configs, e.g.
	// SOURCE_DATE_EPOCH or the commit's time, so that a build is reproducible.
	Created time.Time
	// Platforms to build; empty: Platforms.
	Platforms []v1.Platform
	// Go is the go command; empty: "go".
	Go string
	// Log, when not nil, receives a line for each step.
	Log io.Writer
}

// Labels returns the OCI labels of an image built with cfg.
func (cfg Config) Labels() map[string]string {
	return map[string]string{
		LabelSource:   Source,
		LabelVersion:  cfg.Version,
		LabelRevision: cfg.Revision,
		LabelCreated:  cfg.Created.UTC().Format(time.RFC3339),
		LabelTitle:    "convstream",
	}
}

// Build compiles the binaries for each platform and returns the image index.
func Build(ctx context.Context, cfg Config) (v1.ImageIndex, error) {
	if cfg.Go == "" {
		cfg.Go = "go"
	}
	platforms := cfg.Platforms
	if len(platforms) == 0 {
		platforms = Platforms
	}
	base, err := layerOf(baseFiles(), cfg.Created)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img, err := buildPlatform(ctx, cfg, p, base)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", p.OS, p.Architecture, err)
		}
		p := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return mutate.Annotations(idx, cfg.Labels()).(v1.ImageIndex), nil
}

// WriteLayout writes idx as a new OCI image layout in dir, tagged tag.
func WriteLayout(dir string, idx v1.ImageIndex, tag string) (layout.Path, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: tag})); err != nil {
		return "", err
	}
	return p, nil
}

func buildPlatform(ctx context.Context, cfg Config, p v1.Platform, base v1.Layer) (v1.Image, error) {
	tmp, err := os.MkdirTemp("", "convstream-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var files []file
	for _, b := range Binaries {
		out := filepath.Join(tmp, b.Name)
		args := append([]string{"build"}, BuildFlags...)
		args = append(args, "-o", out, b.Package)
		cmd := exec.CommandContext(ctx, cfg.Go, args...)
		cmd.Dir = cfg.ModuleDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOFLAGS=-mod=readonly "+buildVCS(cfg.ModuleDir))
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "GOOS=%s GOARCH=%s go %s\n", p.OS, p.Architecture, strings.Join(args, " "))
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %w\n%s", b.Package, err, out)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			return nil, err
		}
		files = append(files, file{name: path.Join(BinDir, b.Name), mode: 0o755, data: data})
	}
	bins, err := layerOf(files, cfg.Created)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), base, bins)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: cfg.Created.UTC()}
	cf.Author = Source
	cf.Config.Entrypoint = Entrypoint
	cf.Config.User = User
	cf.Config.WorkingDir = Home
	cf.Config.Env = []string{"PATH=" + Path}
	cf.Config.Labels = cfg.Labels()
	cf.History = nil
	return mutate.ConfigFile(img, cf)
}

// buildVCS is the -buildvcs flag of a build in dir: true in a git
// checkout, so that --version names the commit (internal/buildinfo) even
// where GOFLAGS holds -buildvcs=false, as on some CI machines; false
// elsewhere (a source archive), where true would fail the build.
func buildVCS(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return "-buildvcs=true"
	}
	return "-buildvcs=false"
}

// file is one entry of a layer: a directory when data is nil and dir is set.
type file struct {
	name     string
	mode     int64
	dir      bool
	uid, gid int
	data     []byte
}

// baseFiles are what a program expects of a Unix system and distroless
// provides: the user and group 65532 "nonroot", its home, and /tmp.
func baseFiles() []file {
	return []file{
		{name: "/etc", mode: 0o755, dir: true},
		{name: "/etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "/etc/group", mode: 0o644, data: []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")},
		{name: "/home", mode: 0o755, dir: true},
		{name: Home, mode: 0o700, dir: true, uid: 65532, gid: 65532},
		{name: "/tmp", mode: 0o1777, dir: true},
		{name: "/usr", mode: 0o755, dir: true},
		{name: "/usr/local", mode: 0o755, dir: true},
		{name: BinDir, mode: 0o755, dir: true},
	}
}

// layerOf makes a gzipped OCI layer of files, in their order, every entry
// dated created.
func layerOf(files []file, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    strings.TrimPrefix(f.name, "/"),
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: created.UTC(),
			Format:  tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}
