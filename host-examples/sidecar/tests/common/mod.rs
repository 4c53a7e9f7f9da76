//! Shared test setup: stage the committed fixture tables under a scratch
//! root (with the generator's recorded modification times, which git loses)
//! and run the real `lakesweep` binary, which loads the real component.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub fn fixtures() -> PathBuf {
    repo().join("tests/fixtures/generated")
}

pub fn expect() -> Value {
    serde_json::from_slice(&std::fs::read(fixtures().join("expect.json")).unwrap()).unwrap()
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// A staged copy of the fixtures: `root/warehouse/...`, `root/catalog.db`.
pub struct Stage {
    pub root: PathBuf,
    /// The `events` table's expectations.
    pub t: Value,
}

impl Stage {
    pub fn new(name: &str) -> Stage {
        let root =
            std::env::temp_dir().join(format!("lakesweep-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        copy_dir(&fixtures().join("warehouse"), &root.join("warehouse"));
        std::fs::copy(fixtures().join("catalog.db"), root.join("catalog.db")).unwrap();
        let t = expect()["events"].clone();
        let s = Stage { root, t };
        for (rel, ms) in s.t["mtimes"].as_object().unwrap() {
            let f = std::fs::File::options()
                .write(true)
                .open(s.table().join(rel))
                .unwrap();
            f.set_modified(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.as_u64().unwrap()),
            )
            .unwrap();
        }
        s
    }

    pub fn table(&self) -> PathBuf {
        self.root.join("warehouse/demo/events")
    }

    /// `--location-map` from the generator's root to this stage.
    pub fn map(&self) -> String {
        format!("file:///lakesweep-fixtures=file://{}", self.root.display())
    }

    /// The pointer options naming the staged sqlite catalog.
    pub fn catalog(&self) -> Vec<String> {
        vec![
            "--catalog".into(),
            format!("sqlite:{}", self.root.join("catalog.db").display()),
            "--table".into(),
            "demo.events".into(),
        ]
    }

    /// `lakesweep plan` over the staged table at the fixture's `now`.
    pub fn plan(&self, extra: &[&str]) -> Output {
        lakesweep(&self.plan_args(extra))
    }

    /// The arguments of [`Stage::plan`].
    pub fn plan_args(&self, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = vec!["plan".into(), self.table().display().to_string()];
        args.extend(self.catalog());
        args.extend([
            "--location-map".into(),
            self.map(),
            "--now".into(),
            self.t["now_ms"].to_string(),
            "--older-than".into(),
            "3d".into(),
        ]);
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }

    /// `lakesweep apply PLAN` through the staged catalog and mapping. The
    /// fixtures were judged at a fixed time a little ahead of today:
    /// `future_ok` passes `--allow-future-now`.
    pub fn apply_args(&self, plan: &Path, future_ok: bool) -> Vec<String> {
        let mut a = vec!["apply".to_owned(), plan.display().to_string()];
        a.extend(self.catalog());
        a.extend(["--location-map".into(), self.map()]);
        if future_ok {
            a.push("--allow-future-now".into());
        }
        a
    }

    /// Relative keys of every file under the staged table.
    pub fn files(&self) -> BTreeSet<String> {
        files_under(&self.table())
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Relative keys of every file under `dir`.
pub fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap();
                out.insert(rel.to_string_lossy().into_owned());
            }
        }
    }
    out
}

/// The newest modification time among the files under `dir`, in epoch
/// milliseconds: the base a test judges a table copy from (plus the days
/// it means), so the test means the same whatever day it runs.
pub fn newest_mtime_ms(dir: &Path) -> i64 {
    files_under(dir)
        .iter()
        .map(|f| {
            let t = std::fs::metadata(dir.join(f)).unwrap().modified().unwrap();
            t.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
        })
        .max()
        .expect("a table with files")
}

/// This machine's clock, in epoch milliseconds. Only for what is judged
/// against the real clock by nature (the host's clock check, a peer tool
/// that has no `now` of its own).
pub fn clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Runs the binary with the repository's component.
pub fn lakesweep<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lakesweep"))
        .args(args)
        .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"))
        .output()
        .unwrap()
}

/// The objects of the table's ledger (`lakesweep ledger show --json
/// --archived`): key -> {state, version, sinceMs, why}, those verified and
/// archived included.
pub fn ledger_objects(table: &str) -> serde_json::Value {
    let o = lakesweep(&["ledger", "show", table, "--json", "--archived"]);
    assert!(o.status.success(), "{}", out_text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["objects"].clone()
}

/// Exit status, stdout and stderr, for assertion messages.
pub fn out_text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// stdout as JSON, or a panic with stderr.
pub fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The keys of the `delete` list of a plan document (`plan --json`).
pub fn deletes(v: &Value) -> BTreeSet<String> {
    v["delete"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["key"].as_str().unwrap().to_owned())
        .collect()
}

/// The keys a section of the human report lists (`heading` starts it;
/// each line is `  KEY  ...`).
pub fn report_section(report: &str, heading: &str) -> BTreeSet<String> {
    report
        .lines()
        .skip_while(|l| !l.starts_with(heading))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.trim_start().split("  ").next().map(str::to_owned))
        .collect()
}

/// The human report (`human`, from `plan --out FILE`), `--json` (`json`,
/// from the same plan with `--json`) and the plan file are one plan seen
/// three ways: `--json` prints the file's document; the report's "would
/// delete" is the sealed list; every key it shows as kept is in the
/// document's report with the same verdict; kept, deleted and the
/// referenced count split `listed` (every file of the table) exactly.
/// Returns the document.
pub fn one_document(
    human: &Output,
    json: &Output,
    file: &Path,
    listed: &BTreeSet<String>,
) -> Value {
    assert!(human.status.success(), "{}", out_text(human));
    let report = String::from_utf8_lossy(&human.stdout).into_owned();
    let printed = self::json(json);
    let stored: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let deleted = deletes(&stored);
    assert_eq!(deletes(&printed), deleted, "--json and the file disagree");
    assert_eq!(
        printed["report"], stored["report"],
        "--json and the file disagree"
    );
    assert_eq!(printed["digest"], stored["digest"]);
    if deleted.is_empty() {
        assert!(report.contains("nothing to delete"), "{report}");
    } else {
        assert!(
            report.contains(&format!("would delete ({}):", deleted.len())),
            "{report}"
        );
    }
    assert_eq!(
        report_section(&report, "would delete ("),
        deleted,
        "{report}"
    );
    let keep: BTreeMap<String, String> = stored["report"]["keep"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["key"].as_str().unwrap().to_owned(),
                k["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let kept_keys: BTreeSet<String> = keep.keys().cloned().collect();
    assert!(kept_keys.is_disjoint(&deleted), "{stored}");
    let named = &kept_keys | &deleted;
    assert!(named.is_subset(listed), "only listed keys are named");
    // The rest is referenced: counted in the summary, not listed.
    let referenced = stored["summary"]["verdicts"]["referenced"]["count"]
        .as_u64()
        .unwrap_or(0);
    assert_eq!(
        named.len() as u64 + referenced,
        listed.len() as u64,
        "kept, deleted and referenced split the listing"
    );
    for line in report
        .lines()
        .skip_while(|l| !l.starts_with("kept although unreferenced ("))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
    {
        let mut parts = line.trim_start().splitn(2, "  ");
        let key = parts.next().unwrap();
        let verdict = parts
            .next()
            .and_then(|r| r.strip_prefix('['))
            .and_then(|r| r.split(']').next())
            .unwrap_or_else(|| panic!("a kept line without its verdict: {line}"));
        if key == "_delta_log/" || key == "_lakesweep/" {
            // One folded line for the whole prefix: every key under it is hidden.
            assert!(keep
                .iter()
                .filter(|(k, _)| k.starts_with(key))
                .all(|(_, v)| v == "hidden"));
            continue;
        }
        assert_eq!(keep.get(key).map(String::as_str), Some(verdict), "{line}");
    }
    stored
}

/// Planted keys of the `events` table whose expected verdict is one of `verdicts`.
pub fn planted(t: &Value, verdicts: &[&str]) -> BTreeSet<String> {
    t["planted"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, v)| verdicts.contains(&v.as_str().unwrap()))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Runs `tests/py/iceberg_table.py` (pyiceberg 0.12.0; scripts/test.sh
/// installs it) and parses what it prints (empty output: `null`).
pub fn py(args: &[&str]) -> Value {
    py_with(&[], args)
}

/// `py` with environment variables (`LAKESWEEP_TEST_GLUE`, `LAKESWEEP_TEST_TABLE`).
pub fn py_with(envs: &[(&str, &str)], args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/iceberg_table.py");
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .expect("python3 with pyiceberg[sql-sqlite,pyarrow]==0.12.0 (scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if out.stdout.iter().all(u8::is_ascii_whitespace) {
        return Value::Null;
    }
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A real pyiceberg table (`demo.t` in a sqlite SQL catalog) in a scratch folder.
pub struct PyTable {
    pub dir: PathBuf,
    pub info: Value,
}

impl PyTable {
    /// The table's `table-uuid`, from its current metadata file.
    pub fn uuid(&self) -> String {
        let path = self.info["metadata_location"]
            .as_str()
            .unwrap()
            .strip_prefix("file://")
            .unwrap()
            .to_owned();
        let md: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        md["table-uuid"].as_str().unwrap().to_owned()
    }

    pub fn new(name: &str) -> PyTable {
        Self::with_data_path(name, None)
    }
    /// `data`: the table's `write.data.path`, relative to the scratch folder.
    pub fn with_data_path(name: &str, data: Option<&str>) -> PyTable {
        let dir = std::env::temp_dir().join(format!("lakesweep-py-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut args = vec!["write".to_owned(), dir.display().to_string()];
        if let Some(d) = data {
            args.push(format!("file://{}/{d}", dir.display()));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let info = py(&args);
        PyTable { dir, info }
    }
    pub fn location(&self) -> String {
        self.info["location"].as_str().unwrap().to_owned()
    }
    /// The table folder on disk.
    pub fn root(&self) -> PathBuf {
        PathBuf::from(self.location().trim_start_matches("file://"))
    }
    pub fn pointer(&self) -> Vec<String> {
        vec![
            "--catalog".into(),
            format!("sqlite:{}", self.dir.join("catalog.db").display()),
            "--table".into(),
            "demo.t".into(),
        ]
    }
}

impl PyTable {
    /// `lakesweep CMD TABLE POINTER --now <a month ahead> EXTRA...` (every
    /// file was written just now: judged a month later).
    pub fn run(&self, cmd: &str, extra: &[&str]) -> Output {
        let mut a = vec![cmd.to_owned(), self.location()];
        a.extend(self.pointer());
        a.extend(["--now".into(), month_ahead()]);
        a.extend(extra.iter().map(|s| s.to_string()));
        lakesweep(&a)
    }
}

/// A month after now, in epoch milliseconds.
pub fn month_ahead() -> String {
    (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 30 * 86_400_000)
        .to_string()
}

impl Drop for PyTable {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A test server child process on 127.0.0.1, killed when dropped.
pub struct Moto {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    /// The AWS environment that points the sidecar's clients at this server.
    pub fn aws_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }
}

/// Starts moto's server (S3, Glue, ...) on a port it picks itself (`-p 0`)
/// and reads the port from the line it prints (` * Running on
/// http://127.0.0.1:PORT`): no port is bound, dropped and reused.
pub fn moto() -> Moto {
    use std::process::Stdio;
    use std::time::Duration;
    let mut child = Command::new("python3")
        .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 -m moto.server (pip install 'moto[server]'; scripts/test.sh does)");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut tx = Some(tx);
        // Keep draining: the server logs every request to stderr.
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.split("Running on http://127.0.0.1:").nth(1) {
                let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if let Some(tx) = tx.take() {
                    let _ = tx.send(port);
                }
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("moto server did not say its port (is moto[server] installed?)");
    Moto {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
    }
}

/// `lakesweep ARGS` with extra environment variables.
pub fn lakesweep_with<S: AsRef<std::ffi::OsStr>>(envs: &[(&str, String)], args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lakesweep"))
        .args(args)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"))
        .output()
        .unwrap()
}

/// An unsigned request to moto (it accepts them), retried until it answers
/// 200: a server still starting may accept and then reset connections.
pub fn raw(m: &Moto, method: &str, path: &str, body: &str) {
    let port = m.endpoint.rsplit(':').next().unwrap();
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let t = Instant::now();
    loop {
        let mut resp = Vec::new();
        if let Ok(mut s) = std::net::TcpStream::connect(format!("127.0.0.1:{port}")) {
            let sent = write!(
                s,
                "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            if sent.is_ok() {
                let _ = s.read_to_end(&mut resp);
            }
        }
        let resp = String::from_utf8_lossy(&resp);
        // A retry after a reset may find the bucket already made by the first try.
        if resp.starts_with("HTTP/1.1 200") || resp.contains("BucketAlreadyOwnedByYou") {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{method} {path}: {resp}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// An object_store client for `bucket` on the moto server (test keys).
pub fn s3_bucket(m: &Moto, bucket: &str) -> object_store::aws::AmazonS3 {
    object_store::aws::AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_endpoint(&m.endpoint)
        .with_allow_http(true)
        .with_access_key_id("testing")
        .with_secret_access_key("testing")
        .with_region("us-east-1")
        .build()
        .unwrap()
}
