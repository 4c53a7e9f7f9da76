//! The core's dependency picture, checked on its sources: every module
//! uses only modules of a lower layer, so the picture has no cycles.
//!
//! ```text
//! bindings, host                the component's exports (public API only);
//!                               the reference host loop
//! ledger                        two-phase deletion
//! acceptance                    the one acceptance path
//! reclaim                       what-if retention (the simulator's engine)
//! comparison, scratch           a shadow run's comparison; a restore into scratch
//! plan (+ plan/delta), expire, bundle, pinot (snapshot artifacts), fleet
//! page                          the stateless page mode
//! policy, estate, stop, split   (estate: the ownership map of many tables;
//!                               stop: the stop switch; split: a listing cut
//!                               into splits and its partial results)
//! verdict, context
//! reach, delta_log
//! spec (iceberg, delta)         the formats' nouns
//! codec (avro, parquet, gzip)   containers
//! error, path, digest, duration, version, format, hashing   leaf vocabulary
//! ```
//!
//! Unit tests (`#[cfg(test)] mod tests`) may use anything.

use std::collections::BTreeMap;
use std::path::Path;

/// Each module's layer; a module may use modules of lower layers only
/// (and its own submodules).
const LAYERS: &[(&str, u32)] = &[
    ("error", 0),
    ("path", 0),
    ("digest", 0),
    ("duration", 0),
    ("version", 0),
    ("format", 0),
    ("hashing", 0),
    ("mutation", 0),
    ("codec", 1),
    ("spec", 2),
    ("reach", 3),
    ("delta_log", 3),
    ("verdict", 4),
    ("context", 4),
    ("policy", 5),
    ("page", 6),
    ("estate", 5),
    ("stop", 5),
    ("split", 5),
    ("fleet", 7),
    ("plan", 7),
    ("expire", 7),
    ("bundle", 7),
    ("pinot", 7),
    ("acceptance", 8),
    ("reclaim", 8),
    ("comparison", 8),
    ("scratch", 8),
    ("ledger", 9),
    ("deletion", 10),
    ("bindings", 11),
    ("web", 11),
    ("host", 11),
];

/// The top-level module a source file belongs to
/// (`src/spec/delta/action.rs` -> `spec`, `src/plan/session/mod.rs` ->
/// `plan`, `src/lib.rs` -> `lib`).
fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_owned()
}

/// The source without its unit tests.
fn without_tests(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    }
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every `crate::name` a text names.
fn uses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
            out.push(name);
        }
    }
    out
}

#[test]
fn every_module_uses_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layer: BTreeMap<&str, u32> = LAYERS.iter().copied().collect();
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = Vec::new();
    let mut seen = 0;
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        let m = module_of(rel);
        if m == "lib" {
            continue;
        }
        let Some(&mine) = layer.get(m.as_str()) else {
            wrong.push(format!(
                "{}: module `{m}` has no layer in LAYERS",
                rel.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(&f).unwrap();
        for used in uses(without_tests(&text)) {
            seen += 1;
            if used == m {
                continue;
            }
            match layer.get(used.as_str()) {
                Some(&l) if l < mine => {}
                Some(&l) => wrong.push(format!(
                    "{}: `{m}` (layer {mine}) uses `{used}` (layer {l})",
                    rel.display()
                )),
                // Re-exports at the crate root (`crate::Error`, ...).
                None => {}
            }
        }
    }
    assert!(
        seen > 50,
        "the scan found almost no uses: is it reading src/?"
    );
    assert!(
        wrong.is_empty(),
        "the dependency picture is broken:\n{}",
        wrong.join("\n")
    );
}

/// Whether lib.rs declares `pub mod name;` with no `cfg` on it: public in
/// every build, not only with a feature.
fn public_without_features(lib: &str, name: &str) -> bool {
    let lines: Vec<&str> = lib.lines().map(str::trim).collect();
    lines.iter().enumerate().any(|(i, l)| {
        *l == format!("pub mod {name};") && (i == 0 || !lines[i - 1].starts_with("#[cfg("))
    })
}

/// The core's own vocabulary (`path`, `codec`, `spec`) is public only with
/// the `internal-api` feature: private otherwise, so a host reaches it
/// through the root's re-exports, never by path.
#[test]
fn the_internal_vocabulary_is_public_only_with_internal_api() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    for name in ["path", "codec", "spec"] {
        let gated = format!(
            "#[cfg(feature = \"internal-api\")]\npub mod {name};\n#[cfg(not(feature = \"internal-api\"))]\n#[allow(dead_code, unused_imports)]\nmod {name};"
        );
        assert!(
            lib.contains(&gated),
            "lib.rs must declare `{name}` public with `internal-api` only"
        );
        assert!(!public_without_features(&lib, name), "`{name}` is public");
    }
}

#[test]
fn bindings_use_the_public_api_only() {
    // The bindings (src/bindings/) name the crate `core` (and the ledger
    // `cl`): every module they reach through must be public in lib.rs.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&dir.join("bindings"), &mut files);
    files.sort();
    assert!(
        files.len() > 1,
        "the bindings are not in src/bindings/: is the scan right?"
    );
    let text: String = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let lib = std::fs::read_to_string(dir.join("lib.rs")).unwrap();
    let mut named = 0;
    let mut rest = text.as_str();
    while let Some(i) = rest.find("core::") {
        rest = &rest[i + "core::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // A module path (`core::bundle::seal`); root re-exports
        // (`core::accept`) are public by construction.
        let is_module = rest[name.len()..].starts_with("::");
        if is_module && name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
            named += 1;
            assert!(
                public_without_features(&lib, &name),
                "the bindings reach into `{name}`, which lib.rs does not make public (without `internal-api`)"
            );
        }
    }
    assert!(
        named > 5,
        "the bindings name almost no module: is the scan right?"
    );
    assert!(
        text.contains("use crate::ledger as cl;") && lib.contains("pub mod ledger;"),
        "the ledger alias points at a public module"
    );
}
