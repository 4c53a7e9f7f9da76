#!/usr/bin/env bash
# The test command: builds the component, then runs every test (the core's
# unit, integration, property and component tests, and the sidecar's tests).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
bash scripts/build-component.sh
cargo test --all-targets
cargo test --doc
( cd host-examples/sidecar && cargo test )
