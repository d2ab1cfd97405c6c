//! The baseline parser and `fmt`: any text is parsed or reported at places inside it; what
//! parses is formatted to a fixed point that means the same grants and shows no invisible
//! character raw.
#![no_main]

use libfuzzer_sys::fuzz_target;
use velaris::baseline::{fmt, parse};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parsed = match parse(text, "fuzz.capabilities") {
        Ok(b) => b,
        Err(e) => {
            let lines = text.split('\n').count();
            for p in &e.problems {
                assert!(p.line >= 1 && p.line <= lines && p.column >= 1, "{e}");
            }
            return;
        }
    };
    let once = fmt(text, "fuzz.capabilities").expect("a valid baseline formats");
    assert!(
        !once.chars().any(|c| c != '\n' && velaris::text::escape::is_dangerous(c)),
        "fmt wrote an invisible or control character raw:\n{once}"
    );
    let again = parse(&once, "fuzz.capabilities").expect("fmt's output parses");
    assert_eq!(again, parsed, "fmt changed what is granted");
    assert_eq!(fmt(&once, "fuzz.capabilities").unwrap(), once, "fmt is not idempotent");
});
