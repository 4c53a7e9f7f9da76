//! Reads the retention policy and the live context from files: `--policy`,
//! and `--context` (a whole context document) merged with `--leases`,
//! `--holds` and `--writers` (JSON arrays of one kind each). The planner
//! validates both; this module only reads and merges.

use serde_json::{Map, Value};

/// Files naming the policy and the context.
#[derive(Debug, Clone, Default)]
pub struct ContextFiles {
    /// `--policy FILE`.
    pub policy: Option<String>,
    /// `--context FILE`.
    pub context: Option<String>,
    /// `--leases FILE`.
    pub leases: Option<String>,
    /// `--holds FILE`.
    pub holds: Option<String>,
    /// `--writers FILE`.
    pub writers: Option<String>,
}

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("read {path}: {e}"))
}

impl ContextFiles {
    /// The policy document's text, if any.
    pub fn policy_json(&self) -> Result<Option<String>, String> {
        self.policy.as_deref().map(read).transpose()
    }

    /// The merged context document, if any file was given.
    pub fn context_json(&self) -> Result<Option<String>, String> {
        let mut doc = match &self.context {
            Some(p) => match serde_json::from_str::<Value>(&read(p)?) {
                Ok(Value::Object(m)) => m,
                Ok(_) => return Err(format!("{p}: a context document is a JSON object")),
                Err(e) => return Err(format!("{p}: {e}")),
            },
            None => Map::new(),
        };
        let parts = [
            ("leases", &self.leases),
            ("holds", &self.holds),
            ("writers", &self.writers),
        ];
        if self.context.is_none() && parts.iter().all(|(_, f)| f.is_none()) {
            return Ok(None);
        }
        for (key, file) in parts {
            let Some(p) = file else { continue };
            let items = match serde_json::from_str::<Value>(&read(p)?) {
                Ok(Value::Array(a)) => a,
                Ok(_) => return Err(format!("{p}: --{key} takes a JSON array")),
                Err(e) => return Err(format!("{p}: {e}")),
            };
            let slot = doc
                .entry(key.to_owned())
                .or_insert_with(|| Value::Array(vec![]));
            match slot {
                Value::Array(a) => a.extend(items),
                _ => return Err(format!("context `{key}` is not an array")),
            }
        }
        Ok(Some(Value::Object(doc).to_string()))
    }
}
