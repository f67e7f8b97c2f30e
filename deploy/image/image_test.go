package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// moduleDir is the convstream module, two folders up.
const moduleDir = "../.."

var (
	builtOnce sync.Once
	builtDir  string
	builtCfg  Config
	builtErr  error
)

// builtLayout returns the OCI layout under test: CONVSTREAM_IMAGE_LAYOUT
// (what `make image` wrote) when set, else one built here for both
// platforms, once for the package's tests.
func builtLayout(t *testing.T) (string, Config) {
	t.Helper()
	if dir := os.Getenv("CONVSTREAM_IMAGE_LAYOUT"); dir != "" {
		return dir, Config{}
	}
	builtOnce.Do(func() {
		builtDir, builtErr = os.MkdirTemp("", "convstream-image-test-")
		if builtErr != nil {
			return
		}
		builtCfg, builtErr = FromGit(context.Background(), Config{ModuleDir: moduleDir}, "")
		if builtErr != nil {
			return
		}
		var idx v1.ImageIndex
		if idx, builtErr = Build(context.Background(), builtCfg); builtErr != nil {
			return
		}
		_, builtErr = WriteLayout(builtDir, idx, builtCfg.Version)
	})
	if builtErr != nil {
		t.Fatal(builtErr)
	}
	return builtDir, builtCfg
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// openIndex opens the layout at dir and returns the image index its
// index.json names, and that entry's tag.
func openIndex(t *testing.T, dir string) (v1.ImageIndex, string) {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json: want one OCI image index, got %+v", m.Manifests)
	}
	tag := m.Manifests[0].Annotations[RefName]
	if tag == "" {
		t.Errorf("index.json: no %s annotation", RefName)
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx, tag
}

// TestImage opens the image layout and checks each platform's image: the
// entrypoint, user, working directory, PATH, labels, the files and their
// owners and modes, that every binary is a static ELF for its platform,
// and, on linux/amd64, runs the binaries from the image with --version.
func TestImage(t *testing.T) {
	dir, cfg := builtLayout(t)
	idx, tag := openIndex(t, dir)
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	if im.Annotations[LabelSource] != Source || im.Annotations[LabelRevision] == "" || im.Annotations[LabelVersion] != tag {
		t.Errorf("index annotations %v: want source %s, a revision, version %s", im.Annotations, Source, tag)
	}
	if cfg.Revision != "" && im.Annotations[LabelRevision] != cfg.Revision {
		t.Errorf("revision %s, want %s", im.Annotations[LabelRevision], cfg.Revision)
	}
	var platforms []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		t.Run(d.Platform.Architecture, func(t *testing.T) {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, img, *d.Platform, im.Annotations)
		})
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !reflect.DeepEqual(platforms, want) {
		t.Errorf("platforms %v, want %v", platforms, want)
	}
}

func checkImage(t *testing.T, img v1.Image, p v1.Platform, labels map[string]string) {
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s, want %s", mt, types.OCIManifestSchema1)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("config platform %s/%s, want %s/%s", cf.OS, cf.Architecture, p.OS, p.Architecture)
	}
	c := cf.Config
	if !reflect.DeepEqual(c.Entrypoint, []string{"/usr/local/bin/worker"}) || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/usr/local/bin/worker] and no cmd", c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" || c.WorkingDir != "/home/nonroot" {
		t.Errorf("user %q workdir %q, want 65532:65532 and /home/nonroot", c.User, c.WorkingDir)
	}
	if !slices.Contains(c.Env, "PATH="+Path) {
		t.Errorf("env %q has no PATH=%s", c.Env, Path)
	}
	if !reflect.DeepEqual(c.Labels, labels) {
		t.Errorf("labels %v, want the index's annotations %v", c.Labels, labels)
	}
	if got := cf.Created.UTC().Format("2006-01-02T15:04:05Z"); got != labels[LabelCreated] {
		t.Errorf("created %s, want the label's %s", got, labels[LabelCreated])
	}

	files := map[string]*tar.Header{}
	contents := map[string][]byte{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := "/" + strings.TrimSuffix(h.Name, "/")
		files[name] = h
		if !h.ModTime.Equal(cf.Created.Time) {
			t.Errorf("%s dated %v, want %v", name, h.ModTime, cf.Created.Time)
		}
		if h.Typeflag == tar.TypeReg {
			if contents[name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]struct {
		mode     int64
		uid, gid int
	}{
		"/usr/local/bin/worker":       {0o755, 0, 0},
		"/usr/local/bin/convctl":      {0o755, 0, 0},
		"/usr/local/bin/orchestrator": {0o755, 0, 0},
		"/etc/passwd":                 {0o644, 0, 0},
		"/etc/group":                  {0o644, 0, 0},
		"/home/nonroot":               {0o700, 65532, 65532},
		"/tmp":                        {0o1777, 0, 0},
	}
	for name, w := range want {
		h := files[name]
		if h == nil {
			t.Errorf("no %s in the image", name)
			continue
		}
		if h.Mode != w.mode || h.Uid != w.uid || h.Gid != w.gid {
			t.Errorf("%s: mode %o uid %d gid %d, want %o %d %d", name, h.Mode, h.Uid, h.Gid, w.mode, w.uid, w.gid)
		}
	}
	if !bytes.Contains(contents["/etc/passwd"], []byte("nonroot:x:65532:65532:")) {
		t.Errorf("/etc/passwd has no user 65532:\n%s", contents["/etc/passwd"])
	}

	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	for _, b := range Binaries {
		data := contents["/usr/local/bin/"+b.Name]
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Errorf("%s: %v", b.Name, err)
			continue
		}
		if f.Machine != machine {
			t.Errorf("%s: machine %v, want %v", b.Name, f.Machine, machine)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
				t.Errorf("%s: dynamically linked (%v)", b.Name, prog.Type)
			}
		}
		if runtime.GOOS != p.OS || runtime.GOARCH != p.Architecture {
			continue
		}
		exe := filepath.Join(t.TempDir(), b.Name)
		if err := os.WriteFile(exe, data, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(exe, "--version").Output()
		if err != nil {
			t.Errorf("%s --version: %v", b.Name, err)
			continue
		}
		// Built from a git clone, the binary's build information names the
		// commit of the label (buildVCS). The go command records none in a
		// git worktree, whose .git is a file.
		line := string(out)
		if !strings.HasPrefix(line, b.Name+" ") || !strings.Contains(line, " go1.") {
			t.Errorf("%s --version = %q, want %q", b.Name, line, b.Name+" VERSION … goVERSION")
		}
		if fi, err := os.Stat(filepath.Join(moduleDir, ".git")); err == nil && fi.IsDir() && !strings.Contains(line, "(commit "+labels[LabelRevision]) {
			t.Errorf("%s --version = %q, want commit %s", b.Name, line, labels[LabelRevision])
		}
		t.Logf("%s", strings.TrimSpace(line))
	}
}

// TestReproducible builds the image again from the same checkout and
// time and wants the same index digest.
func TestReproducible(t *testing.T) {
	if os.Getenv("CONVSTREAM_IMAGE_LAYOUT") != "" {
		t.Skip("checks the image this package builds, not CONVSTREAM_IMAGE_LAYOUT")
	}
	dir, cfg := builtLayout(t)
	first, _ := openIndex(t, dir)
	again, err := Build(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := first.Digest()
	if err != nil {
		t.Fatal(err)
	}
	d2, err := again.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Errorf("two builds of one checkout: index %s, then %s", d1, d2)
	}
}
