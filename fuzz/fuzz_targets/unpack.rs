//! The `.crate` unpacker: any bytes unpack under the rules or are rejected, never more than the
//! limits allow. The first byte chooses whether the rest is taken as a `.crate` as it is or as a
//! tar stream to gzip first, so that the fuzzer reaches the tar rules too.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use velaris::package::{Limits, unpack_crate};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let bytes = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(rest).unwrap();
        gz.finish().unwrap()
    };
    // Small limits, so that a bomb is found quickly rather than after 512 MiB.
    let limits = Limits { max_total: 1 << 20, max_file: 1 << 18, max_entries: 1000 };
    if let Ok(u) = unpack_crate(&bytes, "fuzz", "1.0.0", &limits) {
        let sum: u64 = u.files.values().map(|f| f.len() as u64).sum();
        assert_eq!(sum, u.unpacked_bytes);
        assert!(sum <= limits.max_total && u.files.len() <= limits.max_entries);
        for (name, file) in &u.files {
            assert!(file.len() as u64 <= limits.max_file);
            assert!(!name.is_empty() && !name.starts_with('/') && !name.split('/').any(|c| c.is_empty() || c == "." || c == ".."), "{name:?}");
        }
    }
});
