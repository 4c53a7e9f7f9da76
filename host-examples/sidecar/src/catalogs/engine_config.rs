//! A catalog named the way the engine next to the sidecar names it: a
//! Trino catalog properties file (`--catalog trino:FILE`) or Spark's
//! `spark.sql.catalog.NAME.*` settings (`--catalog spark:NAME`, from
//! `spark-defaults.conf`, or `spark:NAME@FILE`). The settings are read into
//! the `--catalog` spelling of one of the catalogs the sidecar speaks
//! (`sqlite:PATH`, `glue`, `glue:ACCOUNT`, `rest:URL`), which the catalog
//! module then parses as if it had been given; a setting that says which
//! catalog or table is meant and that this cannot honour is named in the
//! error, never skipped.

use crate::error::HostError;
use std::collections::BTreeMap;

/// A Java properties file's `key=value` (or `key: value`, `key value`)
/// lines; `#` and `!` start comments. Escapes and continuation lines are
/// refused by name (no catalog setting here needs them).
fn properties(text: &str, file: &str, spark: bool) -> Result<BTreeMap<String, String>, HostError> {
    let mut out = BTreeMap::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        if line.ends_with('\\') {
            return Err(catalog_err!(
                "{file}:{}: a continued line is not read here: write the setting on one line",
                n + 1
            ));
        }
        let split = if spark {
            line.find(|c: char| c.is_whitespace() || c == '=')
        } else {
            line.find(['=', ':'])
        };
        let (k, v) = match split {
            Some(i) => (
                line[..i].trim(),
                line[i + 1..].trim().trim_start_matches(['=', ':']).trim(),
            ),
            None => return Err(catalog_err!("{file}:{}: `{line}` is not KEY=VALUE", n + 1)),
        };
        out.insert(k.to_owned(), v.to_owned());
    }
    Ok(out)
}

fn read(path: &str) -> Result<String, HostError> {
    std::fs::read_to_string(path).map_err(|e| catalog_err!("read {path}: {e}"))
}

/// A JDBC URL the SQL catalog can open (`jdbc:sqlite:PATH`).
fn jdbc(url: &str, setting: &str) -> Result<String, HostError> {
    match url.strip_prefix("jdbc:sqlite:") {
        Some(path) if !path.is_empty() => Ok(format!("sqlite:{}", path.trim_start_matches("file:"))),
        _ => Err(catalog_err!(
            "{setting}={url}: only a sqlite database (jdbc:sqlite:PATH) is read here; for another database give --pointer-cmd"
        )),
    }
}

/// A REST catalog from its URI and warehouse; a credential in the file is
/// named (the token goes in `LAKESWEEP_REST_TOKEN`).
fn rest(uri: &str, warehouse: Option<&String>) -> Result<String, HostError> {
    Ok(match warehouse {
        Some(w) if !w.is_empty() => format!("rest:{uri}?warehouse={w}"),
        _ => format!("rest:{uri}"),
    })
}

/// The AWS region a Glue setting names, when it is not the one the
/// sidecar's AWS configuration uses.
fn glue_region(region: Option<&String>, setting: &str) -> Result<(), HostError> {
    let Some(r) = region else { return Ok(()) };
    let env = std::env::var("AWS_REGION")
        .or_else(|_| std::env::var("AWS_DEFAULT_REGION"))
        .ok();
    if env.as_deref() == Some(r.as_str()) {
        return Ok(());
    }
    Err(catalog_err!(
        "{setting}={r}: the Glue client takes its region from the AWS configuration; set AWS_REGION={r}"
    ))
}

/// Settings under `prefix` this does not read, refused by name.
fn unread(
    settings: &BTreeMap<String, String>,
    prefixes: &[&str],
    read: &[&str],
    file: &str,
) -> Result<(), HostError> {
    let left: Vec<&String> = settings
        .keys()
        .filter(|k| prefixes.iter().any(|p| k.starts_with(p)) && !read.contains(&k.as_str()))
        .collect();
    if left.is_empty() {
        return Ok(());
    }
    Err(catalog_err!(
        "{file}: {} cannot be honoured here (which catalog or table is meant would differ): remove {} or name the catalog with --catalog",
        left.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
        if left.len() == 1 { "it" } else { "them" }
    ))
}

/// The `--catalog` spelling of a Trino catalog properties file's catalog.
pub fn trino(path: &str) -> Result<String, HostError> {
    let s = properties(&read(path)?, path, false)?;
    let get = |k: &str| s.get(k);
    match get("connector.name").map(String::as_str) {
        Some("iceberg") => {}
        Some("delta_lake" | "delta-lake") => {
            return Err(catalog_err!(
                "{path}: connector.name=delta_lake: a Delta table's pointer is its own _delta_log/, not the catalog's: plan the table's location without --catalog"
            ))
        }
        Some(other) => return Err(catalog_err!("{path}: connector.name={other} is not an Iceberg catalog")),
        None => return Err(catalog_err!("{path}: no connector.name: not a Trino catalog file")),
    }
    let kind = get("iceberg.catalog.type")
        .map(String::as_str)
        .unwrap_or("hive_metastore");
    let catalog = match kind {
        "rest" => {
            let uri = get("iceberg.rest-catalog.uri")
                .ok_or_else(|| catalog_err!("{path}: iceberg.catalog.type=rest without iceberg.rest-catalog.uri"))?;
            unread(
                &s,
                &["iceberg.rest-catalog."],
                &["iceberg.rest-catalog.uri", "iceberg.rest-catalog.warehouse", "iceberg.rest-catalog.security"],
                path,
            )?;
            match get("iceberg.rest-catalog.security").map(String::as_str) {
                None | Some("NONE") => {}
                Some(other) => {
                    return Err(catalog_err!(
                        "{path}: iceberg.rest-catalog.security={other}: give the catalog's token in LAKESWEEP_REST_TOKEN (remove the setting)"
                    ))
                }
            }
            rest(uri, get("iceberg.rest-catalog.warehouse"))?
        }
        "glue" => {
            unread(
                &s,
                &["hive.metastore.glue.", "iceberg.glue."],
                &["hive.metastore.glue.catalogid", "hive.metastore.glue.region"],
                path,
            )?;
            glue_region(get("hive.metastore.glue.region"), "hive.metastore.glue.region")?;
            match get("hive.metastore.glue.catalogid") {
                Some(id) => format!("glue:{id}"),
                None => "glue".to_owned(),
            }
        }
        "jdbc" => {
            let url = get("iceberg.jdbc-catalog.connection-url").ok_or_else(|| {
                format!("{path}: iceberg.catalog.type=jdbc without iceberg.jdbc-catalog.connection-url")
            })?;
            unread(
                &s,
                &["iceberg.jdbc-catalog."],
                &["iceberg.jdbc-catalog.connection-url", "iceberg.jdbc-catalog.catalog-name", "iceberg.jdbc-catalog.default-warehouse-dir"],
                path,
            )?;
            jdbc(url, "iceberg.jdbc-catalog.connection-url")?
        }
        "hive_metastore" | "hive" => {
            return Err(catalog_err!(
                "{path}: iceberg.catalog.type={kind}: no Hive metastore client here; give --pointer-cmd with a command that prints the table's metadata_location (docs/commands.md has a recipe)"
            ))
        }
        other => return Err(catalog_err!("{path}: iceberg.catalog.type={other} is not read here (rest, glue, jdbc)")),
    };
    Ok(catalog)
}

/// Where Spark keeps its defaults: `$SPARK_CONF_DIR/spark-defaults.conf`,
/// else `$SPARK_HOME/conf/spark-defaults.conf`.
fn spark_defaults() -> Result<String, HostError> {
    if let Some(d) = std::env::var_os("SPARK_CONF_DIR") {
        return Ok(std::path::Path::new(&d)
            .join("spark-defaults.conf")
            .display()
            .to_string());
    }
    if let Some(h) = std::env::var_os("SPARK_HOME") {
        return Ok(std::path::Path::new(&h)
            .join("conf/spark-defaults.conf")
            .display()
            .to_string());
    }
    Err("spark:NAME reads spark-defaults.conf from $SPARK_CONF_DIR or $SPARK_HOME/conf: set one, or give spark:NAME@FILE".into())
}

/// The `--catalog` spelling of the catalog Spark names `name`
/// (`spark:NAME`, or `spark:NAME@FILE`).
pub fn spark(spec: &str) -> Result<String, HostError> {
    let (name, file) = match spec.split_once('@') {
        Some((n, f)) => (n, f.to_owned()),
        None => (spec, spark_defaults()?),
    };
    if name.is_empty() || name.contains('.') {
        return Err(catalog_err!("spark:{spec}: give the catalog's name as Spark's settings spell it (spark.sql.catalog.NAME)"));
    }
    let s = properties(&read(&file)?, &file, true)?;
    let base = format!("spark.sql.catalog.{name}");
    let class = s
        .get(&base)
        .ok_or_else(|| catalog_err!("{file}: no {base}: Spark has no catalog named {name}"))?;
    if !class.starts_with("org.apache.iceberg.spark.") {
        return Err(catalog_err!(
            "{file}: {base}={class} is not an Iceberg catalog"
        ));
    }
    let get = |k: &str| s.get(&format!("{base}.{k}"));
    let kind = match (
        get("type").map(String::as_str),
        get("catalog-impl").map(String::as_str),
    ) {
        (Some(t), None) => t.to_owned(),
        (None, Some("org.apache.iceberg.aws.glue.GlueCatalog")) => "glue".into(),
        (None, Some("org.apache.iceberg.rest.RESTCatalog")) => "rest".into(),
        (None, Some("org.apache.iceberg.jdbc.JdbcCatalog")) => "jdbc".into(),
        (None, Some(other)) => {
            return Err(catalog_err!(
                "{file}: {base}.catalog-impl={other} is not read here (REST, Glue, JDBC)"
            ))
        }
        (Some(_), Some(_)) => {
            return Err(catalog_err!(
                "{file}: {base} gives both type and catalog-impl"
            ))
        }
        (None, None) => "hive".into(),
    };
    let read_keys = [
        "type",
        "catalog-impl",
        "uri",
        "warehouse",
        "glue.id",
        "client.region",
        "io-impl",
        "token",
    ];
    let own = format!("{base}.");
    let left: Vec<String> = s
        .keys()
        .filter_map(|k| k.strip_prefix(&own))
        .filter(|k| {
            !read_keys.contains(k)
                && !k.starts_with("s3.")
                && !k.starts_with("header.")
                && !k.starts_with("default-namespace")
        })
        .map(|k| format!("`{own}{k}`"))
        .collect();
    if !left.is_empty() {
        return Err(catalog_err!(
            "{file}: {} cannot be honoured here (which catalog or table is meant would differ)",
            left.join(", ")
        ));
    }
    if get("token").is_some() {
        return Err(catalog_err!("{file}: {base}.token: give the catalog's token in LAKESWEEP_REST_TOKEN (remove the setting)"));
    }
    match kind.as_str() {
        "rest" => {
            let uri = get("uri").ok_or_else(|| catalog_err!("{file}: {base}.type=rest without {base}.uri"))?;
            rest(uri, get("warehouse"))
        }
        "glue" => {
            glue_region(get("client.region"), &format!("{base}.client.region"))?;
            match get("glue.id") {
                Some(id) => Ok(format!("glue:{id}")),
                None => Ok("glue".to_owned()),
            }
        }
        "jdbc" => jdbc(get("uri").ok_or_else(|| catalog_err!("{file}: {base}.type=jdbc without {base}.uri"))?, &format!("{base}.uri")),
        "hadoop" => Err(catalog_err!(
            "{file}: {base}.type=hadoop keeps each table's pointer in the table (metadata/version-hint.text): plan the table's location without --catalog"
        )),
        "hive" => Err(catalog_err!(
            "{file}: {base} is a Hive metastore catalog: no Hive metastore client here; give --pointer-cmd with a command that prints the table's metadata_location"
        )),
        other => Err(catalog_err!("{file}: {base}.type={other} is not read here (rest, glue, jdbc)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(tag: &str, text: &str) -> String {
        let p = std::env::temp_dir().join(format!("lakesweep-engine-{tag}-{}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    #[test]
    fn trino_catalog_files() {
        let f = file("rest", "connector.name=iceberg\niceberg.catalog.type=rest\niceberg.rest-catalog.uri=http://127.0.0.1:8181\niceberg.rest-catalog.warehouse=lake\n# a comment\niceberg.file-format=PARQUET\n");
        assert_eq!(
            trino(&f).unwrap(),
            "rest:http://127.0.0.1:8181?warehouse=lake"
        );
        let f = file("glue", "connector.name=iceberg\niceberg.catalog.type=glue\nhive.metastore.glue.catalogid=123456789012\n");
        assert_eq!(trino(&f).unwrap(), "glue:123456789012");
        let f = file("jdbc", "connector.name=iceberg\niceberg.catalog.type=jdbc\niceberg.jdbc-catalog.connection-url=jdbc:sqlite:/data/c.db\n");
        assert_eq!(trino(&f).unwrap(), "sqlite:/data/c.db");
        for (text, says) in [
            ("connector.name=iceberg\niceberg.catalog.type=hive_metastore\nhive.metastore.uri=thrift://h:9083\n", "--pointer-cmd"),
            ("connector.name=iceberg\n", "no Hive metastore client"),
            ("connector.name=delta_lake\n", "_delta_log"),
            ("connector.name=iceberg\niceberg.catalog.type=rest\niceberg.rest-catalog.uri=http://h\niceberg.rest-catalog.prefix=p\n", "`iceberg.rest-catalog.prefix`"),
            ("connector.name=iceberg\niceberg.catalog.type=rest\niceberg.rest-catalog.uri=http://h\niceberg.rest-catalog.security=OAUTH2\n", "LAKESWEEP_REST_TOKEN"),
            ("connector.name=iceberg\niceberg.catalog.type=jdbc\niceberg.jdbc-catalog.connection-url=jdbc:postgresql://h/db\n", "only a sqlite"),
            ("iceberg.catalog.type=rest\n", "no connector.name"),
        ] {
            let e = trino(&file("bad", text)).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn spark_catalog_settings() {
        let conf = "spark.sql.catalog.lake org.apache.iceberg.spark.SparkCatalog\nspark.sql.catalog.lake.type rest\nspark.sql.catalog.lake.uri http://127.0.0.1:8181\nspark.sql.catalog.glued=org.apache.iceberg.spark.SparkCatalog\nspark.sql.catalog.glued.catalog-impl=org.apache.iceberg.aws.glue.GlueCatalog\nspark.sql.catalog.glued.io-impl=org.apache.iceberg.aws.s3.S3FileIO\nspark.sql.catalog.h org.apache.iceberg.spark.SparkCatalog\nspark.sql.catalog.h.type hadoop\nspark.sql.catalog.h.warehouse /w\nspark.master local[2]\n";
        let f = file("spark", conf);
        assert_eq!(
            spark(&format!("lake@{f}")).unwrap(),
            "rest:http://127.0.0.1:8181"
        );
        assert_eq!(spark(&format!("glued@{f}")).unwrap(), "glue");
        assert!(spark(&format!("h@{f}"))
            .unwrap_err()
            .contains("version-hint.text"));
        assert!(spark(&format!("nope@{f}"))
            .unwrap_err()
            .contains("no catalog named nope"));
    }
}
