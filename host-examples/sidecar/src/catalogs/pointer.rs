//! Where the current metadata comes from: `--metadata`, else a catalog
//! (`--catalog` with `--table`), else a command (`--pointer-cmd`), else
//! `metadata/version-hint.text`. The same source is re-read after listing
//! (the planner's re-check) and by `apply` before it deletes anything.

use crate::catalogs::Catalog;
use crate::component::{HintFacts, Planner};
use crate::error::HostError;
use crate::stores::{local_uri, Store};

/// The source of a table's current metadata location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pointer {
    /// Given on the command line: commits during the sweep cannot be seen.
    Explicit(String),
    /// `metadata/version-hint.text` under the table (file-system catalogs).
    VersionHint,
    /// A table of a catalog (SQL, Glue, REST).
    Catalog {
        /// The catalog.
        catalog: Catalog,
        /// Namespace, dotted for nested namespaces.
        namespace: String,
        /// Table name.
        name: String,
    },
    /// A shell command that prints the current metadata location (any
    /// other catalog: Hive, Nessie, a wrapper script); run each time the
    /// pointer is read.
    Command(String),
}

impl Pointer {
    /// From `--metadata`, `--catalog` with `--table NS.NAME`, and `--pointer-cmd`.
    pub fn from_args(
        metadata: Option<&str>,
        catalog: Option<&str>,
        table: Option<&str>,
        command: Option<&str>,
    ) -> Result<Pointer, HostError> {
        let given = [metadata.is_some(), catalog.is_some(), command.is_some()];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err("give one of --metadata, --catalog and --pointer-cmd".into());
        }
        match (metadata, catalog, table, command) {
            (Some(m), ..) => Ok(Pointer::Explicit(if m.contains("://") {
                m.to_owned()
            } else {
                local_uri(m)?
            })),
            (None, Some(c), Some(t), None) => {
                let catalog = Catalog::parse(c)?;
                let (ns, name) = t
                    .rsplit_once('.')
                    .filter(|(ns, n)| !ns.is_empty() && !n.is_empty())
                    .ok_or_else(|| catalog_err!("--table `{t}` must be NAMESPACE.NAME"))?;
                Ok(Pointer::Catalog {
                    catalog,
                    namespace: ns.to_owned(),
                    name: name.to_owned(),
                })
            }
            (None, Some(_), None, None) => Err("--catalog needs --table NAMESPACE.NAME".into()),
            (None, None, Some(_), _) => Err("--table needs --catalog".into()),
            (None, None, None, Some(c)) if c.trim().is_empty() => {
                Err("--pointer-cmd is empty".into())
            }
            (None, None, None, Some(c)) => Ok(Pointer::Command(c.to_owned())),
            _ => Ok(Pointer::VersionHint),
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
                catalog,
                namespace,
                name,
            } => format!("{} table {namespace}.{name}", catalog.describe()),
            Pointer::Command(c) => format!("--pointer-cmd `{c}`"),
        }
    }

    /// Whether the source decides commits by compare-and-set (a catalog),
    /// so a newer document beside its pointer is a failed commit's
    /// leftover rather than a lagging pointer (the planner's judgement).
    pub fn authoritative(&self) -> bool {
        matches!(self, Pointer::Catalog { .. })
    }

    /// Reads the current metadata location now: the facts are read
    /// here, the component chooses a file-system catalog's document.
    pub async fn resolve(
        &self,
        planner: &mut Planner,
        store: &Store,
        table: &str,
    ) -> Result<String, HostError> {
        match self.read(store, table).await? {
            Read::Location(uri) => Ok(uri),
            Read::Hint(facts) => planner.current_metadata(table, facts),
        }
    }

    /// The facts the pointer is made of, read now: a location, or a
    /// file-system catalog's hint and metadata listing (for the component).
    pub async fn read(&self, store: &Store, table: &str) -> Result<Read, HostError> {
        Ok(match self {
            Pointer::Explicit(m) => Read::Location(m.clone()),
            Pointer::VersionHint => Read::Hint(hint_facts(store, table).await?),
            Pointer::Catalog {
                catalog,
                namespace,
                name,
            } => Read::Location(catalog.load(namespace, name).await?.metadata),
            Pointer::Command(c) => Read::Location(run_command(c).await?),
        })
    }
}

/// A pointer as read: a location, or what a file-system catalog's pointer
/// is chosen from.
#[derive(Debug)]
pub enum Read {
    /// The metadata location the source names.
    Location(String),
    /// `metadata/version-hint.text` and the `metadata/` listing.
    Hint(HintFacts),
}

/// How long a pointer command may take: 60 s, or
/// `LAKESWEEP_POINTER_CMD_TIMEOUT` seconds (1 to 3600).
fn command_timeout() -> std::time::Duration {
    let secs = std::env::var("LAKESWEEP_POINTER_CMD_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|s| (1..=3600).contains(s))
        .unwrap_or(60);
    std::time::Duration::from_secs(secs)
}

/// Ends the process group `pgid` (the command and everything it started).
fn kill_group(pgid: Option<u32>) {
    if let Some(pgid) = pgid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: killpg only sends a signal; a group already gone is ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Runs `sh -c CMD` in a process group of its own: its standard output,
/// trimmed, is the location; it must exit 0 and print one URI. Once it
/// answers or times out, whatever it left running is killed with it.
async fn run_command(cmd: &str) -> Result<String, HostError> {
    let timeout = command_timeout();
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| catalog_err!("--pointer-cmd `{cmd}`: {e}"))?;
    let pgid = child.id();
    let out = tokio::time::timeout(timeout, child.wait_with_output()).await;
    kill_group(pgid);
    let out = out
        .map_err(|_| {
            format!(
                "--pointer-cmd `{cmd}` gave no answer within {}s (it and what it started were killed)",
                timeout.as_secs()
            )
        })?
        .map_err(|e| catalog_err!("--pointer-cmd `{cmd}`: {e}"))?;
    if !out.status.success() {
        return Err(catalog_err!(
            "--pointer-cmd `{cmd}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8(out.stdout)
        .map_err(|_| catalog_err!("--pointer-cmd `{cmd}` printed bytes that are not UTF-8"))?;
    let uri = text.trim();
    if uri.is_empty() || uri.contains(char::is_whitespace) {
        return Err(catalog_err!(
            "--pointer-cmd `{cmd}` must print one metadata location; it printed `{uri}`"
        ));
    }
    if uri.contains("://") {
        Ok(uri.to_owned())
    } else {
        local_uri(uri)
    }
}

/// What a file-system catalog's pointer is chosen from: the bytes of
/// `metadata/version-hint.text` (if it exists) and every key under
/// `metadata/`, spelled under the table as given (a store may list an
/// `s3a://` table under `s3://`).
async fn hint_facts(store: &Store, table: &str) -> Result<HintFacts, HostError> {
    use futures::StreamExt;
    let dir = format!("{table}/metadata/");
    let hint = store.read(&format!("{dir}version-hint.text")).await?;
    let tail = |u: &str| u.split_once("://").map_or(u, |(_, t)| t).to_owned();
    let dir_tail = tail(&dir);
    let mut listing = Vec::new();
    let mut objects = store.list(&dir);
    while let Some(o) = objects.next().await {
        let o = o?;
        // A key the store spells outside the folder is passed as listed:
        // the component refuses it.
        listing.push(match tail(&o.uri).strip_prefix(&dir_tail) {
            Some(rest) => format!("{dir}{rest}"),
            None => o.uri,
        });
    }
    Ok(HintFacts { hint, listing })
}

/// The listing of a Delta table's `_delta_log/` (`prefix`, as the planner
/// names it), every key spelled under that prefix (a store may list an
/// `s3a://` table under `s3://`): the planner finds the newest version in
/// it.
pub async fn log_listing(
    store: &Store,
    prefix: &str,
) -> Result<Vec<crate::component::wt::ListedObject>, HostError> {
    use futures::StreamExt;
    let mut objects = Vec::new();
    let mut listing = store.list(prefix.trim_end_matches('/'));
    while let Some(o) = listing.next().await {
        let o = o?;
        let Some((_, name)) = o.uri.rsplit_once("/_delta_log/") else {
            continue;
        };
        objects.push(crate::component::wt::ListedObject {
            key: format!("{prefix}{name}"),
            version: o.version(),
        });
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources() {
        assert_eq!(
            Pointer::from_args(None, None, None, None).unwrap(),
            Pointer::VersionHint
        );
        assert!(Pointer::from_args(Some("/m.json"), Some("sqlite:x"), None, None).is_err());
        assert!(Pointer::from_args(Some("/m.json"), None, None, Some("echo")).is_err());
        assert!(Pointer::from_args(None, Some("glue"), Some("a.b"), Some("echo")).is_err());
        assert!(Pointer::from_args(None, Some("postgres:x"), Some("a.b"), None).is_err());
        assert!(Pointer::from_args(None, Some("sqlite:x"), Some("ab"), None).is_err());
        assert!(Pointer::from_args(None, None, None, Some(" ")).is_err());
        assert_eq!(
            Pointer::from_args(None, Some("sqlite:/c.db"), Some("a.b.t"), None).unwrap(),
            Pointer::Catalog {
                catalog: Catalog::Sql {
                    path: "/c.db".into()
                },
                namespace: "a.b".into(),
                name: "t".into()
            }
        );
        assert_eq!(
            Pointer::from_args(None, None, None, Some("cat p")).unwrap(),
            Pointer::Command("cat p".into())
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

    /// The component is asked with what was read: an empty hint or a path
    /// is refused (never "the newest vN"), a version number is followed
    /// forward, compressed documents are found.
    #[tokio::test]
    async fn version_hint_that_is_empty_or_a_path_is_refused() {
        let mut planner =
            Planner::load(&crate::component::wasm_path(None)).expect("the planner component");
        for (tag, hint) in [
            ("empty", ""),
            ("blank", " \n"),
            ("path", "metadata/v1.metadata.json"),
            ("abs", "/elsewhere/v2.metadata.json"),
            ("uri", "s3://b/t/metadata/v2.metadata.json"),
        ] {
            let (dir, root, store) = hint_table(tag, hint);
            let e = Pointer::VersionHint
                .resolve(&mut planner, &store, &root)
                .await
                .expect_err(tag);
            assert!(e.contains("not a version number"), "{tag}: {e}");
            let _ = std::fs::remove_dir_all(dir);
        }
        // Control: a version number is followed forward to the newest vN.
        let (dir, root, store) = hint_table("one", "1\n");
        assert_eq!(
            Pointer::VersionHint
                .resolve(&mut planner, &store, &root)
                .await
                .unwrap(),
            format!("{root}/metadata/v2.metadata.json")
        );
        // A gzip-compressed v3 written after the hint: followed.
        std::fs::write(dir.join("metadata/v3.gz.metadata.json"), b"x").unwrap();
        assert_eq!(
            Pointer::VersionHint
                .resolve(&mut planner, &store, &root)
                .await
                .unwrap(),
            format!("{root}/metadata/v3.gz.metadata.json")
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[cfg(test)]
mod command_tests {
    use super::run_command;

    /// A pointer command must exit 0 and print exactly one location.
    #[tokio::test]
    async fn pointer_commands() {
        assert_eq!(
            run_command("printf 's3://b/t/metadata/v3.metadata.json\\n'")
                .await
                .unwrap(),
            "s3://b/t/metadata/v3.metadata.json"
        );
        for bad in ["exit 3", "true", "echo a b", "printf '\\377'"] {
            assert!(run_command(bad).await.is_err(), "{bad}");
        }
    }
}
