//! Durations: how documents write them (`12h`, `30d`) and how reports say
//! them (`3d 4h`). All values are milliseconds.

use serde::{Deserialize, Deserializer, Serialize};

/// Shortest file-retention window accepted without `allow_short_retention`:
/// one hour, in milliseconds.
pub const MIN_FILE_RETENTION_MS: i64 = 3_600_000;

/// A duration in milliseconds, written as `<n><unit>` with unit `ms`, `s`,
/// `m`, `h` or `d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct DurationMs(pub i64);

/// Parses `12h`, `30d`, `90m`, `15s`, `500ms` into milliseconds.
pub fn parse_duration(s: &str) -> std::result::Result<i64, String> {
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("`{s}` needs a unit (ms, s, m, h, d)"))?;
    let (n, unit) = s.split_at(split);
    let n: i64 = n.parse().map_err(|_| format!("`{s}` is not a duration"))?;
    let mult = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (ms, s, m, h, d)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("`{s}` is too large"))
}

impl<'de> Deserialize<'de> for DurationMs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        match v {
            serde_json::Value::String(s) => parse_duration(&s)
                .map(DurationMs)
                .map_err(serde::de::Error::custom),
            other => Err(serde::de::Error::custom(format!(
                "duration {other} needs a unit, like \"12h\" or \"30d\""
            ))),
        }
    }
}

/// Formats a time (milliseconds since the epoch) as RFC 3339 UTC to the
/// second, `2026-11-30T12:00:00Z` (the proleptic Gregorian calendar; times
/// before the epoch too).
pub fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Formats a duration in milliseconds as `3d 4h`, `2h 5m`, `40s`.
pub fn human_ms(ms: i64) -> String {
    let s = ms / 1000;
    let (d, h, m) = (s / 86_400, (s % 86_400) / 3600, (s % 3600) / 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {}s", s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(1_796_040_000_000), "2026-11-30T12:00:00Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(utc(-1), "1969-12-31T23:59:59Z");
        assert_eq!(utc(4_102_444_800_000), "2100-01-01T00:00:00Z");
    }
}
