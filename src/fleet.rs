//! The fleet document, `lakesweepFleet.v1`: how lakesweep is rolled out
//! over many tables. Tables are grouped in cohorts; each cohort has a mode
//! (`shadow`: plan and compare with the existing job, delete nothing;
//! `enforce`: delete), the existing job it is compared with, and the fleet
//! names the gate (days of shadow runs before `enforce`), its stop switch
//! and how much a halt lengthens quarantine.
//!
//! The document says what the operators want; a table's ledger records
//! what happened (every move with who and why, every comparison). A table
//! deletes only when both say `enforce`: a document edited by hand to
//! `enforce` without a recorded, gated move leaves the table in shadow
//! (see [`crate::Ledger::enter_fleet`]).

use serde::{Deserialize, Serialize};

use crate::duration::DurationMs;
use crate::error::{Error, Result};
use crate::path::TableLocation;

/// The schema name a fleet document carries.
pub const FLEET_SCHEMA: &str = "lakesweepFleet.v1";

/// Days of shadow runs a table needs before `enforce`, by default.
pub const DEFAULT_SHADOW_DAYS: u32 = 14;

/// Whether a table deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Plan, compare with the existing job, record; delete nothing.
    Shadow,
    /// Delete what the ledger approves.
    Enforce,
}

impl Mode {
    /// `shadow` or `enforce`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Shadow => "shadow",
            Mode::Enforce => "enforce",
        }
    }

    /// The mode named `text`.
    pub fn parse(text: &str) -> Result<Mode> {
        match text {
            "shadow" => Ok(Mode::Shadow),
            "enforce" => Ok(Mode::Enforce),
            other => Err(Error::invalid(
                "mode",
                format!("`{other}`: a mode is `shadow` or `enforce`"),
            )),
        }
    }
}

/// The maintenance job a cohort is compared with in shadow mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExistingJob {
    /// What it is, in words (`deltalake vacuum`, `remove_orphan_files`).
    pub tool: String,
    /// Its own age limit (`older_than`, `retention_hours`): objects younger
    /// than this it keeps by design. None: it has none we know of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older_than: Option<DurationMs>,
    /// Whether it removes transaction log files (a Delta `VACUUM` does not).
    #[serde(default)]
    pub removes_log_files: bool,
}

/// A group of tables that move between modes together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cohort {
    /// Its name, unique in the fleet.
    pub name: String,
    /// The mode the operators want for it.
    pub mode: Mode,
    /// Its tables' locations (any spelling of each).
    pub tables: Vec<String>,
    /// The job its shadow runs are compared with.
    pub existing_job: ExistingJob,
}

/// A `lakesweepFleet.v1` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fleet {
    /// Always [`FLEET_SCHEMA`].
    pub schema: String,
    /// The fleet's stop switch, read by every deleter of every table in it
    /// besides each table's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_switch: Option<String>,
    /// How much longer every waiting object stays in quarantine after a
    /// halt (none: each ledger's quarantine interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halt_extension: Option<DurationMs>,
    /// Days of shadow runs, every difference explained, before a table may
    /// move to `enforce` (none: [`DEFAULT_SHADOW_DAYS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow_days: Option<u32>,
    /// The cohorts.
    pub cohorts: Vec<Cohort>,
}

impl Fleet {
    /// Parses and checks a fleet document: the schema, unknown fields,
    /// unique cohort names, every table a valid location in exactly one
    /// cohort (in any spelling), an absolute stop switch, a gate of at
    /// least one day.
    pub fn parse(text: &str) -> Result<Fleet> {
        let f: Fleet = serde_json::from_str(text)
            .map_err(|e| Error::invalid("fleet", format!("not a valid {FLEET_SCHEMA}: {e}")))?;
        if f.schema != FLEET_SCHEMA {
            return Err(Error::invalid(
                "fleet.schema",
                format!("`{}` is not {FLEET_SCHEMA}", f.schema),
            ));
        }
        if f.shadow_days == Some(0) {
            return Err(Error::invalid(
                "fleet.shadowDays",
                "must be at least 1: the gate needs shadow runs to judge",
            ));
        }
        if let Some(s) = &f.stop_switch {
            crate::stop::switches_for(&[], std::slice::from_ref(s))
                .map_err(|e| Error::invalid("fleet.stopSwitch", e.to_string()))?;
        }
        let mut seen: Vec<(String, String)> = Vec::new();
        for (i, c) in f.cohorts.iter().enumerate() {
            if c.name.trim().is_empty() {
                return Err(Error::invalid(
                    &format!("fleet.cohorts[{i}].name"),
                    "must be given",
                ));
            }
            if f.cohorts[..i].iter().any(|o| o.name == c.name) {
                return Err(Error::invalid(
                    &format!("fleet.cohorts[{i}].name"),
                    format!("`{}` names two cohorts", c.name),
                ));
            }
            for t in &c.tables {
                let l = TableLocation::parse(t).map_err(|e| {
                    Error::invalid(&format!("fleet.cohorts[{i}].tables"), format!("`{t}`: {e}"))
                })?;
                let canon = l.as_uri();
                if let Some((_, other)) = seen.iter().find(|(u, _)| *u == canon) {
                    return Err(Error::invalid(
                        &format!("fleet.cohorts[{i}].tables"),
                        format!("`{t}` is in cohort `{other}` already: a table is in one cohort"),
                    ));
                }
                seen.push((canon, c.name.clone()));
            }
        }
        Ok(f)
    }

    /// The cohort holding the table at `table_location` (any spelling).
    pub fn cohort_of(&self, table_location: &str) -> Option<&Cohort> {
        let want = TableLocation::parse(table_location).ok()?.as_uri();
        self.cohorts.iter().find(|c| {
            c.tables.iter().any(|t| {
                TableLocation::parse(t)
                    .map(|l| l.as_uri() == want)
                    .unwrap_or(false)
            })
        })
    }

    /// The cohort named `name`.
    pub fn cohort(&self, name: &str) -> Result<&Cohort> {
        self.cohorts
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| Error::invalid("cohort", format!("the fleet has no cohort `{name}`")))
    }

    /// Days of shadow runs the gate asks for.
    pub fn shadow_days(&self) -> u32 {
        self.shadow_days.unwrap_or(DEFAULT_SHADOW_DAYS)
    }

    /// The document `text` with cohort `name` in `mode` (what `move`
    /// writes once every table of the cohort recorded its move): the rest
    /// as it was written.
    pub fn with_mode(text: &str, name: &str, mode: Mode) -> Result<String> {
        let f = Fleet::parse(text)?;
        let i = f
            .cohorts
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| Error::invalid("cohort", format!("the fleet has no cohort `{name}`")))?;
        let mut v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Error::invalid("fleet", e.to_string()))?;
        v["cohorts"][i]["mode"] = serde_json::Value::String(mode.as_str().into());
        Ok(serde_json::to_string_pretty(&v).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"schema":"lakesweepFleet.v1","stopSwitch":"s3://ops/stop.json",
        "cohorts":[{"name":"canary","mode":"shadow","tables":["s3a://b/t1/"],
                    "existingJob":{"tool":"deltalake vacuum","olderThan":"7d"}},
                   {"name":"wave-1","mode":"shadow","tables":["s3://b/t2","s3://b/t3"],
                    "existingJob":{"tool":"remove_orphan_files"}}]}"#;

    #[test]
    fn cohorts_are_found_by_any_spelling_and_modes_move_in_the_document() {
        let f = Fleet::parse(DOC).unwrap();
        assert_eq!(f.cohort_of("s3://b/t1").unwrap().name, "canary");
        assert_eq!(f.cohort_of("s3://b/t3/").unwrap().name, "wave-1");
        assert!(f.cohort_of("s3://b/t4").is_none());
        assert_eq!(f.shadow_days(), 14);
        let moved = Fleet::parse(&Fleet::with_mode(DOC, "canary", Mode::Enforce).unwrap()).unwrap();
        assert_eq!(moved.cohort("canary").unwrap().mode, Mode::Enforce);
        assert_eq!(moved.cohort("wave-1").unwrap().mode, Mode::Shadow);
    }

    #[test]
    fn a_table_in_two_cohorts_or_a_bad_field_is_refused() {
        let twice = DOC.replace("\"s3://b/t2\"", "\"s3://b/t1\"");
        assert!(Fleet::parse(&twice)
            .unwrap_err()
            .to_string()
            .contains("one cohort"));
        for bad in [
            DOC.replace("\"shadow\",\"tables\":[\"s3a", "\"dry\",\"tables\":[\"s3a"),
            DOC.replace("s3://ops/stop.json", "ops/stop.json"),
            DOC.replace("lakesweepFleet.v1", "lakesweepFleet.v0"),
            DOC.replace("\"wave-1\"", "\"canary\""),
            DOC.replace("\"stopSwitch\"", "\"stopswitch\""),
            DOC.replace("{\"schema\"", "{\"shadowDays\":0,\"schema\""),
        ] {
            assert!(Fleet::parse(&bad).is_err(), "{bad}");
        }
    }
}
