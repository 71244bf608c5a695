//! Property-based fuzzing of the protocol toolkit's inputs: a spec parses
//! and generates, or fails with a one-line error, whatever its bytes; a
//! generated table round-trips through its JSON export, and the importer
//! never panics on edited JSON.
//!
//! The default budget is small; the slow tier sets `PROPTEST_CASES`
//! (BENCHMARKS.md, "Fuzzing"):
//!
//! ```sh
//! PROPTEST_CASES=100000 cargo test --release -p ccsim-experiments --test fuzz_specs
//! ```

use ccsim_protocol::export::{export_json, import_json};
use ccsim_protocol::{builtin_text, generate, Spec};
use proptest::prelude::*;

mod fuzz_common;
use fuzz_common::{config, edits, mutate};

const SPECS: [&str; 11] = [
    "eci-dc",
    "eci-cc",
    "invocation",
    "invocation-shared-dcu",
    "msi-dma",
    "cxl-cache",
    "cxl-mem-bi",
    "cxl-type2",
    "cxl-mem",
    "ccix",
    "pmesh",
];

/// Every shipped spec is fuzzed.
#[test]
fn the_fuzzed_specs_are_the_shipped_ones() {
    let shipped: Vec<&str> = ccsim_protocol::list_specs()
        .iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(shipped, SPECS);
}

/// Odd values and lines a hand-edited spec may hold.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("\"\"".to_string()),
        Just("[]".to_string()),
        Just("[\"send Nope to home\"]".to_string()),
        Just("[\"write_mem\", \"write_mem\"]".to_string()),
        Just("\"I\"".to_string()),
        Just("\"NoSuchState\"".to_string()),
        Just("[[message]]".to_string()),
        Just("[[channel]]".to_string()),
        Just("true".to_string()),
        Just("-1".to_string()),
        "[ -~]{0,24}",
    ]
}

#[test]
fn every_shipped_spec_round_trips_through_its_json_export() {
    for name in SPECS {
        let spec = Spec::parse(builtin_text(name).unwrap(), name).unwrap();
        let (ir, _) = generate(&spec).unwrap();
        let json = export_json(&ir);
        let back = import_json(&json).unwrap();
        assert_eq!(export_json(&back), json, "{name}");
    }
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn arbitrary_bytes_parse_or_fail_in_one_line(bytes in prop::collection::vec(any::<u8>(), 0..1500)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = Spec::parse(&text, "fuzz.toml") {
            let s = e.to_string();
            prop_assert!(!s.contains('\n') && s.starts_with("fuzz.toml"), "{s}");
        }
    }

    #[test]
    fn edited_specs_generate_or_fail_in_one_line(which in 0..SPECS.len(), edits in edits(token())) {
        let text = mutate(builtin_text(SPECS[which]).unwrap(), &edits);
        match Spec::parse(&text, "edited.toml") {
            Err(e) => {
                let s = e.to_string();
                prop_assert!(!s.contains('\n') && s.starts_with("edited.toml"), "{s}");
            }
            Ok(spec) => {
                if let Ok((ir, _)) = generate(&spec) {
                    // What generates exports and imports back unchanged.
                    let json = export_json(&ir);
                    let back = import_json(&json).map_err(TestCaseError::fail)?;
                    prop_assert_eq!(export_json(&back), json);
                }
            }
        }
    }

    #[test]
    fn edited_json_imports_or_fails(which in 0..SPECS.len(), edits in edits(token())) {
        let spec = Spec::parse(builtin_text(SPECS[which]).unwrap(), "spec").unwrap();
        let (ir, _) = generate(&spec).unwrap();
        let pretty = serde_json::to_string_pretty(
            &serde_json::from_str::<serde_json::Value>(&export_json(&ir)).unwrap(),
        )
        .unwrap();
        let _ = import_json(&mutate(&pretty, &edits));
    }
}
