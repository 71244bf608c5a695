//! The rumur comparison: output parsing and error messages always; the
//! comparison itself as an ignored test that needs rumur, a C compiler and
//! the Murphi originals in `CCSIM_MURPHI_DIR` (see REFERENCE.md).

use std::path::PathBuf;

use ccsim_check::bench::{compare_with_rumur, parse_rumur_output, BenchError, BenchOptions};

#[test]
fn parses_rumur_summary_line() {
    let out = "Progress Report:\n\n\t 10000 states explored in 1s, with 43802 rules fired and \
               1795 states in the queue.\n\n=====\n\nStatus:\n\n\tNo error found.\n\n\
               State Space Explored:\n\n\t15703 states, 79505 rules fired in 1s.\n";
    assert_eq!(parse_rumur_output(out), Some((15703, 79505)));
    assert_eq!(parse_rumur_output("nothing here"), None);
}

#[test]
fn missing_murphi_file_says_what_to_do() {
    let opts = BenchOptions {
        murphi: Some(PathBuf::from("/nonexistent/ccsim-murphi-dir")),
        ..BenchOptions::default()
    };
    let err = compare_with_rumur("german-2", &opts).unwrap_err();
    assert!(matches!(err, BenchError::MurphiMissing(_)), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("german_baukus.m"), "{msg}");
    assert!(msg.contains("cubicle-model-checker/cubicle"), "{msg}");
    assert!(msg.contains("CCSIM_MURPHI_DIR"), "{msg}");
}

#[test]
fn unknown_model_is_an_error() {
    let err = compare_with_rumur("german-99", &BenchOptions::default()).unwrap_err();
    assert!(matches!(err, BenchError::UnknownModel(_)), "{err}");
}

/// Runs the comparison on German N=4 and cache3; skipped (with a message)
/// when `CCSIM_MURPHI_DIR` or rumur is missing.
#[test]
#[ignore = "needs rumur, cc and the Murphi originals in CCSIM_MURPHI_DIR; run in release mode"]
fn compare_with_rumur_on_reference_models() {
    if std::env::var_os("CCSIM_MURPHI_DIR").is_none() {
        eprintln!(
            "SKIPPED: set CCSIM_MURPHI_DIR to a directory holding german_baukus.m and cache3.m \
             (see crates/check/REFERENCE.md)"
        );
        return;
    }
    for model in ["cache3", "german-4"] {
        match compare_with_rumur(model, &BenchOptions::default()) {
            Ok(r) => {
                eprintln!("{}", r.summary());
                assert!(r.counts_match, "{}", r.summary());
            }
            Err(BenchError::Tool(msg)) if msg.contains("cannot run rumur") => {
                eprintln!("SKIPPED: {msg}");
                return;
            }
            Err(e) => panic!("{model}: {e}"),
        }
    }
}
