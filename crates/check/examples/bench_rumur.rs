//! Runs ccsim's explorer and rumur on the same reference models and prints
//! states/second of each and the ratio.
//!
//! ```text
//! cargo run --release -p ccsim-check --example bench_rumur -- \
//!     [--murphi DIR_OR_FILE] [--reps N] [--cflags "-O2"] [--json] [--ccsim-only] MODEL...
//! ```
//!
//! MODEL is a reference configuration name: `german-N` (N = 1..=6),
//! `cache3`, `cache3-pP`, `cache3-vV`, `cache3-pPvV`. Default models:
//! `german-4 cache3 cache3-p3v2`. The Murphi originals (`german_baukus.m`,
//! `cache3.m`) are not in the repository: pass their directory with
//! `--murphi` or set `CCSIM_MURPHI_DIR` (see crates/check/REFERENCE.md).
//! `--ccsim-only` times ccsim's explorer alone (no rumur, no Murphi file).

use std::path::PathBuf;
use std::process::ExitCode;

use ccsim_check::bench::{compare_with_rumur, BenchOptions};
use ccsim_check::refmodels::RefModel;
use ccsim_check::CheckOptions;

fn main() -> ExitCode {
    let mut opts = BenchOptions::default();
    let mut models: Vec<String> = Vec::new();
    let mut json = false;
    let mut ccsim_only = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--murphi" => opts.murphi = args.next().map(PathBuf::from),
            "--reps" => {
                opts.repetitions = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--reps takes a number")
            }
            "--cflags" => {
                opts.cflags = args
                    .next()
                    .expect("--cflags takes a string")
                    .split_whitespace()
                    .map(String::from)
                    .collect()
            }
            "--json" => json = true,
            "--ccsim-only" => ccsim_only = true,
            "-h" | "--help" => {
                println!(
                    "usage: bench_rumur [--murphi DIR_OR_FILE] [--reps N] [--cflags FLAGS] \
                     [--json] [--ccsim-only] MODEL..."
                );
                return ExitCode::SUCCESS;
            }
            _ => models.push(a),
        }
    }
    if models.is_empty() {
        models = vec!["german-4".into(), "cache3".into(), "cache3-p3v2".into()];
    }
    let mut failed = false;
    for m in &models {
        if ccsim_only {
            let Some(model) = RefModel::by_name(m) else {
                eprintln!("{m}: unknown model");
                failed = true;
                continue;
            };
            let mut best: Option<ccsim_check::CheckReport> = None;
            for _ in 0..opts.repetitions.max(1) {
                let r = model.check(&CheckOptions::default());
                if best.as_ref().is_none_or(|b| r.seconds < b.seconds) {
                    best = Some(r);
                }
            }
            let r = best.expect("one repetition");
            if json {
                println!("{}", serde_json::json!({"model": m, "report": r}));
            } else {
                println!("{m}: {}", r.summary());
            }
            continue;
        }
        match compare_with_rumur(m, &opts) {
            Ok(r) => {
                if json {
                    println!("{}", serde_json::to_string(&r).expect("serialisable"));
                } else {
                    println!("{}", r.summary());
                    println!("    rumur: {} | {}", r.rumur_version, r.rumur_command);
                    println!("    cc:    {}", r.cc_command);
                    if !r.murphi_sha256_matches {
                        println!(
                            "    note: {} differs from the recorded original (SHA-256)",
                            r.murphi_file.display()
                        );
                    }
                }
                failed |= !r.counts_match;
            }
            Err(e) => {
                eprintln!("{m}: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
