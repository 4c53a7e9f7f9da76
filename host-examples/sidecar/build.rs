//! Embeds the planner component (`target/lakesweep.wasm` of the repository,
//! built by `scripts/build-component.sh`) into the `lakesweep` binary, so
//! one file carries both. When it has not been built, nothing is embedded
//! and the binary looks for the file at run time (`--wasm`,
//! `LAKESWEEP_WASM`, the repository's `target/`, next to the executable).

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let wasm = manifest.join("../../target/lakesweep.wasm");
    println!("cargo:rerun-if-changed={}", wasm.display());
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("embedded.wasm");
    let bytes = std::fs::read(&wasm).unwrap_or_default();
    std::fs::write(&out, bytes).expect("OUT_DIR is writable");
}
