#!/usr/bin/env bash
# Builds the import-free component target/lakesweep.wasm (wasm32-unknown-unknown
# + wit-bindgen, linked by the wasm-component-ld that rustup ships), with
# wasm's 128-bit SIMD (every host's runtime has it: wasmtime, V8, wasmtime-py),
# which the key scans of page classification compile to.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
host=$(rustc -vV | sed -n 's/^host: //p')
linker="$(rustc --print sysroot)/lib/rustlib/$host/bin/wasm-component-ld"
[ -x "$linker" ] || { echo "wasm-component-ld not found at $linker" >&2; exit 1; }
simd="-C target-feature=+simd128"
# Cargo takes the first of CARGO_ENCODED_RUSTFLAGS, RUSTFLAGS and the target's
# own flags: a caller's flags would silently drop SIMD, so it is added to them.
# (With --target they reach the component only, not build scripts.)
# Set counts, even when empty.
if [ -n "${CARGO_ENCODED_RUSTFLAGS+set}" ]; then
  export CARGO_ENCODED_RUSTFLAGS="${CARGO_ENCODED_RUSTFLAGS:+$CARGO_ENCODED_RUSTFLAGS$'\x1f'}-C"$'\x1f'"target-feature=+simd128"
elif [ -n "${RUSTFLAGS+set}" ]; then
  export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }$simd"
fi
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER="$linker" CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="$simd" \
  cargo build --release --lib --target wasm32-unknown-unknown --features component
built="${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/lakesweep.wasm"
# Copied only when it changed: the sidecar embeds target/lakesweep.wasm and
# is rebuilt whenever the file's time moves.
cmp -s "$built" target/lakesweep.wasm 2>/dev/null || cp "$built" target/lakesweep.wasm
echo "built target/lakesweep.wasm ($(stat -c %s target/lakesweep.wasm) bytes)"
