//! Any bytes as an Avro object container: open, then walk every block.
#![no_main]
use lakesweep::codec::avro::Container;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Container::open(data) {
        let _ = c.for_each_block(|_, _| Ok(()));
    }
});
