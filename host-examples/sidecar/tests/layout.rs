//! The command's dependency picture, checked on its sources: imports run
//! one way, from the commands down to the component.
//!
//! ```text
//! main                     the dispatch from the command line
//! commands/                one file per command (and `report`, shared rendering)
//! cli                      the command line: clap's types are the commands' inputs
//! session/                 one planner session's I/O: plan, deletion, ledger, digests, ...
//! catalogs/                where the current metadata comes from, commits through it
//! stores/                  object stores and their listing (local, S3, GCS, Azure), HTTP
//! component/               the planner component, loaded in wasmtime
//! error                    the host's typed error and its exit statuses
//! out, clock, wit, names   leaf vocabulary: output, the clock, the interface's types
//! ```
//!
//! A file may use files of lower groups, and files of its own group as long
//! as the files of the whole crate form no cycle. Unit tests
//! (`#[cfg(test)] mod tests`) may use anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each group's layer; a file may use the files of lower layers, and of
/// its own group (without a cycle).
const LAYERS: &[(&str, u32)] = &[
    ("out", 0),
    ("clock", 0),
    ("wit", 0),
    ("names", 1),
    ("error", 2),
    ("component", 3),
    ("stores", 4),
    ("catalogs", 5),
    ("session", 6),
    ("cli", 7),
    ("commands", 8),
    ("main", 9),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every source file, relative to `src/`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p.strip_prefix(src()).unwrap().to_owned());
        }
    }
}

/// The module path a file is (`stores/s3.rs` -> `stores::s3`,
/// `stores/mod.rs` -> `stores`, `main.rs` -> `main`).
fn module_of(rel: &Path) -> String {
    let s = rel.to_string_lossy().replace('/', "::");
    let s = s.trim_end_matches(".rs");
    s.trim_end_matches("::mod").to_owned()
}

/// The group a module belongs to (its first segment).
fn group(module: &str) -> &str {
    module.split("::").next().unwrap()
}

fn layer(module: &str) -> u32 {
    let g = group(module);
    LAYERS
        .iter()
        .find(|(n, _)| *n == g)
        .unwrap_or_else(|| panic!("module `{module}` has no layer: add its group to LAYERS"))
        .1
}

/// The source without its unit tests and its comment lines (a doc link
/// names a module without using it).
fn without_tests(text: &str) -> String {
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules a file names through `crate::` paths (each resolved to the
/// longest prefix that is a file of the crate). `main.rs` names its
/// modules without `crate::`: its `use` lines are read as such.
fn uses(text: &str, me: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut paths: Vec<String> = Vec::new();
    // In a file of a folder (`stores/s3.rs`), `super::` is the folder's
    // module (`stores`).
    let text = &match me.rsplit_once("::") {
        Some((parent, _)) => text.replace("super::", &format!("crate::{parent}::")),
        None => text.to_owned(),
    };
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        paths.push(rest[..end].trim_end_matches(':').to_owned());
    }
    if me == "main" {
        for line in text.lines().filter(|l| l.starts_with("use ")) {
            let rest = line.trim_start_matches("use ");
            let head = rest.split("::").next().unwrap_or("");
            let inner = rest
                .split_once('{')
                .map(|(_, r)| r.trim_end_matches("};"))
                .unwrap_or("");
            for item in inner.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                paths.push(format!("{head}::{item}"));
            }
            paths.push(rest.trim_end_matches(';').to_owned());
        }
    }
    for p in paths {
        let segs: Vec<&str> = p.split("::").collect();
        for n in (1..=segs.len()).rev() {
            let m = segs[..n].join("::");
            if modules.contains(&m) {
                if m != me {
                    found.insert(m);
                }
                break;
            }
        }
    }
    found
}

#[test]
fn imports_run_one_way_and_form_no_cycle() {
    let mut files = Vec::new();
    sources(&src(), &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for f in &files {
        let me = module_of(f);
        let text = std::fs::read_to_string(src().join(f)).unwrap();
        let used = uses(&without_tests(&text), &me, &modules);
        for u in &used {
            let same_group = group(u) == group(&me);
            if !same_group && layer(u) >= layer(&me) {
                wrong.push(format!(
                    "{} (layer {}) uses {u} (layer {})",
                    f.display(),
                    layer(&me),
                    layer(u)
                ));
            }
        }
        graph.insert(me, used);
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );

    // No cycle among the files (within a group too).
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(2) => return None,
            Some(1) => {
                let at = stack.iter().position(|s| s == m).unwrap();
                let mut cycle = stack[at..].to_vec();
                cycle.push(m.to_owned());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(m.to_owned(), 1);
        stack.push(m.to_owned());
        for n in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(n, graph, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(m.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys() {
        if let Some(c) = visit(m, &graph, &mut state, &mut Vec::new()) {
            panic!("an import cycle: {}", c.join(" -> "));
        }
    }
}

#[test]
fn every_group_has_a_layer_and_no_file_is_too_long() {
    let mut files = Vec::new();
    sources(&src(), &mut files);
    for f in &files {
        layer(&module_of(f));
        let lines = std::fs::read_to_string(src().join(f))
            .unwrap()
            .lines()
            .count();
        assert!(
            lines <= 1500,
            "{} has {lines} lines: split it by noun",
            f.display()
        );
    }
}
