// build-viewer bundles the /ui viewer (ui/web/*.js, on this package and
// @nats-io/nats-core's wsconnect) into ui/static/viewer.js with esbuild, so
// that `go build` embeds a committed file and needs no npm. The banner
// names the package versions and a digest of every source that went in;
// ui's TestViewerBundle recomputes the digest, so a source changed without
// `make ui` fails the Go tests. `--check` writes nothing and exits 1 when
// the committed bundle's digest is not that of the sources.

import { createHash } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = join(here, "..");
const repo = join(pkgDir, "..", "..");
const out = join(repo, "ui", "static", "viewer.js");

function walk(dir, ext) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name), ext) : e.name.endsWith(ext) ? [join(dir, e.name)] : [],
  );
}

// The digest's inputs, as ui/bundle_test.go lists them: sorted paths
// relative to the repository, each path and content hashed in turn.
const sources = [
  ...walk(join(repo, "ui", "web"), ".js"),
  ...walk(join(pkgDir, "src"), ".ts"),
  join(pkgDir, "package-lock.json"),
]
  .map((p) => relative(repo, p).split("\\").join("/"))
  .sort();
const h = createHash("sha256");
for (const p of sources) {
  h.update(p + "\n");
  h.update(readFileSync(join(repo, p)));
  h.update("\n");
}
const digest = h.digest("hex");

const lock = JSON.parse(readFileSync(join(pkgDir, "package-lock.json"), "utf8"));
const version = (name) => lock.packages[`node_modules/${name}`]?.version ?? "?";
const self = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const banner =
  `// convstream viewer bundle: @convstream/client ${self.version}, @nats-io/nats-core ${version("@nats-io/nats-core")}, ` +
  `@nats-io/jetstream ${version("@nats-io/jetstream")}, @nats-io/kv ${version("@nats-io/kv")} (Apache-2.0).\n` +
  `// Built by clients/typescript/scripts/build-viewer.mjs (make ui); do not edit. sources sha256 ${digest}`;

if (process.argv.includes("--check")) {
  const committed = readFileSync(out, "utf8");
  if (!committed.includes(`sources sha256 ${digest}`)) {
    console.error("ui/static/viewer.js is not built from the current sources: run make ui");
    process.exit(1);
  }
  console.log("ui/static/viewer.js matches its sources");
  process.exit(0);
}

await build({
  entryPoints: [join(repo, "ui", "web", "app.js")],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2022"],
  outfile: out,
  minify: true,
  legalComments: "none",
  banner: { js: banner },
  alias: { "@convstream/client": join(pkgDir, "src", "index.ts") },
  // The viewer's sources live outside this package: resolve the NATS
  // packages from its node_modules.
  nodePaths: [join(pkgDir, "node_modules")],
  logLevel: "warning",
});
// The NATS packages' license travels with the bundle, as nats.ws's did.
writeFileSync(join(repo, "ui", "static", "viewer.LICENSE"), readFileSync(join(pkgDir, "node_modules", "@nats-io", "nats-core", "LICENSE")));
console.log(`wrote ${relative(repo, out)} (${readFileSync(out).length} bytes), sources sha256 ${digest}`);
