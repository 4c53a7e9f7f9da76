//! This machine's clock: the one place the command reads it. The planner
//! takes the time as an input and judges it (`check-clock`); nothing here
//! compares times.

/// This machine's clock, milliseconds since the epoch.
pub fn clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
