//! The command's output on standard output. A reader that goes away
//! (`lakesweep plan … | head`) ends the command quietly with the status a
//! shell reports for a program whose pipe closed (141), never a panic; any
//! other write failure is named on standard error (status 74). Commands
//! print their results after their work is done; a line printed while
//! deletions are under way (`pinot apply`'s receipts) goes through
//! [`progress`], which drops output once the reader is gone and lets the
//! run finish (its receipts file is written first).

use std::io::Write;

/// Status when standard output was closed by its reader.
const CLOSED: i32 = 141;
/// Status when standard output cannot be written (`EX_IOERR`).
const IO_ERROR: i32 = 74;

/// Writes `args` (and a newline when `newline`) to standard output.
pub fn write(args: std::fmt::Arguments<'_>, newline: bool) {
    let mut o = std::io::stdout().lock();
    let r = o
        .write_fmt(args)
        .and_then(|()| if newline { o.write_all(b"\n") } else { Ok(()) });
    if let Err(e) = r {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(CLOSED);
        }
        let _ = writeln!(std::io::stderr(), "lakesweep: cannot write the output: {e}");
        std::process::exit(IO_ERROR);
    }
}

/// Set once standard output was found closed by [`progress`].
static CLOSED_SEEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A line printed while the command's work goes on: once the reader is
/// gone, lines are dropped and the work continues (a deletion is never cut
/// short by a closed pipe); other write failures are named once on
/// standard error.
pub fn progress(args: std::fmt::Arguments<'_>) {
    use std::sync::atomic::Ordering;
    if CLOSED_SEEN.load(Ordering::Relaxed) {
        return;
    }
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|()| o.write_all(b"\n")) {
        CLOSED_SEEN.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = writeln!(std::io::stderr(), "lakesweep: cannot write the output: {e}");
        }
    }
}

/// [`progress`] as a macro, like `println!`.
macro_rules! progress {
    ($($t:tt)*) => { $crate::out::progress(format_args!($($t)*)) };
}

/// `println!` for the command's output (see the module).
macro_rules! outln {
    ($($t:tt)*) => { $crate::out::write(format_args!($($t)*), true) };
}

/// `print!` for the command's output (see the module).
macro_rules! out {
    ($($t:tt)*) => { $crate::out::write(format_args!($($t)*), false) };
}
