//! `cargo run --release -p ccsim-experiments --example mutation_coverage --
//! PLATFORM SYSTEM [SEEDS OPS LINES]`: every single-row mutant of the
//! system's protocol, judged by the checker and then by the random tester
//! (see `ccsim_experiments::mutation`), one line each, and a summary.

use ccsim_experiments::mutation::{coverage, CheckerOutcome, TimingBudget, TimingVerdict};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [platform, system, rest @ ..] = args.as_slice() else {
        eprintln!("usage: mutation_coverage PLATFORM SYSTEM [SEEDS OPS LINES]");
        std::process::exit(2);
    };
    let num = |i: usize, d: u64| {
        rest.get(i)
            .map_or(d, |a| a.parse().expect("a whole number"))
    };
    let budget = TimingBudget {
        first_seed: 0,
        seeds: num(0, 20),
        ops: num(1, 2000),
        lines: num(2, 2),
    };
    let p = ccsim_platform::Platform::load(platform).expect("a platform");
    let t = std::time::Instant::now();
    let r = coverage(&p, system, None, &budget).expect("runs");
    let (mut checker, mut timing, mut neither) = (0, 0, Vec::new());
    for m in &r {
        let line = match (&m.by_checker, &m.by_timing) {
            (CheckerOutcome::Caught { property }, _) => {
                checker += 1;
                format!("checker: {property}")
            }
            (c, Some(TimingVerdict::Caught { seed, problem })) => {
                timing += 1;
                format!("timing (checker: {c:?}), seed {seed}: {problem}")
            }
            (c, _) => {
                neither.push(&m.mutant);
                format!("NEITHER (checker: {c:?})")
            }
        };
        println!("{:<70} {line}", m.mutant);
    }
    println!(
        "{} mutants: {checker} caught by the checker, {timing} by the random tester, {} by neither ({:.1} s)",
        r.len(),
        neither.len(),
        t.elapsed().as_secs_f64()
    );
}
