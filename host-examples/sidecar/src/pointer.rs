//! Where the current metadata comes from: `--metadata`, else
//! `metadata/version-hint.text`, else an Iceberg SQL catalog (sqlite), else a
//! clear error. The same source is re-read after listing (the planner's
//! re-check) and by `apply` before it deletes anything.

use crate::store::{local_uri, Store};

/// The source of a table's current metadata location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pointer {
    /// Given on the command line: commits during the sweep cannot be seen.
    Explicit(String),
    /// `metadata/version-hint.text` under the table (file-system catalogs).
    VersionHint,
    /// The `iceberg_tables` table of a SQL catalog (pyiceberg, Java JDBC).
    Catalog {
        /// The sqlite database file.
        path: String,
        /// Namespace, dotted for nested namespaces.
        namespace: String,
        /// Table name.
        name: String,
    },
}

impl Pointer {
    /// From `--metadata`, `--catalog sqlite:PATH` and `--table NS.NAME`.
    pub fn from_args(
        metadata: Option<&str>,
        catalog: Option<&str>,
        table: Option<&str>,
    ) -> Result<Pointer, String> {
        match (metadata, catalog, table) {
            (Some(_), Some(_), _) => Err("give either --metadata or --catalog, not both".into()),
            (Some(m), None, _) => Ok(Pointer::Explicit(if m.contains("://") {
                m.to_owned()
            } else {
                local_uri(m)?
            })),
            (None, Some(c), Some(t)) => {
                let path = c.strip_prefix("sqlite:").ok_or_else(|| {
                    format!(
                        "--catalog `{c}`: only SQL catalogs in sqlite are supported (sqlite:PATH)"
                    )
                })?;
                let (ns, name) = t
                    .rsplit_once('.')
                    .filter(|(ns, n)| !ns.is_empty() && !n.is_empty())
                    .ok_or_else(|| format!("--table `{t}` must be NAMESPACE.NAME"))?;
                Ok(Pointer::Catalog {
                    path: path.to_owned(),
                    namespace: ns.to_owned(),
                    name: name.to_owned(),
                })
            }
            (None, Some(_), None) => Err("--catalog needs --table NAMESPACE.NAME".into()),
            (None, None, Some(_)) => Err("--table needs --catalog sqlite:PATH".into()),
            (None, None, None) => Ok(Pointer::VersionHint),
        }
    }

    /// A short description for reports.
    pub fn describe(&self) -> String {
        match self {
            Pointer::Explicit(_) => {
                "--metadata (fixed: commits during the sweep are not seen)".into()
            }
            Pointer::VersionHint => "metadata/version-hint.text".into(),
            Pointer::Catalog {
                path,
                namespace,
                name,
            } => format!("sql catalog {path} table {namespace}.{name}"),
        }
    }

    /// Reads the current metadata location now.
    pub async fn resolve(&self, store: &Store, table: &str) -> Result<String, String> {
        match self {
            Pointer::Explicit(m) => Ok(m.clone()),
            Pointer::VersionHint => {
                let hint = format!("{table}/metadata/version-hint.text");
                let bytes = store.read(&hint).await?.ok_or_else(|| {
                    format!(
                        "no --metadata, no --catalog and no {hint}: say where the current metadata is"
                    )
                })?;
                let text =
                    String::from_utf8(bytes).map_err(|_| format!("{hint} is not UTF-8 text"))?;
                let v = text.trim();
                if v.is_empty() || v.contains('/') {
                    return Err(format!("{hint} holds `{v}`, not a version or file name"));
                }
                // Iceberg's Hadoop catalog: a version number, then forward to
                // the newest vN that exists (the hint is written after the
                // commit and may lag). Anything else: the newest vN in the
                // folder, or refuse.
                let Ok(mut n) = v.parse::<u64>() else {
                    return newest_hadoop_version(store, table).await?.ok_or_else(|| {
                        format!(
                            "{hint} holds `{v}`, not a version number, and metadata/ holds no vN.metadata.json: say where the current metadata is (--metadata or --catalog)"
                        )
                    });
                };
                while store
                    .head(&format!("{table}/metadata/v{}.metadata.json", n + 1))
                    .await?
                    .is_some()
                {
                    n += 1;
                }
                Ok(format!("{table}/metadata/v{n}.metadata.json"))
            }
            Pointer::Catalog {
                path,
                namespace,
                name,
            } => catalog_lookup(path, namespace, name),
        }
    }
}

/// The newest version of a Delta table as the planner names it (the newest
/// commit, or a newer checkpoint of a checkpoint-only log) with that file's
/// identity, decided by the component from the listing of `_delta_log/`.
/// `canonical` is the plan's table location (an `s3a://` table then names
/// the same URI as the store's `s3://` keys).
pub async fn delta_head(
    planner: &mut crate::component::Planner,
    store: &Store,
    table: &str,
    canonical: &str,
) -> Result<crate::component::wt::LogHead, String> {
    use futures::StreamExt;
    let log = format!("{table}/_delta_log/");
    let mut objects = Vec::new();
    let mut listing = store.list(&log);
    while let Some(o) = listing.next().await {
        let o = o?;
        // The planner judges names under the plan's own spelling of the table.
        let Some((_, name)) = o.uri.rsplit_once("/_delta_log/") else {
            continue;
        };
        objects.push(crate::component::wt::ListedObject {
            key: format!("{canonical}/_delta_log/{name}"),
            version: o.version(),
        });
    }
    planner.delta_head(canonical, &objects)?.ok_or_else(|| {
        format!("{log} holds no commit and no checkpoint: the table is gone or not a Delta table")
    })
}

/// The highest `vN.metadata.json` (also `vN.gz.metadata.json`) under
/// `TABLE/metadata/`, as Iceberg's Hadoop catalog finds it without a hint.
async fn newest_hadoop_version(store: &Store, table: &str) -> Result<Option<String>, String> {
    use futures::StreamExt;
    let dir = format!("{table}/metadata/");
    let mut best: Option<(u64, String)> = None;
    let mut objects = store.list(&dir);
    while let Some(o) = objects.next().await {
        let o = o?;
        let Some((_, name)) = o.uri.rsplit_once('/') else {
            continue;
        };
        let n = name
            .strip_prefix('v')
            .and_then(|r| {
                r.strip_suffix(".gz.metadata.json")
                    .or_else(|| r.strip_suffix(".metadata.json"))
            })
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u64>().ok());
        if let Some(n) = n {
            if best.as_ref().is_none_or(|(b, _)| n > *b) {
                best = Some((n, format!("{dir}{name}")));
            }
        }
    }
    Ok(best.map(|(_, u)| u))
}

/// `SELECT metadata_location FROM iceberg_tables` for one table, read-only.
fn catalog_lookup(path: &str, namespace: &str, name: &str) -> Result<String, String> {
    use rusqlite::{Connection, OpenFlags};
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("open catalog {path}: {e}"))?;
    let mut stmt = conn
        .prepare(
            "SELECT catalog_name, metadata_location FROM iceberg_tables \
             WHERE table_namespace = ?1 AND table_name = ?2",
        )
        .map_err(|e| format!("catalog {path} has no Iceberg SQL catalog schema: {e}"))?;
    let rows: Vec<(String, Option<String>)> = stmt
        .query_map([namespace, name], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|it| it.collect())
        .map_err(|e| format!("query catalog {path}: {e}"))?;
    match rows.as_slice() {
        [] => Err(format!("catalog {path} has no table {namespace}.{name}")),
        [(_, Some(m))] => Ok(m.clone()),
        [(c, None)] => Err(format!(
            "catalog {path}: {namespace}.{name} (catalog `{c}`) has no metadata location"
        )),
        many => Err(format!(
            "catalog {path}: {namespace}.{name} exists in {} catalogs ({}); ambiguous",
            many.len(),
            many.iter()
                .map(|(c, _)| c.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources() {
        assert_eq!(
            Pointer::from_args(None, None, None).unwrap(),
            Pointer::VersionHint
        );
        assert!(Pointer::from_args(Some("/m.json"), Some("sqlite:x"), None).is_err());
        assert!(Pointer::from_args(None, Some("postgres:x"), Some("a.b")).is_err());
        assert!(Pointer::from_args(None, Some("sqlite:x"), Some("ab")).is_err());
        assert_eq!(
            Pointer::from_args(None, Some("sqlite:/c.db"), Some("a.b.t")).unwrap(),
            Pointer::Catalog {
                path: "/c.db".into(),
                namespace: "a.b".into(),
                name: "t".into()
            }
        );
    }

    /// The table folder for a hint test: `metadata/v1.metadata.json` and
    /// `v2.metadata.json` exist, so a hint that were not refused would
    /// resolve (to the newest) and the refusals below would turn into plans.
    fn hint_table(tag: &str, hint: &str) -> (std::path::PathBuf, String, Store) {
        let dir = std::env::temp_dir().join(format!("lakesweep-hint-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("metadata")).unwrap();
        for v in [1, 2] {
            std::fs::write(dir.join(format!("metadata/v{v}.metadata.json")), b"{}").unwrap();
        }
        std::fs::write(dir.join("metadata/version-hint.text"), hint).unwrap();
        let root = format!("file://{}", dir.display());
        let store = Store::for_uri(&root).unwrap();
        (dir, root, store)
    }

    /// Kills: dropping `v.is_empty()` or `v.contains('/')` from the hint
    /// check (an empty hint or a path would fall through to "the newest
    /// vN" and plan on a pointer nobody wrote).
    #[tokio::test]
    async fn version_hint_that_is_empty_or_a_path_is_refused() {
        for (tag, hint) in [
            ("empty", ""),
            ("blank", " \n"),
            ("path", "metadata/v1.metadata.json"),
            ("abs", "/elsewhere/v2.metadata.json"),
            ("uri", "s3://b/t/metadata/v2.metadata.json"),
        ] {
            let (dir, root, store) = hint_table(tag, hint);
            let e = Pointer::VersionHint
                .resolve(&store, &root)
                .await
                .expect_err(tag);
            assert!(e.contains("not a version or file name"), "{tag}: {e}");
            let _ = std::fs::remove_dir_all(dir);
        }
        // Control: a version number is followed forward to the newest vN.
        let (dir, root, store) = hint_table("one", "1\n");
        assert_eq!(
            Pointer::VersionHint.resolve(&store, &root).await.unwrap(),
            format!("{root}/metadata/v2.metadata.json")
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
