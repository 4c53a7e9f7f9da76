#!/usr/bin/env bash
# Builds the browser simulator (host-examples/browser): the core compiled
# with its wasm-bindgen exports (`--features web`), post-processed by the
# wasm-bindgen CLI of the same version (installed from crates.io when
# missing) for the page (`--target web`, into host-examples/browser/pkg/)
# and for Node (`--target nodejs`, into target/web-node/, which the golden
# test loads); then stages the demo tables the page offers into
# host-examples/browser/demo/ with the modification times their generators
# recorded. Serve the folder over HTTP to use it:
#
#   bash scripts/build-web.sh && python3 -m http.server -d host-examples/browser 8000
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
want=$(sed -n 's/^wasm-bindgen = { version = "=\([0-9.]*\)".*/\1/p' Cargo.toml)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  cargo install wasm-bindgen-cli --version "$want" --quiet
fi
# A target folder of its own: the component's build (other features, its
# own linker) would otherwise rebuild the crate each time.
export CARGO_TARGET_DIR="$PWD/target/web"
# wasm-bindgen reads the target_features section a stripped build loses.
export CARGO_PROFILE_RELEASE_STRIP=false
cargo build --release --lib --target wasm32-unknown-unknown --features web
wasm="$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/lakesweep.wasm"
page=host-examples/browser
rm -rf "$page/pkg" target/web-node
wasm-bindgen "$wasm" --target web --out-dir "$page/pkg" --out-name lakesweep
wasm-bindgen "$wasm" --target nodejs --out-dir target/web-node --out-name lakesweep
python3 - "$page/demo" <<'PY'
import json, os, shutil, sys
out = sys.argv[1]
shutil.rmtree(out, ignore_errors=True)
tables = []
iceberg = json.load(open("tests/fixtures/generated/expect.json"))
for name in ("events", "simple_v1"):
    t = iceberg[name]
    rel = t["location"].removeprefix("file:///lakesweep-fixtures/")
    src = os.path.join("tests/fixtures/generated", rel)
    shutil.copytree(src, os.path.join(out, name))
    tables.append({"name": name, "format": "iceberg", "nowMs": t["now_ms"], "mtimes": t["mtimes"],
                   "metadata": "metadata/" + t["metadata_location"].rsplit("/metadata/", 1)[1],
                   "note": "written by pyiceberg, with planted orphans"})
delta = json.load(open("tests/fixtures/delta/expect.json"))
t = delta["events"]
shutil.copytree("tests/fixtures/delta/events", os.path.join(out, "delta-events"))
tables.append({"name": "delta-events", "format": "delta", "nowMs": t["generated_at_ms"] + 8 * 86_400_000,
               "mtimes": t["mtimes"], "note": "written by deltalake"})
for t in tables:
    root = os.path.join(out, t["name"])
    files = []
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            files.append({"path": rel, "size": os.path.getsize(p), "mtimeMs": t["mtimes"].get(rel, t["nowMs"])})
    t["files"] = sorted(files, key=lambda f: f["path"])
    del t["mtimes"]
json.dump({"tables": tables}, open(os.path.join(out, "index.json"), "w"), indent=1)
PY
echo "built $page (pkg: $(du -sb "$page/pkg" | cut -f1) bytes, lakesweep_bg.wasm: $(stat -c %s "$page/pkg/lakesweep_bg.wasm") bytes)"
