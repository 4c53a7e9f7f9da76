//! The Iceberg catalogs the sidecar reads a table's current metadata
//! location from, and commits an expiry through:
//!
//! - **SQL** (`sqlite:PATH`): the `iceberg_tables` table pyiceberg's
//!   `SqlCatalog` and Java's `JdbcCatalog` keep; a commit is an `UPDATE …
//!   WHERE metadata_location = old` (compare-and-set).
//! - **AWS Glue** (`glue`, or `glue:ACCOUNT` for another account's
//!   catalog): the table's `metadata_location` parameter; a commit is
//!   `UpdateTable` with the `VersionId` that was read (Glue refuses it if
//!   the table changed meanwhile), after checking the parameter still
//!   names the old document. Credentials, region and endpoint are the AWS
//!   SDK's (`AWS_ENDPOINT_URL_GLUE` or `AWS_ENDPOINT_URL` for a Glue-
//!   compatible server).
//! - **Iceberg REST** (`rest:URL`, optionally `rest:URL?warehouse=W`):
//!   `GET …/namespaces/{ns}/tables/{t}` (load table) and, to commit, the
//!   `CommitTableRequest` the planner wrote, whose requirements assert the
//!   table's UUID and every ref; the server writes the new document. A
//!   bearer token is read from `LAKESWEEP_REST_TOKEN`.
//!
//! The catalog only reports and swaps pointers; what a pointer means (a
//! newer document beside it, a moved ref) is the planner's to judge.

pub mod commit;
pub mod engine_config;
pub mod pointer;

use crate::error::HostError;
use std::time::Duration;

/// A catalog of Iceberg tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Catalog {
    /// An Iceberg SQL catalog in a sqlite file.
    Sql {
        /// The database file.
        path: String,
    },
    /// The AWS Glue Data Catalog (or a Glue-compatible endpoint).
    Glue {
        /// The catalog's account id; `None`: the caller's own.
        catalog_id: Option<String>,
    },
    /// An Iceberg REST catalog.
    Rest {
        /// The base URI, without `/v1`.
        uri: String,
        /// The `warehouse` sent to `GET /v1/config`, if any.
        warehouse: Option<String>,
    },
}

/// What a catalog says of one table now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The current metadata document's URI.
    pub metadata: String,
    /// The table's location as the catalog records it, if it does (Glue's
    /// storage descriptor, the REST metadata's `location`).
    pub location: Option<String>,
}

/// One entry of a namespace as the catalog records it, of any type (a
/// Hive or Delta table, a view): every entry with a location owns its
/// prefix in a many-table run, whatever is planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its name in the namespace (never split: it may hold dots).
    pub name: String,
    /// `iceberg`, `delta`, `hive` or `view`.
    pub kind: String,
    /// The location the catalog records, if any.
    pub location: Option<String>,
    /// Its partitions' locations (Hive tables in Glue).
    pub other_locations: Vec<String>,
    /// Iceberg: the current metadata document's URI.
    pub metadata: Option<String>,
}

/// What a REST catalog answered to a commit request, as it came: the
/// planner judges it (`judge-mutation`) and, unless it is a plain
/// success, the table read again settles it (`expiry-landed`).
#[derive(Debug, Clone)]
pub struct RestAnswer {
    /// The request, in words.
    pub what: String,
    /// The answer.
    pub answer: crate::component::wt::MutationAnswer,
    /// The `metadata-location` the answer's body names, if any.
    pub metadata_location: Option<String>,
}

/// Why a commit did not land, by what the caller must do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitError {
    /// The catalog refused or was never reached: the table is unchanged.
    Refused(String),
    /// The request may or may not have been applied (a timeout, a 5xx):
    /// nothing written for the commit may be removed until someone checks.
    Unknown(String),
}

impl std::fmt::Display for CommitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommitError::Refused(e) => write!(f, "{e}"),
            CommitError::Unknown(e) => write!(f, "the commit's outcome is unknown: {e}"),
        }
    }
}

impl Catalog {
    /// Parses `--catalog`: `sqlite:PATH`, `glue`, `glue:ACCOUNT`,
    /// `rest:URL` (`http://` or `https://`).
    pub fn parse(spec: &str) -> Result<Catalog, HostError> {
        // An engine's settings name one of the catalogs below, in their
        // --catalog spelling (never trino: or spark: again).
        if let Some(path) = spec.strip_prefix("trino:") {
            return Catalog::parse(&crate::catalogs::engine_config::trino(path)?);
        }
        if let Some(name) = spec.strip_prefix("spark:") {
            return Catalog::parse(&crate::catalogs::engine_config::spark(name)?);
        }
        if let Some(path) = spec.strip_prefix("sqlite:") {
            if path.is_empty() {
                return Err("--catalog sqlite: needs the database file (sqlite:PATH)".into());
            }
            return Ok(Catalog::Sql {
                path: path.to_owned(),
            });
        }
        if spec == "glue" {
            return Ok(Catalog::Glue { catalog_id: None });
        }
        if let Some(id) = spec.strip_prefix("glue:") {
            if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
                return Err(catalog_err!(
                    "--catalog `{spec}`: glue:ACCOUNT takes a 12-digit AWS account id"
                ));
            }
            return Ok(Catalog::Glue {
                catalog_id: Some(id.to_owned()),
            });
        }
        if let Some(url) = spec.strip_prefix("rest:") {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(catalog_err!(
                    "--catalog `{spec}`: rest:URL takes an http:// or https:// URL"
                ));
            }
            let authority = url
                .split("://")
                .nth(1)
                .unwrap_or("")
                .split('/')
                .next()
                .unwrap_or("");
            if authority.contains('@') {
                return Err(catalog_err!(
                    "--catalog `{spec}`: no user or password in the URL (plans record it); give a token in LAKESWEEP_REST_TOKEN"
                ));
            }
            let (base, warehouse) = match url.split_once('?') {
                None => (url, None),
                Some((base, query)) => {
                    let w = query
                        .strip_prefix("warehouse=")
                        .filter(|w| !w.is_empty() && !w.contains('&'))
                        .ok_or_else(|| {
                            format!("--catalog `{spec}`: the only query rest:URL takes is ?warehouse=NAME")
                        })?;
                    (base, Some(w.to_owned()))
                }
            };
            return Ok(Catalog::Rest {
                uri: base.trim_end_matches('/').to_owned(),
                warehouse,
            });
        }
        Err(catalog_err!(
            "--catalog `{spec}`: give sqlite:PATH, glue, glue:ACCOUNT, rest:URL, trino:FILE (a Trino catalog properties file) or spark:NAME[@FILE] (Spark's spark.sql.catalog.NAME settings); for another catalog, --pointer-cmd prints the current metadata location"
        ))
    }

    /// The `--catalog` spelling that parses back to this catalog.
    pub fn spec(&self) -> String {
        match self {
            Catalog::Sql { path } => format!("sqlite:{path}"),
            Catalog::Glue { catalog_id: None } => "glue".into(),
            Catalog::Glue {
                catalog_id: Some(id),
            } => format!("glue:{id}"),
            Catalog::Rest {
                uri,
                warehouse: None,
            } => format!("rest:{uri}"),
            Catalog::Rest {
                uri,
                warehouse: Some(w),
            } => format!("rest:{uri}?warehouse={w}"),
        }
    }

    /// The same catalog with a relative sqlite path made absolute (a plan
    /// made here can be applied from anywhere).
    pub fn absolute(&self, abs: impl Fn(&str) -> String) -> Catalog {
        match self {
            Catalog::Sql { path } => Catalog::Sql { path: abs(path) },
            c => c.clone(),
        }
    }

    /// For reports: which kind of catalog, and where.
    pub fn describe(&self) -> String {
        match self {
            Catalog::Sql { path } => format!("sql catalog {path}"),
            Catalog::Glue { catalog_id: None } => "glue catalog".into(),
            Catalog::Glue {
                catalog_id: Some(id),
            } => format!("glue catalog {id}"),
            Catalog::Rest { uri, .. } => format!("rest catalog {uri}"),
        }
    }

    /// Where the table's current metadata is, now.
    pub async fn load(&self, namespace: &str, name: &str) -> Result<Entry, HostError> {
        match self {
            Catalog::Sql { path } => sql::load(path, namespace, name),
            Catalog::Glue { catalog_id } => glue::load(catalog_id.as_deref(), namespace, name)
                .await
                .map(|(e, _)| e),
            Catalog::Rest { uri, warehouse } => {
                rest::Client::new(uri, warehouse.as_deref())
                    .await?
                    .load(namespace, name)
                    .await
            }
        }
    }

    /// Every entry of a namespace, of any type, sorted by name: a
    /// many-table run's ownership map is made from them.
    pub async fn entries(&self, namespace: &str) -> Result<Vec<Record>, HostError> {
        let mut all = match self {
            Catalog::Sql { path } => sql::entries(path, namespace)?,
            Catalog::Glue { catalog_id } => glue::entries(catalog_id.as_deref(), namespace).await?,
            Catalog::Rest { uri, warehouse } => {
                let client = rest::Client::new(uri, warehouse.as_deref()).await?;
                let mut out = Vec::new();
                for name in client.tables(namespace).await? {
                    let e = client.load(namespace, &name).await?;
                    out.push(Record {
                        name,
                        kind: "iceberg".into(),
                        location: e.location,
                        other_locations: Vec::new(),
                        metadata: Some(e.metadata),
                    });
                }
                out
            }
        };
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all.dedup_by(|a, b| a.name == b.name);
        Ok(all)
    }

    /// Whether a commit is the planner's request sent to the catalog (which
    /// writes the new document itself), rather than a document the sidecar
    /// writes and a pointer it swaps.
    pub fn commits_requests(&self) -> bool {
        matches!(self, Catalog::Rest { .. })
    }

    /// Swaps the pointer from `old` to `new` if it still names `old`.
    pub async fn swap(
        &self,
        namespace: &str,
        name: &str,
        old: &str,
        new: &str,
    ) -> Result<(), CommitError> {
        match self {
            Catalog::Sql { path } => sql::swap(path, namespace, name, old, new),
            Catalog::Glue { catalog_id } => {
                glue::swap(catalog_id.as_deref(), namespace, name, old, new).await
            }
            Catalog::Rest { .. } => Err(CommitError::Refused(
                "a REST catalog writes its own documents: commit the planner's request".into(),
            )),
        }
    }

    /// Sends the planner's `CommitTableRequest` (REST only) for a table
    /// whose current metadata must still be `original`; the new metadata
    /// location on success.
    pub async fn commit_request(
        &self,
        namespace: &str,
        name: &str,
        request: &str,
        original: &str,
    ) -> Result<RestAnswer, CommitError> {
        match self {
            Catalog::Rest { uri, warehouse } => {
                rest::Client::new(uri, warehouse.as_deref())
                    .await
                    .map_err(|e| CommitError::Refused(e.to_string()))?
                    .commit(namespace, name, request, original)
                    .await
            }
            c => Err(CommitError::Refused(format!(
                "{} commits by swapping its pointer, not by request",
                c.describe()
            ))),
        }
    }
}

/// The SQL catalog (`iceberg_tables`).
mod sql {
    use super::{CommitError, Entry};
    use crate::error::HostError;
    use rusqlite::{Connection, OpenFlags};

    fn open_read(path: &str) -> Result<Connection, HostError> {
        Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| catalog_err!("open catalog {path}: {e}"))
    }

    /// `SELECT metadata_location` for one table, read-only.
    pub fn load(path: &str, namespace: &str, name: &str) -> Result<Entry, HostError> {
        let conn = open_read(path)?;
        let mut stmt = conn
            .prepare(
                "SELECT catalog_name, metadata_location FROM iceberg_tables \
                 WHERE table_namespace = ?1 AND table_name = ?2",
            )
            .map_err(|e| catalog_err!("catalog {path} has no Iceberg SQL catalog schema: {e}"))?;
        let rows: Vec<(String, Option<String>)> = stmt
            .query_map([namespace, name], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|it| it.collect())
            .map_err(|e| catalog_err!("query catalog {path}: {e}"))?;
        match rows.as_slice() {
            [] => Err(catalog_err!(
                "catalog {path} has no table {namespace}.{name}"
            )),
            [(_, Some(m))] => Ok(Entry {
                metadata: m.clone(),
                location: None,
            }),
            [(c, None)] => Err(catalog_err!(
                "catalog {path}: {namespace}.{name} (catalog `{c}`) has no metadata location"
            )),
            many => Err(catalog_err!(
                "catalog {path}: {namespace}.{name} exists in {} catalogs ({}); ambiguous",
                many.len(),
                many.iter()
                    .map(|(c, _)| c.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// Every table of one namespace with its metadata location (the SQL
    /// catalog holds Iceberg tables only).
    pub fn entries(path: &str, namespace: &str) -> Result<Vec<super::Record>, HostError> {
        let conn = open_read(path)?;
        let typed = conn
            .prepare("SELECT iceberg_type FROM iceberg_tables LIMIT 0")
            .is_ok();
        let sql = if typed {
            "SELECT table_name, metadata_location FROM iceberg_tables WHERE table_namespace = ?1 \
             AND (iceberg_type IS NULL OR iceberg_type = 'TABLE')"
        } else {
            "SELECT table_name, metadata_location FROM iceberg_tables WHERE table_namespace = ?1"
        };
        let mut stmt = conn
            .prepare(sql)
            .map_err(|e| catalog_err!("catalog {path} has no Iceberg SQL catalog schema: {e}"))?;
        let rows: Vec<(String, Option<String>)> = stmt
            .query_map([namespace], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|it| it.collect())
            .map_err(|e| catalog_err!("query catalog {path}: {e}"))?;
        Ok(rows
            .into_iter()
            .map(|(name, metadata)| super::Record {
                name,
                kind: "iceberg".into(),
                location: None,
                other_locations: Vec::new(),
                metadata,
            })
            .collect())
    }

    /// Compare-and-set of the pointer.
    pub fn swap(
        path: &str,
        namespace: &str,
        name: &str,
        old: &str,
        new: &str,
    ) -> Result<(), CommitError> {
        let refused = CommitError::Refused;
        let conn =
            Connection::open(path).map_err(|e| refused(format!("open catalog {path}: {e}")))?;
        // SQLite applies one statement wholly or not at all.
        let n = conn
            .execute(
                "UPDATE iceberg_tables SET metadata_location = ?1, previous_metadata_location = ?2 \
                 WHERE table_namespace = ?3 AND table_name = ?4 AND metadata_location = ?2",
                [new, old, namespace, name],
            )
            .map_err(|e| refused(format!("update catalog {path}: {e}")))?;
        match n {
            1 => Ok(()),
            0 => Err(refused(format!(
                "the catalog no longer points {namespace}.{name} at {old}: a commit landed meanwhile"
            ))),
            n => Err(CommitError::Unknown(format!(
                "the catalog updated {n} rows for {namespace}.{name}"
            ))),
        }
    }
}

/// Without the cloud clients (the demo's build), Glue is named, not reached.
#[cfg(not(feature = "cloud"))]
mod glue {
    use super::{CommitError, Entry};
    use crate::error::HostError;

    const NONE: &str = "the Glue catalog: this lakesweep was built without the cloud clients (the demo's build); build it with them: cargo install --path host-examples/sidecar";

    pub async fn load(_: Option<&str>, _: &str, _: &str) -> Result<(Entry, ()), HostError> {
        Err(NONE.into())
    }

    pub async fn entries(_: Option<&str>, _: &str) -> Result<Vec<super::Record>, HostError> {
        Err(NONE.into())
    }

    pub async fn swap(
        _: Option<&str>,
        _: &str,
        _: &str,
        _: &str,
        _: &str,
    ) -> Result<(), CommitError> {
        Err(CommitError::Refused(NONE.into()))
    }
}

/// The AWS Glue Data Catalog, through the AWS SDK.
#[cfg(feature = "cloud")]
mod glue {
    use super::{CommitError, Entry};
    use crate::error::HostError;
    use aws_sdk_glue::error::ProvideErrorMetadata;
    use aws_sdk_glue::types::{Table, TableInput};
    use aws_sdk_glue::Client;

    async fn client() -> Client {
        Client::new(&crate::stores::s3::aws_config().await)
    }

    fn database(namespace: &str) -> Result<&str, HostError> {
        if namespace.contains('.') {
            return Err(catalog_err!(
                "Glue databases are one level: `{namespace}` is nested"
            ));
        }
        Ok(namespace)
    }

    fn words<E, R>(e: &aws_sdk_glue::error::SdkError<E, R>) -> String
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug,
    {
        match (e.code(), e.message()) {
            (Some(c), Some(m)) => format!("{c}: {m}"),
            (Some(c), None) => c.to_owned(),
            _ => format!("{}", aws_sdk_glue::error::DisplayErrorContext(e)),
        }
    }

    fn is_iceberg(t: &Table) -> bool {
        t.parameters()
            .and_then(|p| p.get("table_type"))
            .is_some_and(|v| v.eq_ignore_ascii_case("iceberg"))
    }

    /// The table's entry and the Glue table as read (for its `VersionId`).
    pub async fn load(
        catalog_id: Option<&str>,
        namespace: &str,
        name: &str,
    ) -> Result<(Entry, Table), HostError> {
        let db = database(namespace)?;
        let out = client()
            .await
            .get_table()
            .set_catalog_id(catalog_id.map(str::to_owned))
            .database_name(db)
            .name(name)
            .send()
            .await
            .map_err(|e| catalog_err!("glue GetTable {namespace}.{name}: {}", words(&e)))?;
        let t = out.table.ok_or_else(|| {
            catalog_err!("glue GetTable {namespace}.{name}: no table in the answer")
        })?;
        if !is_iceberg(&t) {
            return Err(catalog_err!(
                "glue table {namespace}.{name} is not an Iceberg table (its table_type parameter is not ICEBERG)"
            ));
        }
        let metadata = t
            .parameters()
            .and_then(|p| p.get("metadata_location"))
            .filter(|m| !m.is_empty())
            .cloned()
            .ok_or_else(|| {
                format!("glue table {namespace}.{name} has no metadata_location parameter")
            })?;
        let location = t
            .storage_descriptor()
            .and_then(|s| s.location())
            .map(str::to_owned);
        Ok((Entry { metadata, location }, t))
    }

    /// What a Glue table is: `iceberg` (its `table_type` parameter),
    /// `delta` (a Delta provider or table type), `view`, else `hive`.
    fn kind(t: &Table) -> &'static str {
        let param = |k: &str| t.parameters().and_then(|p| p.get(k)).map(String::as_str);
        if is_iceberg(t) {
            "iceberg"
        } else if param("spark.sql.sources.provider")
            .is_some_and(|v| v.eq_ignore_ascii_case("delta"))
            || param("table_type").is_some_and(|v| v.eq_ignore_ascii_case("delta"))
        {
            "delta"
        } else if t
            .table_type()
            .is_some_and(|v| v.eq_ignore_ascii_case("VIRTUAL_VIEW"))
        {
            "view"
        } else {
            "hive"
        }
    }

    /// Every table of a database, of any type, with its location; a
    /// partitioned non-Iceberg table with its partitions' locations too.
    pub async fn entries(
        catalog_id: Option<&str>,
        namespace: &str,
    ) -> Result<Vec<super::Record>, HostError> {
        let db = database(namespace)?;
        let client = client().await;
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        let mut seen_tokens = std::collections::BTreeSet::new();
        loop {
            let page = client
                .get_tables()
                .set_catalog_id(catalog_id.map(str::to_owned))
                .database_name(db)
                .set_next_token(token.take())
                .send()
                .await
                .map_err(|e| catalog_err!("glue GetTables {namespace}: {}", words(&e)))?;
            for t in page.table_list() {
                let kind = kind(t);
                let location = t
                    .storage_descriptor()
                    .and_then(|s| s.location())
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned);
                let mut other_locations = Vec::new();
                if kind != "iceberg" && !t.partition_keys().is_empty() {
                    other_locations = partitions(&client, catalog_id, db, t.name()).await?;
                }
                out.push(super::Record {
                    name: t.name().to_owned(),
                    kind: kind.into(),
                    location,
                    other_locations,
                    metadata: t
                        .parameters()
                        .and_then(|p| p.get("metadata_location"))
                        .filter(|m| !m.is_empty() && kind == "iceberg")
                        .cloned(),
                });
            }
            match page.next_token {
                Some(t) if !t.is_empty() => {
                    if !seen_tokens.insert(t.clone()) {
                        return Err(catalog_err!("glue GetTables {namespace}: the page token `{t}` came back: the listing would not end"));
                    }
                    token = Some(t)
                }
                _ => return Ok(out),
            }
        }
    }

    /// The locations of a table's partitions.
    async fn partitions(
        client: &Client,
        catalog_id: Option<&str>,
        db: &str,
        table: &str,
    ) -> Result<Vec<String>, HostError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        let mut seen_tokens = std::collections::BTreeSet::new();
        loop {
            let page = client
                .get_partitions()
                .set_catalog_id(catalog_id.map(str::to_owned))
                .database_name(db)
                .table_name(table)
                .set_next_token(token.take())
                .send()
                .await
                .map_err(|e| catalog_err!("glue GetPartitions {db}.{table}: {}", words(&e)))?;
            out.extend(
                page.partitions()
                    .iter()
                    .filter_map(|p| p.storage_descriptor()?.location())
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned),
            );
            match page.next_token {
                Some(t) if !t.is_empty() => {
                    if !seen_tokens.insert(t.clone()) {
                        return Err(catalog_err!("glue GetPartitions {db}.{table}: the page token `{t}` came back: the listing would not end"));
                    }
                    token = Some(t)
                }
                _ => return Ok(out),
            }
        }
    }

    /// `UpdateTable` guarded twice: the parameter must still name `old`,
    /// and the `VersionId` read with it must still be current. Sent once
    /// (no SDK retry: a retry of an update that was applied but whose
    /// answer was lost comes back as a conflict); after any error the table
    /// is read again, and only a table still naming `old` after a definite
    /// answer counts as refused.
    pub async fn swap(
        catalog_id: Option<&str>,
        namespace: &str,
        name: &str,
        old: &str,
        new: &str,
    ) -> Result<(), CommitError> {
        let (entry, t) = load(catalog_id, namespace, name)
            .await
            .map_err(|e| CommitError::Refused(e.to_string()))?;
        if entry.metadata != old {
            return Err(CommitError::Refused(format!(
                "glue no longer points {namespace}.{name} at {old} (it names {}): a commit landed meanwhile",
                entry.metadata
            )));
        }
        let Some(version_id) = t.version_id().map(str::to_owned) else {
            return Err(CommitError::Refused(format!(
                "glue answered no VersionId for {namespace}.{name}: without it an update cannot be guarded against a concurrent commit"
            )));
        };
        let mut parameters = t.parameters().cloned().unwrap_or_default();
        parameters.insert("metadata_location".into(), new.to_owned());
        parameters.insert("previous_metadata_location".into(), old.to_owned());
        let input = TableInput::builder()
            .name(t.name())
            .set_description(t.description().map(str::to_owned))
            .set_owner(t.owner().map(str::to_owned))
            .set_last_access_time(t.last_access_time().cloned())
            .set_last_analyzed_time(t.last_analyzed_time().cloned())
            .retention(t.retention())
            .set_storage_descriptor(t.storage_descriptor().cloned())
            .set_partition_keys(t.partition_keys.clone())
            .set_view_original_text(t.view_original_text().map(str::to_owned))
            .set_view_expanded_text(t.view_expanded_text().map(str::to_owned))
            .set_table_type(t.table_type().map(str::to_owned))
            .set_target_table(t.target_table().cloned())
            .set_parameters(Some(parameters))
            .build()
            .map_err(|e| CommitError::Refused(format!("glue TableInput: {e}")))?;
        let once = aws_sdk_glue::config::Builder::from(&crate::stores::s3::aws_config().await)
            .retry_config(aws_sdk_glue::config::retry::RetryConfig::disabled())
            .build();
        let r = Client::from_conf(once)
            .update_table()
            .set_catalog_id(catalog_id.map(str::to_owned))
            .database_name(database(namespace).map_err(|e| CommitError::Refused(e.to_string()))?)
            .table_input(input)
            .version_id(version_id)
            .send()
            .await;
        let e = match r {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let definite = e.as_service_error().is_some_and(|s| {
            matches!(
                s.code(),
                Some(
                    "ConcurrentModificationException"
                        | "EntityNotFoundException"
                        | "InvalidInputException"
                        | "AccessDeniedException"
                )
            )
        });
        let why = format!("glue UpdateTable {namespace}.{name}: {}", words(&e));
        // What the table names now settles what the answer did not.
        // (Sent once, a definite answer is about this request alone.)
        match load(catalog_id, namespace, name).await {
            Ok((now, _)) if now.metadata == new => Ok(()),
            _ if definite => Err(CommitError::Refused(why)),
            _ => Err(CommitError::Unknown(why)),
        }
    }
}

/// The Iceberg REST catalog protocol (the parts a sweeper needs).
mod rest {
    use super::{CommitError, Duration, Entry};
    use crate::error::HostError;
    use serde_json::Value;

    /// Bytes escaped in one path segment: everything but RFC 3986's unreserved.
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');

    /// A connected catalog: its base and the prefix its config names.
    pub struct Client {
        http: reqwest::Client,
        base: String,
    }

    fn segment(s: &str) -> String {
        percent_encoding::utf8_percent_encode(s, SEGMENT).to_string()
    }

    /// A namespace's path segment: its levels joined by the unit separator.
    fn namespace_segment(namespace: &str) -> String {
        segment(&namespace.split('.').collect::<Vec<_>>().join("\u{1f}"))
    }

    impl Client {
        /// Reads `GET /v1/config` for the catalog's path prefix.
        pub async fn new(uri: &str, warehouse: Option<&str>) -> Result<Client, HostError> {
            // No redirects: a redirected POST comes back as a GET, whose
            // 200 would read as a commit.
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(Duration::from_secs(10))
                .timeout(Duration::from_secs(60))
                .build()
                .map_err(|e| catalog_err!("rest catalog {uri}: {e}"))?;
            let mut url = format!("{uri}/v1/config");
            if let Some(w) = warehouse {
                url.push_str(&format!("?warehouse={}", segment(w)));
            }
            let config = get(&http, &url).await?;
            let prefix = config["overrides"]["prefix"]
                .as_str()
                .or_else(|| config["defaults"]["prefix"].as_str());
            let base = match prefix {
                Some(p) if !p.is_empty() => format!("{uri}/v1/{}", p.trim_matches('/')),
                _ => format!("{uri}/v1"),
            };
            Ok(Client { http, base })
        }

        fn table_url(&self, namespace: &str, name: &str) -> String {
            format!(
                "{}/namespaces/{}/tables/{}",
                self.base,
                namespace_segment(namespace),
                segment(name)
            )
        }

        /// `GET …/tables/{t}`: `metadata-location` and the metadata's `location`.
        pub async fn load(&self, namespace: &str, name: &str) -> Result<Entry, HostError> {
            let v = get(&self.http, &self.table_url(namespace, name)).await?;
            let metadata = v["metadata-location"]
                .as_str()
                .filter(|m| !m.is_empty())
                .ok_or_else(|| {
                    format!("rest catalog: {namespace}.{name} has no metadata-location")
                })?
                .to_owned();
            Ok(Entry {
                metadata,
                location: v["metadata"]["location"].as_str().map(str::to_owned),
            })
        }

        /// `GET …/namespaces/{ns}/tables`, every page.
        pub async fn tables(&self, namespace: &str) -> Result<Vec<String>, HostError> {
            let url = format!(
                "{}/namespaces/{}/tables",
                self.base,
                namespace_segment(namespace)
            );
            let mut names = Vec::new();
            let mut token: Option<String> = None;
            let mut seen = std::collections::BTreeSet::new();
            loop {
                let page = match &token {
                    Some(t) => format!("{url}?pageToken={}", segment(t)),
                    None => url.clone(),
                };
                let v = get(&self.http, &page).await?;
                let ids = v["identifiers"]
                    .as_array()
                    .ok_or_else(|| catalog_err!("rest catalog: {page} answered no identifiers"))?;
                for id in ids {
                    let n = id["name"].as_str().ok_or_else(|| {
                        catalog_err!("rest catalog: {page} answered an unnamed table")
                    })?;
                    names.push(n.to_owned());
                }
                match v["next-page-token"].as_str() {
                    // Any token seen before (a, b, a, ...): the listing
                    // would never end.
                    Some(t) if !t.is_empty() && !seen.insert(t.to_owned()) => {
                        return Err(catalog_err!(
                            "rest catalog: {page} answered page token `{t}`, which an earlier page gave: the listing would not end"
                        ))
                    }
                    Some(t) if !t.is_empty() => token = Some(t.to_owned()),
                    _ => return Ok(names),
                }
            }
        }

        /// `POST …/tables/{t}` with the planner's requirements and updates,
        /// after checking the table still names `original` (the
        /// requirements assert the refs the expiry saw, not refs created
        /// since; this narrows that window to the request itself).
        pub async fn commit(
            &self,
            namespace: &str,
            name: &str,
            request: &str,
            original: &str,
        ) -> Result<super::RestAnswer, CommitError> {
            let url = self.table_url(namespace, name);
            let now = self
                .load(namespace, name)
                .await
                .map_err(|e| CommitError::Refused(e.to_string()))?;
            if now.metadata != original {
                return Err(CommitError::Refused(format!(
                    "the catalog now names {} for {namespace}.{name}, the expiry was planned on {original}: a commit landed meanwhile",
                    now.metadata
                )));
            }
            let mut body: Value = serde_json::from_str(request)
                .map_err(|e| CommitError::Refused(format!("the planner's commit request: {e}")))?;
            if !body.is_object() {
                return Err(CommitError::Refused(
                    "the planner's commit request is not a JSON object".into(),
                ));
            }
            body["identifier"] = serde_json::json!({
                "namespace": namespace.split('.').collect::<Vec<_>>(),
                "name": name,
            });
            // The answer is the planner's to judge, and the table read
            // again its to settle (a 409 after a gateway retried a commit
            // that landed is not a refusal).
            let r = authorised(self.http.post(&url))
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await;
            let (answer, metadata_location) = match r {
                Ok(r) => {
                    let status = r.status().as_u16();
                    let location = r
                        .headers()
                        .get(reqwest::header::LOCATION)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    let text = r.text().await.unwrap_or_default();
                    let named = serde_json::from_str::<Value>(&text)
                        .ok()
                        .and_then(|v| v["metadata-location"].as_str().map(str::to_owned));
                    (
                        crate::component::wt::MutationAnswer {
                            status: Some(status),
                            location,
                            error: Some(message(&text)).filter(|m| !m.is_empty()),
                            not_sent: false,
                        },
                        named,
                    )
                }
                Err(e) => (
                    crate::component::wt::MutationAnswer {
                        status: None,
                        location: None,
                        not_sent: e.is_connect(),
                        error: Some(e.to_string()),
                    },
                    None,
                ),
            };
            Ok(super::RestAnswer {
                what: format!("POST {url}"),
                answer,
                metadata_location,
            })
        }
    }

    fn authorised(b: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match std::env::var("LAKESWEEP_REST_TOKEN") {
            Ok(t) if !t.is_empty() => b.bearer_auth(t),
            _ => b,
        }
    }

    /// The error model's message, else the body's first 200 characters.
    fn message(text: &str) -> String {
        serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| text.chars().take(200).collect())
    }

    async fn get(http: &reqwest::Client, url: &str) -> Result<Value, HostError> {
        let r = authorised(http.get(url))
            .send()
            .await
            .map_err(|e| catalog_err!("GET {url}: {e}"))?;
        let status = r.status();
        let text = r.text().await.map_err(|e| catalog_err!("GET {url}: {e}"))?;
        if !status.is_success() {
            return Err(catalog_err!("GET {url}: {status}: {}", message(&text)));
        }
        serde_json::from_str(&text).map_err(|e| catalog_err!("GET {url}: not JSON: {e}"))
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn segments_are_escaped() {
            assert_eq!(super::namespace_segment("a.b c"), "a%1Fb%20c");
            assert_eq!(super::segment("t/../x"), "t%2F..%2Fx");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Views share the JDBC catalog's table: a namespace lists tables only.
    #[tokio::test]
    async fn a_sql_namespace_lists_tables_not_views() {
        let db = std::env::temp_dir().join(format!("lakesweep-views-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&db);
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE iceberg_tables (catalog_name TEXT, table_namespace TEXT, table_name TEXT,
                 metadata_location TEXT, previous_metadata_location TEXT, iceberg_type TEXT);
             INSERT INTO iceberg_tables VALUES ('c', 'db', 't', 'file:///w/t/metadata/v1.metadata.json', NULL, 'TABLE');
             INSERT INTO iceberg_tables VALUES ('c', 'db', 'old', 'file:///w/old/metadata/v1.metadata.json', NULL, NULL);
             INSERT INTO iceberg_tables VALUES ('c', 'db', 'v', 'file:///w/v/metadata/v1.metadata.json', NULL, 'VIEW');",
        )
        .unwrap();
        let cat = Catalog::Sql {
            path: db.display().to_string(),
        };
        let names: Vec<String> = cat
            .entries("db")
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, vec!["old", "t"]);
        let _ = std::fs::remove_file(&db);
    }

    #[test]
    fn specs_round_trip() {
        for spec in [
            "sqlite:/c.db",
            "glue",
            "glue:123456789012",
            "rest:http://127.0.0.1:8181",
            "rest:https://cat.example/api?warehouse=wh",
        ] {
            assert_eq!(Catalog::parse(spec).unwrap().spec(), spec, "{spec}");
        }
        assert_eq!(
            Catalog::parse("rest:http://h/").unwrap().spec(),
            "rest:http://h"
        );
        for bad in [
            "sqlite:",
            "glue:abc",
            "rest:ftp://h",
            "rest:http://h?x=1",
            "rest:https://user:pw@h/api",
            "hive:thrift://h",
            "postgres:x",
        ] {
            assert!(Catalog::parse(bad).is_err(), "{bad}");
        }
    }
}
