#!/usr/bin/env bash
# The main job: build the component and the sidecar, then plan a sweep of the
# demo Iceberg table shipped in tests/fixtures/generated (real, written by
# pyiceberg, with planted orphans). A git checkout loses modification times,
# so the table is first staged into target/demo with the times the generator
# recorded. Nothing is deleted: `plan` is a dry run.
#
#   bash scripts/demo.sh [--json]          the Iceberg demo table (pyiceberg)
#   bash scripts/demo.sh delta [--json]    the Delta demo table (deltalake), judged
#                                          8 days after it was written
#   bash scripts/demo.sh pinot [--json]    a Pinot/StarTree snapshot-artifact layout
#                                          (pyarrow), three deep-store roots
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
bash scripts/build-component.sh >&2
# The demo's build of the command: local files and the SQL catalog (the
# cloud stores and catalogs are a feature `cargo install --path
# host-examples/sidecar` includes), in the quicker-to-build `quick`
# profile; cargo shows its progress.
echo "building the lakesweep command (local files and the SQL catalog)..." >&2
( cd host-examples/sidecar && cargo build --profile quick --no-default-features )
root="$PWD/target/demo"
rm -rf "$root" && mkdir -p "$root"
if [ "${1:-}" = pinot ]; then
  shift
  cp -r tests/fixtures/pinot "$root/pinot"
  python3 - "$root/pinot" <<'PY'
import json, os, sys
l = json.load(open(os.path.join(sys.argv[1], "layout.json")))
for rel, ms in l["mtimes"].items():
    os.utime(os.path.join(sys.argv[1], "deepstore", rel), ns=(ms * 1_000_000, ms * 1_000_000))
PY
  p="$root/pinot"
  exec "$CARGO_TARGET_DIR/quick/lakesweep" pinot plan --table-config "$p/table-config.json" \
    --ideal-state "$p/idealstate.json" --watermark "$p/watermark.json" --active "$p/active.json" \
    --root "$p/deepstore/controller" --root "$p/deepstore/server" --root "$p/deepstore/broker" \
    --now 2026-11-30T12:00:00Z "$@"
fi
if [ "${1:-}" = delta ]; then
  shift
  cp -r tests/fixtures/delta/events "$root/delta-events"
  now_ms=$(python3 - "$root/delta-events" <<'PY'
import json, os, sys
t = json.load(open("tests/fixtures/delta/expect.json"))["events"]
for rel, ms in t["mtimes"].items():
    os.utime(os.path.join(sys.argv[1], rel), ns=(ms * 1_000_000, ms * 1_000_000))
print(t["generated_at_ms"] + 8 * 86_400_000)
PY
)
  # Format detected by _delta_log/; the window is Delta's default (7 days).
  exec "$CARGO_TARGET_DIR/quick/lakesweep" plan "$root/delta-events" --now "$now_ms" "$@"
fi
cp -r tests/fixtures/generated/warehouse tests/fixtures/generated/catalog.db "$root/"
now_ms=$(python3 - "$root" <<'PY'
import json, os, sys
root = sys.argv[1]
expect = json.load(open("tests/fixtures/generated/expect.json"))
for t in expect.values():
    tdir = os.path.join(root, t["location"].removeprefix("file:///lakesweep-fixtures/"))
    for rel, ms in t["mtimes"].items():
        os.utime(os.path.join(tdir, rel), ns=(ms * 1_000_000, ms * 1_000_000))
print(expect["events"]["now_ms"])
PY
)
# The pointer comes from the pyiceberg SQL catalog; the metadata names the
# generator's root, which --location-map points at the staged copy.
exec "$CARGO_TARGET_DIR/quick/lakesweep" plan "$root/warehouse/demo/events" \
  --catalog "sqlite:$root/catalog.db" --table demo.events \
  --location-map "file:///lakesweep-fixtures=file://$root" \
  --now "$now_ms" --older-than 3d "$@"
