//! Property-based fuzzing of the platform and experiment loaders and of
//! `--set` overrides: whatever the bytes, loading returns a platform or a
//! one-line error naming the file; it never panics.
//!
//! Inputs are both byte-level (arbitrary bytes, read as text the way a
//! file would be) and structured (the shipped files with lines deleted,
//! duplicated or with a value replaced by an odd token), which reach deep
//! into validation. The default budget is small; the slow tier sets
//! `PROPTEST_CASES` (BENCHMARKS.md, "Fuzzing"):
//!
//! ```sh
//! PROPTEST_CASES=100000 cargo test --release -p ccsim-experiments --test fuzz_parsers
//! ```

use ccsim_platform::{registry, shipped_text, Experiment, Platform};
use proptest::prelude::*;

mod fuzz_common;
use fuzz_common::{config, edits, mutate};

const PLATFORMS: [&str; 7] = [
    "cohet",
    "enzian",
    "msi-dma",
    "n1sdp",
    "nfp6000-e5",
    "openpiton",
    "pc-vcu118",
];

/// Every shipped platform is fuzzed.
#[test]
fn the_fuzzed_platforms_are_the_shipped_ones() {
    assert_eq!(ccsim_platform::list_platforms(), PLATFORMS);
}
const EXPERIMENTS: [&str; 4] = [
    "pio-pcie",
    "cckit-dc-latency",
    "pio-invocation-payload",
    "cohet-dma",
];

/// Odd values a hand-edited file may hold.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("1e400".to_string()),
        Just("nan".to_string()),
        Just("-inf".to_string()),
        Just("99999999999999999999999".to_string()),
        Just("\"\"".to_string()),
        Just("[]".to_string()),
        Just("{}".to_string()),
        Just("{ value = 1 }".to_string()),
        Just("{ value = -3, from = \"x\" }".to_string()),
        Just("[[series]]".to_string()),
        Just("[components.x]".to_string()),
        Just("type = \"eci_mux\"".to_string()),
        "[ -~]{0,24}",
    ]
}

/// An error is one line that names the file it is about.
fn one_line(e: &ccsim_platform::ConfigError, file: &str) -> Result<(), TestCaseError> {
    let s = e.to_string();
    prop_assert!(!s.contains('\n'), "multi-line error: {s}");
    prop_assert!(s.starts_with(file), "error does not name {file}: {s}");
    Ok(())
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn arbitrary_bytes_load_or_fail_in_one_line(bytes in prop::collection::vec(any::<u8>(), 0..1500)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = Platform::from_toml_str("fuzz.toml", &text, &registry()) {
            one_line(&e, "fuzz.toml")?;
        }
        if let Err(e) = Experiment::from_toml_str("fuzz.toml", &text, &ccsim_experiments::workload_decls()) {
            one_line(&e, "fuzz.toml")?;
        }
    }

    #[test]
    fn edited_platforms_load_or_fail_in_one_line(which in 0..PLATFORMS.len(), edits in edits(token())) {
        let text = mutate(shipped_text("platform", PLATFORMS[which]).unwrap(), &edits);
        match Platform::from_toml_str("edited.toml", &text, &registry()) {
            Err(e) => one_line(&e, "edited.toml")?,
            // A platform that loads is usable: its systems report their
            // names without panicking.
            Ok(p) => prop_assert!(p.systems.keys().all(|k| !k.is_empty())),
        }
    }

    #[test]
    fn edited_experiments_load_or_fail_in_one_line(which in 0..EXPERIMENTS.len(), edits in edits(token())) {
        let text = mutate(shipped_text("experiment", EXPERIMENTS[which]).unwrap(), &edits);
        if let Err(e) = Experiment::from_toml_str("edited.toml", &text, &ccsim_experiments::workload_decls()) {
            one_line(&e, "edited.toml")?;
        }
    }

    #[test]
    fn overrides_apply_or_fail_in_one_line(
        which in 0..PLATFORMS.len(),
        key in "[a-z_]{1,14}(\\.[a-z_]{1,16}){0,2}",
        value in token(),
    ) {
        let p = Platform::load(PLATFORMS[which]).unwrap();
        if let Err(e) = p.with_text_overrides(&[(key, value)]) {
            one_line(&e, "overrides")?;
        }
    }
}
