//! Durations: how documents write them (`12h`, `30d`) and how reports say
//! them (`3d 4h`). All values are milliseconds.

use serde::{Deserialize, Deserializer, Serialize};

/// Shortest file-retention window accepted without `allow_short_retention`:
/// one hour, in milliseconds.
pub const MIN_FILE_RETENTION_MS: i64 = 3_600_000;

/// A duration in milliseconds, written as one or more `<n><unit>` parts
/// with unit `ms`, `s`, `m`, `h`, `d` or `w` (`12h`, `1h 30m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct DurationMs(pub i64);

/// Parses a duration into milliseconds: one or more `<n><unit>` parts,
/// spaces between them allowed, units `ms`, `s`, `m`, `h`, `d`, `w`:
/// `12h`, `30d`, `500ms`, and the compound form reports write and the
/// command line reads, `1h 30m`, `3d 4h`, `2w`. Every part needs its unit.
pub fn parse_duration(s: &str) -> std::result::Result<i64, String> {
    let units = "(ms, s, m, h, d, w)";
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(format!(
            "`{s}` is not a duration: give a number and a unit {units}"
        ));
    }
    let mut total: i64 = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!(
                "`{s}` is not a duration: `{rest}` does not start with a number"
            ));
        }
        let n: i64 = rest[..digits]
            .parse()
            .map_err(|_| format!("`{s}` is too large"))?;
        let after = &rest[digits..];
        let unit_len = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let unit = &after[..unit_len];
        let mult = match unit {
            "ms" => 1,
            "s" => 1000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 7 * 86_400_000,
            "" => return Err(format!("`{s}` needs a unit {units} after {n}")),
            _ => return Err(format!("`{s}`: unknown unit `{unit}` {units}")),
        };
        total = n
            .checked_mul(mult)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("`{s}` is too large"))?;
        rest = after[unit_len..].trim_start();
    }
    Ok(total)
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
    let mut out = String::new();
    push_human_ms(&mut out, ms);
    out
}

/// Appends [`human_ms`]`(ms)` to `out`, without the formatting machinery:
/// the reasons of a listing's garbage are written once per key, and in
/// the component `format!` cost more than the rest of the verdict.
pub fn push_human_ms(out: &mut String, ms: i64) {
    let s = ms / 1000;
    let (d, h, m) = (s / 86_400, (s % 86_400) / 3600, (s % 3600) / 60);
    let (a, a_unit, b, b_unit) = if d > 0 {
        (d, "d ", h, "h")
    } else if h > 0 {
        (h, "h ", m, "m")
    } else if m > 0 {
        (m, "m ", s % 60, "s")
    } else {
        push_int(out, s);
        out.push('s');
        return;
    };
    push_int(out, a);
    out.push_str(a_unit);
    push_int(out, b);
    out.push_str(b_unit);
}

/// Appends `n` in decimal, as `{n}` writes it, without `format!`.
pub(crate) fn push_int(out: &mut String, n: i64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        out.push('-');
    }
    out.extend(digits[i..].iter().map(|&c| char::from(c)));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formatting [`human_ms`] replaced, as the oracle.
    fn human_ms_by_format(ms: i64) -> String {
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

    #[test]
    fn integers_read_as_to_string_writes_them() {
        for n in [
            0,
            1,
            -1,
            9,
            10,
            -10,
            4_611_686_018_427_387_904,
            i64::MAX,
            i64::MIN,
        ] {
            let mut out = String::from("x");
            push_int(&mut out, n);
            assert_eq!(out, format!("x{n}"));
        }
    }

    #[test]
    fn human_durations_read_as_format_writes_them() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut cases = vec![0, 1, 999, 1000, 59_999, 60_000, 3_599_999, 3_600_000];
        cases.extend([
            86_399_999,
            86_400_000,
            -1,
            -1000,
            -86_400_000,
            i64::MAX,
            i64::MIN,
        ]);
        for _ in 0..10_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            cases.push((x >> (x % 40)) as i64);
        }
        for ms in cases {
            assert_eq!(human_ms(ms), human_ms_by_format(ms), "{ms} ms");
        }
        assert_eq!(human_ms(3 * 86_400_000 + 4 * 3_600_000 + 5), "3d 4h");
    }

    #[test]
    fn durations_read_in_every_form_reports_write() {
        assert_eq!(parse_duration("12h"), Ok(12 * 3_600_000));
        assert_eq!(parse_duration("500ms"), Ok(500));
        assert_eq!(parse_duration("1h 30m"), Ok(90 * 60_000));
        assert_eq!(parse_duration("1h30m"), Ok(90 * 60_000));
        assert_eq!(parse_duration("2w"), Ok(14 * 86_400_000));
        assert_eq!(
            parse_duration(" 3d 4h "),
            Ok(3 * 86_400_000 + 4 * 3_600_000)
        );
        for ms in [1_000, 61_000, 90 * 60_000, 3 * 86_400_000 + 4 * 3_600_000] {
            assert_eq!(parse_duration(&human_ms(ms)), Ok(ms), "{}", human_ms(ms));
        }
        for bad in [
            "",
            "12",
            "h",
            "1h 30",
            "1x",
            "-1h",
            "1.5h",
            "99999999999999999999d",
            "9223372036854775807d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(1_796_040_000_000), "2026-11-30T12:00:00Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(utc(-1), "1969-12-31T23:59:59Z");
        assert_eq!(utc(4_102_444_800_000), "2100-01-01T00:00:00Z");
    }
}
