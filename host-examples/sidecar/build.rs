//! Embeds the planner component (`target/lakesweep.wasm` of the repository,
//! built by `scripts/build-component.sh`) into the `lakesweep` binary, so
//! one file carries both. When it has not been built (or
//! `LAKESWEEP_EMBED=none`), nothing is embedded
//! and the binary looks for the file at run time (`--wasm`,
//! `LAKESWEEP_WASM`, the repository's `target/`, next to the executable).

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let wasm = manifest.join("../../target/lakesweep.wasm");
    println!("cargo:rerun-if-changed={}", wasm.display());
    println!("cargo:rerun-if-env-changed=LAKESWEEP_EMBED");
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("embedded.wasm");
    // LAKESWEEP_EMBED=none: carry no component (a build running beside the
    // component's, which the binary then loads from a file).
    let embed = std::env::var("LAKESWEEP_EMBED").map_or(true, |v| v != "none");
    let bytes = if embed {
        std::fs::read(&wasm).unwrap_or_default()
    } else {
        Vec::new()
    };
    std::fs::write(&out, bytes).expect("OUT_DIR is writable");
}
