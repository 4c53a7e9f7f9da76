//! The command's output on standard output. A reader that goes away
//! (`lakesweep plan … | head`) ends the command quietly with the status a
//! shell reports for a program whose pipe closed (141), never a panic; any
//! other write failure is named on standard error (status 74). Commands
//! print their results after their work is done, so no deletion is ever
//! cut short by a closed output.

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

/// `println!` for the command's output (see the module).
macro_rules! outln {
    ($($t:tt)*) => { $crate::out::write(format_args!($($t)*), true) };
}

/// `print!` for the command's output (see the module).
macro_rules! out {
    ($($t:tt)*) => { $crate::out::write(format_args!($($t)*), false) };
}
