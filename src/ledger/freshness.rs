//! Whether a table's sweep still runs: judged from its ledger (or the lack
//! of one) by the core, so `status` and every other host say the same.

use serde::{Deserialize, Serialize};

use super::Ledger;
use crate::error::{Error, Result};
use crate::path::TableLocation;

/// How fresh a table's sweep is, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Freshness {
    /// True when the table needs someone: never swept, no step recorded,
    /// the last step older than the maximum age or dated ahead of the
    /// clock, or damage open.
    pub stale: bool,
    /// Open damage: keys the ledger deleted that the table references now.
    pub damaged: u64,
    /// Why it is stale, one reason each; empty when fresh.
    pub why: Vec<String>,
}

/// The freshness of the sweep of `table_location` at `now_ms`, from its
/// `ledger` (`None`: it has none, never swept). `max_age_ms`: how old the
/// last step may be (`None`: any age). Fails (invalid options) for a
/// ledger of another table: its freshness says nothing of this one.
pub fn freshness(
    ledger: Option<&Ledger>,
    table_location: &str,
    now_ms: i64,
    max_age_ms: Option<i64>,
) -> Result<Freshness> {
    let mut why = Vec::new();
    let Some(l) = ledger else {
        return Ok(Freshness {
            stale: true,
            damaged: 0,
            why: vec!["no ledger: never swept".into()],
        });
    };
    let mine =
        TableLocation::parse(table_location).map_err(|e| Error::invalid("table_location", e))?;
    let its = TableLocation::parse(&l.table_location)
        .map_err(|e| Error::invalid("ledger", format!("its table location: {e}")))?;
    if mine != its {
        return Err(Error::invalid(
            "ledger",
            format!(
                "the ledger is for {}, not {}: a ledger of another table says nothing of this one",
                its.as_uri(),
                mine.as_uri()
            ),
        ));
    }
    match l.last_step_ms {
        None => why.push("no step recorded (a ledger saved before steps were dated)".into()),
        Some(t) if t > now_ms.saturating_add(crate::acceptance::MAX_CLOCK_SKEW_MS) => {
            why.push(format!(
                "its last step is dated {} ahead of this clock: one of the two clocks is wrong",
                crate::duration::human_ms(t - now_ms)
            ))
        }
        Some(t) => {
            if let Some(max) = max_age_ms {
                if now_ms.saturating_sub(t) > max {
                    why.push(format!(
                        "no sweep step for {} (at most {} allowed)",
                        crate::duration::human_ms(now_ms.saturating_sub(t)),
                        crate::duration::human_ms(max)
                    ));
                }
            }
        }
    }
    let damaged = l.open_damage().count() as u64;
    if damaged > 0 {
        why.push(format!(
            "{damaged} keys it deleted are referenced by the table now (damage: restore them)"
        ));
    }
    Ok(Freshness {
        stale: !why.is_empty(),
        damaged,
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_000_000_000;
    const DAY: i64 = 86_400_000;

    fn ledger(last: Option<i64>) -> Ledger {
        let p = crate::plan::plan_for_tests(&[("data/a", 1)], None);
        let mut l = Ledger::new(&p, 0).unwrap();
        l.last_step_ms = last;
        l
    }

    #[test]
    fn fresh_stale_and_another_tables_ledger() {
        let f = |l: Option<&Ledger>, max| freshness(l, "s3a://b/t/", NOW, max).unwrap();
        assert!(f(None, None).stale, "never swept");
        assert!(!f(Some(&ledger(Some(NOW - DAY))), None).stale);
        assert!(!f(Some(&ledger(Some(NOW - DAY))), Some(2 * DAY)).stale);
        assert!(f(Some(&ledger(Some(NOW - 3 * DAY))), Some(2 * DAY)).stale);
        assert!(f(Some(&ledger(None)), None).stale);
        assert!(
            f(Some(&ledger(Some(NOW + DAY))), None).stale,
            "ahead of the clock"
        );
        let mut damaged = ledger(Some(NOW));
        let v = crate::ledger::version_of(
            &crate::plan::plan_for_tests(&[("data/a", 1)], None).delete[0],
        );
        damaged.note_damage("data/a", v, NOW, "referenced".into());

        let d = f(Some(&damaged), None);
        assert!(d.stale && d.damaged == 1, "{d:?}");
        let e = freshness(Some(&ledger(Some(NOW))), "s3://b/other", NOW, None).unwrap_err();
        assert!(e.to_string().contains("another table"), "{e}");
    }
}
