//! The stop switch: one small object in the store that every deleter
//! reads before each batch. While it is set nothing is deleted, and a run
//! stops with `skipped-stopped` receipts for every key it did not reach.
//!
//! Every table has its own switch at `<location>/_lakesweep/stop.json`
//! (under the hidden prefix no sweep deletes); a fleet names one more, read
//! by every deleter of every table in it. Which switches a run reads, what
//! a reading means and what `halt` and `resume` write are decided here: a
//! host reads each URI it is given and reports what the store answered
//! ([`SwitchAnswer`]). Fail closed: a switch that could not be read, or
//! holds anything but a valid [`StopDocument`], stops the run as a set one
//! does.
//!
//! A switch is never deleted by `resume`: it is rewritten as cleared, with
//! the halt it cleared, so the halt's generation stays known to every
//! ledger that has not seen it yet (each lengthens its quarantine once per
//! halt, see [`crate::Ledger::observe_halts`]).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, UnsafeReason};

/// The schema name every stop document carries.
pub const STOP_SCHEMA: &str = "lakesweepStop.v1";

/// Where a table's own switch lies, relative to its location.
pub const TABLE_SWITCH: &str = "_lakesweep/stop.json";

/// A halt: when it was set, by whom and why, and its generation (1 for a
/// switch's first halt, one more for each after).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Halt {
    /// This switch's count of halts, from 1.
    pub generation: u64,
    /// Why it was set.
    pub reason: String,
    /// Who set it.
    pub by: String,
    /// When, ms since the epoch (the host's clock).
    pub at_ms: i64,
}

/// A resume: when the switch was cleared, by whom and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resume {
    /// Why it was cleared.
    pub reason: String,
    /// Who cleared it.
    pub by: String,
    /// When, ms since the epoch.
    pub at_ms: i64,
}

/// The content of a stop switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StopDocument {
    /// Always [`STOP_SCHEMA`].
    pub schema: String,
    /// Whether deleting is stopped now.
    pub halted: bool,
    /// The latest halt (set or cleared); none before the first.
    pub halt: Option<Halt>,
    /// The resume that cleared it, when `halted` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<Resume>,
}

impl StopDocument {
    /// Parses a switch's content; anything but a valid document is an
    /// [`Error::InvalidOptions`] naming what is wrong.
    pub fn parse(text: &str) -> Result<StopDocument> {
        let d: StopDocument = serde_json::from_str(text)
            .map_err(|e| Error::invalid("stop-switch", format!("not a {STOP_SCHEMA}: {e}")))?;
        if d.schema != STOP_SCHEMA {
            return Err(Error::invalid(
                "stop-switch",
                format!("`{}` is not {STOP_SCHEMA}", d.schema),
            ));
        }
        if d.halted && d.halt.is_none() {
            return Err(Error::invalid("stop-switch", "halted, but names no halt"));
        }
        Ok(d)
    }

    fn to_json(&self) -> String {
        // A plain struct of strings and numbers always serialises.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// What the store answered when a host read one switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "value")]
pub enum SwitchAnswer {
    /// No such object: the switch was never set.
    Absent,
    /// The object's content, as text.
    Present(String),
    /// The read failed (the store's words).
    Failed(String),
}

/// One switch as the host read it just now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SwitchReading {
    /// The URI read, exactly as it was asked for.
    pub uri: String,
    /// What the store answered.
    pub answer: SwitchAnswer,
}

/// The URI of the switch of the table at `table_location`, under its
/// canonical spelling (`s3a://` is `s3://`, `/x` is `file:///x`): every
/// spelling of a table names one switch. Fails for a location that is no
/// table's (a bucket's root).
pub fn table_switch(table_location: &str) -> Result<String> {
    let l = crate::path::TableLocation::parse(table_location)
        .map_err(|e| Error::invalid("table", e))?;
    Ok(format!("{}/{TABLE_SWITCH}", l.as_uri()))
}

/// The switches a deleter of the tables at `locations` reads before each
/// batch: each table's own, then `extra` (a fleet's), each once, in that
/// order. An extra switch must be an absolute URI.
pub fn switches_for(locations: &[String], extra: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for l in locations {
        let s = table_switch(l)?;
        if !out.contains(&s) {
            out.push(s);
        }
    }
    for e in extra {
        let e = e.trim();
        // One spelling per switch (`s3a://` is `s3://`): a halt read under
        // two spellings would count twice.
        let canon = if e.contains("://") {
            crate::path::CanonicalUri::parse(e)
                .ok()
                .map(|u| u.to_uri_string())
        } else {
            None
        };
        let Some(canon) = canon else {
            return Err(Error::invalid(
                "stop-switch",
                format!("`{e}` is not an absolute URI (scheme://…): a switch must name one object"),
            ));
        };
        if !out.contains(&canon) {
            out.push(canon);
        }
    }
    Ok(out)
}

/// Why a run may not delete now, given the switches it had to read
/// (`asked`) and what the host read (`readings`): none when every switch
/// was read and none is set. A switch not read, read twice, unreadable or
/// holding no valid document stops the run as a set one does.
pub fn stopped_by(asked: &[String], readings: &[SwitchReading]) -> Option<Vec<String>> {
    let mut why = Vec::new();
    for uri in asked {
        let mut found = readings.iter().filter(|r| &r.uri == uri);
        let (first, second) = (found.next(), found.next());
        match (first, second) {
            (None, _) => why.push(format!(
                "the stop switch {uri} was not read (every deleter reads it before each batch)"
            )),
            (Some(_), Some(_)) => why.push(format!("the stop switch {uri} was answered twice")),
            (Some(r), None) => match &r.answer {
                SwitchAnswer::Absent => {}
                SwitchAnswer::Failed(e) => {
                    why.push(format!("the stop switch {uri} could not be read: {e}"))
                }
                SwitchAnswer::Present(text) => match StopDocument::parse(text) {
                    Err(e) => why.push(format!(
                        "the stop switch {uri} holds no valid document ({e}): treated as set"
                    )),
                    Ok(d) if d.halted => {
                        if let Some(h) = &d.halt {
                            why.push(format!(
                                "halted by the stop switch {uri}: set by {} at {} ms (halt {}): {}",
                                h.by, h.at_ms, h.generation, h.reason
                            ));
                        }
                    }
                    Ok(_) => {}
                },
            },
        }
    }
    for r in readings {
        if !asked.contains(&r.uri) {
            why.push(format!(
                "a stop switch {} was answered that was not asked for",
                r.uri
            ));
        }
    }
    (!why.is_empty()).then_some(why)
}

/// [`stopped_by`] as an error (for deleters outside a deletion session,
/// such as `pinot apply`): [`UnsafeReason::Halted`] with every reason.
pub fn ensure_running(asked: &[String], readings: &[SwitchReading]) -> Result<()> {
    match stopped_by(asked, readings) {
        None => Ok(()),
        Some(why) => Err(Error::unsafe_(UnsafeReason::Halted, why.join("; "))),
    }
}

/// Every halt the readings name, set or cleared, with the switch's URI
/// and, once cleared, its resume: what a ledger that has not seen them yet
/// lengthens its quarantine for. Unreadable switches name none (they stop
/// the run instead).
pub fn halts_named(readings: &[SwitchReading]) -> Vec<(String, Halt, Option<Resume>)> {
    readings
        .iter()
        .filter_map(|r| match &r.answer {
            SwitchAnswer::Present(t) => StopDocument::parse(t).ok().and_then(|d| {
                let resumed = if d.halted { None } else { d.resumed };
                d.halt.map(|h| (r.uri.clone(), h, resumed))
            }),
            _ => None,
        })
        .collect()
}

fn ensure_words(field: &str, text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(Error::invalid(
            field,
            "must be given: a halt and a resume each say who and why",
        ));
    }
    Ok(())
}

/// The document `halt` writes over the switch's `previous` content (none:
/// the switch does not exist, or could not be read): halted, with the next
/// generation. A switch already set is set again (a new generation, the
/// new reason). A halt is never held up: a `previous` that is no valid
/// document is written over, counting from 1 again (a halt is known by
/// its switch, generation and time, so no ledger mistakes it for one it
/// saw).
pub fn halt_document(
    previous: Option<&str>,
    reason: &str,
    by: &str,
    now_ms: i64,
) -> Result<String> {
    ensure_words("reason", reason)?;
    ensure_words("by", by)?;
    let last = previous
        .and_then(|p| StopDocument::parse(p).ok())
        .and_then(|d| d.halt)
        .map_or(0, |h| h.generation);
    Ok(StopDocument {
        schema: STOP_SCHEMA.into(),
        halted: true,
        halt: Some(Halt {
            generation: last.saturating_add(1),
            reason: reason.trim().into(),
            by: by.trim().into(),
            at_ms: now_ms,
        }),
        resumed: None,
    }
    .to_json())
}

/// The document `resume` writes over the switch's `previous` content:
/// cleared, keeping the halt it clears. Refuses a switch that is not set
/// (absent, or cleared already): there is nothing to resume.
pub fn resume_document(
    previous: Option<&str>,
    reason: &str,
    by: &str,
    now_ms: i64,
) -> Result<String> {
    ensure_words("reason", reason)?;
    ensure_words("by", by)?;
    let Some(p) = previous else {
        return Err(Error::invalid(
            "stop-switch",
            "the switch is not set (there is no switch object): nothing to resume",
        ));
    };
    let d = StopDocument::parse(p)?;
    if !d.halted {
        return Err(Error::invalid(
            "stop-switch",
            "the switch is not set (it was cleared already): nothing to resume",
        ));
    }
    Ok(StopDocument {
        schema: STOP_SCHEMA.into(),
        halted: false,
        halt: d.halt,
        resumed: Some(Resume {
            reason: reason.trim().into(),
            by: by.trim().into(),
            at_ms: now_ms,
        }),
    }
    .to_json())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(uri: &str, a: SwitchAnswer) -> SwitchReading {
        SwitchReading {
            uri: uri.into(),
            answer: a,
        }
    }

    #[test]
    fn switches_are_the_tables_then_the_fleets_each_once() {
        let s = switches_for(
            &["s3://b/t".into(), "s3a://b/t/".into()],
            &["s3://ops/stop.json".into(), "s3a://ops/stop.json".into()],
        )
        .unwrap();
        assert_eq!(
            s,
            vec!["s3://b/t/_lakesweep/stop.json", "s3://ops/stop.json"]
        );
        assert!(switches_for(&[], &["ops/stop.json".into()]).is_err());
    }

    #[test]
    fn absent_switches_let_the_run_go_on() {
        let asked = vec!["s3://b/t/_lakesweep/stop.json".to_owned()];
        assert_eq!(
            stopped_by(&asked, &[read(&asked[0], SwitchAnswer::Absent)]),
            None
        );
    }

    #[test]
    fn a_set_switch_stops_and_a_cleared_one_does_not() {
        let asked = vec!["s3://b/t/_lakesweep/stop.json".to_owned()];
        let set = halt_document(None, "bad listing", "oncall", 5).unwrap();
        let why = stopped_by(
            &asked,
            &[read(&asked[0], SwitchAnswer::Present(set.clone()))],
        )
        .unwrap();
        assert!(
            why[0].contains("bad listing") && why[0].contains("oncall"),
            "{why:?}"
        );
        let cleared = resume_document(Some(&set), "fixed", "oncall", 9).unwrap();
        assert_eq!(
            stopped_by(
                &asked,
                &[read(&asked[0], SwitchAnswer::Present(cleared.clone()))]
            ),
            None
        );
        // The cleared switch still names its halt (for the ledgers).
        let h = halts_named(&[read(&asked[0], SwitchAnswer::Present(cleared))]);
        assert_eq!(h[0].1.generation, 1);
    }

    #[test]
    fn fail_closed_on_anything_unclear() {
        let asked = vec![
            "s3://b/t/_lakesweep/stop.json".to_owned(),
            "s3://ops/s".to_owned(),
        ];
        let ok = read(&asked[1], SwitchAnswer::Absent);
        // Not read at all.
        assert!(stopped_by(&asked, std::slice::from_ref(&ok)).is_some());
        // Unreadable.
        let failed = read(&asked[0], SwitchAnswer::Failed("503".into()));
        assert!(stopped_by(&asked, &[failed, ok.clone()]).is_some());
        // Garbage, an empty object, another schema, halted without a halt.
        for text in [
            "",
            "{",
            "{}",
            r#"{"schema":"x","halted":false,"halt":null}"#,
            r#"{"schema":"lakesweepStop.v1","halted":true,"halt":null}"#,
        ] {
            let r = read(&asked[0], SwitchAnswer::Present(text.into()));
            assert!(stopped_by(&asked, &[r, ok.clone()]).is_some(), "{text}");
        }
        // Answered twice, or one not asked for.
        let a = read(&asked[0], SwitchAnswer::Absent);
        assert!(stopped_by(&asked, &[a.clone(), a.clone(), ok.clone()]).is_some());
        let extra = read("s3://elsewhere/s", SwitchAnswer::Absent);
        assert!(stopped_by(&asked, &[a, ok, extra]).is_some());
    }

    #[test]
    fn halts_count_up_and_resume_needs_a_halt() {
        let one = halt_document(None, "r", "me", 1).unwrap();
        let cleared = resume_document(Some(&one), "ok", "me", 2).unwrap();
        let two = halt_document(Some(&cleared), "again", "you", 3).unwrap();
        assert_eq!(
            StopDocument::parse(&two).unwrap().halt.unwrap().generation,
            2
        );
        assert!(resume_document(None, "ok", "me", 4).is_err());
        assert!(resume_document(Some(&cleared), "ok", "me", 4).is_err());
        assert!(halt_document(None, " ", "me", 1).is_err());
        assert!(halt_document(None, "r", "", 1).is_err());
        // A halt is never held up by a damaged switch: it starts over.
        let over = halt_document(Some("not json"), "r", "me", 1).unwrap();
        assert_eq!(
            StopDocument::parse(&over).unwrap().halt.unwrap().generation,
            1
        );
    }
}
