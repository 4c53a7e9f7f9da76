//! Command-line parsing, durations and times.

/// Usage text.
pub const USAGE: &str =
    "usage: lakesweep plan TABLE [--metadata URI] [--older-than DURATION] [--now TIME]
                      [--location-map FROM=TO]... [--json] [--out PLAN.json] [--wasm PATH]

  TABLE            table location: a path or file:// URI
  --metadata URI   current metadata file (default: from metadata/version-hint.text)
  --older-than D   file-retention window, like 72h or 3d (default 3d, Iceberg's own)
  --now TIME       evaluation time, RFC 3339 (2026-11-30T12:00:00Z) or epoch milliseconds
                   (default: the clock)
  --location-map   rewrite a path prefix found in the metadata (relocated tables)
  --json           print one JSON object instead of the report
  --out FILE       also write the sealed plan document to FILE
  --wasm PATH      the component (default: $LAKESWEEP_WASM or target/lakesweep.wasm)";

/// A parsed command.
pub enum Command {
    Plan(PlanArgs),
    Help,
}

/// Arguments of `plan`.
pub struct PlanArgs {
    pub table: String,
    pub metadata: Option<String>,
    pub retention_ms: i64,
    pub now_ms: i64,
    pub location_map: Vec<(String, String)>,
    pub json: bool,
    pub out: Option<String>,
    pub wasm: Option<String>,
}

pub fn parse(argv: &[String]) -> Result<Command, String> {
    let Some(cmd) = argv.first() else {
        return Ok(Command::Help);
    };
    match cmd.as_str() {
        "-h" | "--help" | "help" => return Ok(Command::Help),
        "plan" => {}
        other => {
            return Err(format!(
                "unknown command `{other}` (this version has `plan`)"
            ))
        }
    }
    let mut p = PlanArgs {
        table: String::new(),
        metadata: None,
        retention_ms: 3 * 86_400_000,
        now_ms: now_ms(),
        location_map: vec![],
        json: false,
        out: None,
        wasm: None,
    };
    let mut it = argv[1..].iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match a.as_str() {
            "--metadata" => p.metadata = Some(val("--metadata")?),
            "--older-than" => p.retention_ms = duration_ms(&val("--older-than")?)?,
            "--now" => p.now_ms = time_ms(&val("--now")?)?,
            "--location-map" => {
                let v = val("--location-map")?;
                let (f, t) = v.split_once('=').ok_or("--location-map takes FROM=TO")?;
                p.location_map.push((f.to_owned(), t.to_owned()));
            }
            "--json" => p.json = true,
            "--out" => p.out = Some(val("--out")?),
            "--wasm" => p.wasm = Some(val("--wasm")?),
            s if s.starts_with('-') => return Err(format!("unknown option `{s}`")),
            s if p.table.is_empty() => p.table = s.to_owned(),
            s => return Err(format!("unexpected argument `{s}`")),
        }
    }
    if p.table.is_empty() {
        return Err("plan needs a TABLE location".into());
    }
    Ok(Command::Plan(p))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `72h`, `3d`, `90m`, `30s`, `1500ms` -> milliseconds. Bare numbers are refused.
pub fn duration_ms(s: &str) -> Result<i64, String> {
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("duration `{s}` needs a unit (ms, s, m, h, d)"))?;
    let (n, unit) = s.split_at(split);
    let n: i64 = n.parse().map_err(|_| format!("bad duration `{s}`"))?;
    let mult = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("duration `{s}`: unknown unit `{unit}`")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("duration `{s}` too large"))
}

/// RFC 3339 (`2026-11-30T12:00:00Z`, `...+02:00`, fractional seconds) or epoch milliseconds.
pub fn time_ms(s: &str) -> Result<i64, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().map_err(|_| format!("bad time `{s}`"));
    }
    let bad = || format!("time `{s}` is neither RFC 3339 nor epoch milliseconds");
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let num =
        |r: std::ops::Range<usize>| s.get(r).and_then(|x| x.parse::<i64>().ok()).ok_or_else(bad);
    let (y, mo, d, h, mi, sec) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    let mut rest = &s[19..];
    let mut frac_ms = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let digits: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
        frac_ms = format!("{digits:0<3}")[..3]
            .parse::<i64>()
            .map_err(|_| bad())?;
        rest = &r[digits.len()..];
    }
    let offset_ms = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            let oh: i64 = o[1..3].parse().map_err(|_| bad())?;
            let om: i64 = o[4..6].parse().map_err(|_| bad())?;
            sign * (oh * 3_600_000 + om * 60_000)
        }
        _ => return Err(bad()),
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return Err(bad());
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = if y2 >= 0 { y2 } else { y2 - 399 } / 400;
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok(((days * 86_400 + h * 3600 + mi * 60 + sec) * 1000 + frac_ms) - offset_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_units() {
        assert_eq!(duration_ms("72h").unwrap(), 259_200_000);
        assert_eq!(duration_ms("3d").unwrap(), 259_200_000);
        assert!(duration_ms("72").is_err());
        assert!(duration_ms("3w").is_err());
    }

    #[test]
    fn times() {
        assert_eq!(time_ms("1970-01-01T00:00:00Z").unwrap(), 0);
        assert_eq!(time_ms("2026-11-30T12:00:00Z").unwrap(), 1_796_040_000_000);
        assert_eq!(
            time_ms("2026-11-30T14:00:00.5+02:00").unwrap(),
            1_796_040_000_500
        );
        assert_eq!(time_ms("1796040000000").unwrap(), 1_796_040_000_000);
        assert!(time_ms("yesterday").is_err());
    }
}
