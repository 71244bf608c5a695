//! One speed run of the coherent bench, for instruction counts:
//! `valgrind --tool=callgrind target/release/examples/coherent_prof READS CHECKS`
//! (CHECKS is 0 or 1). Same system as `coherent_bench` (64 MSHRs,
//! 131,072-line 16-way LLC, DDR, trace off, sequential reads); prints the
//! kernel events processed.

use ccsim_coherence::Tables;
use ccsim_eci::bench::speed_run;

fn main() {
    let mut args = std::env::args().skip(1);
    let reads: u64 = args.next().map_or(20_000, |a| a.parse().expect("READS"));
    let checks = args.next().is_some_and(|a| a == "1");
    let tables = Tables::eci_dc().expect("tables");
    let sys = speed_run(&tables, checks, reads).expect("run");
    println!(
        "reads {reads} checks {checks} events {}",
        sys.sim.events_processed()
    );
}
