//! One memory run of the coherent bench, for heap profiles:
//! `valgrind --tool=massif target/release/examples/coherent_mem LINES REGION_MIB`.
//! Same system as `coherent_bench`'s memory runs (64 MSHRs, 131,072-line
//! 16-way LLC, DDR, checks and trace off, loads counted, not recorded):
//! `LINES` reads spread evenly over `REGION_MIB` MiB. Prints the
//! resident-set growth of the run.

use ccsim_coherence::Tables;
use ccsim_eci::bench::counted_run;

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let lines: u64 = args.next().map_or(100_000, |a| a.parse().expect("LINES"));
    let region_mib: u64 = args.next().map_or(64, |a| a.parse().expect("REGION_MIB"));
    let region_lines = (region_mib << 20) / 128;
    let n = lines.min(region_lines);
    let stride = region_lines / n;
    let tables = Tables::eci_dc().expect("tables");
    let before = rss_kib();
    let sys = counted_run(&tables, false, (0..n).map(|i| i * stride)).expect("run");
    let after = rss_kib();
    println!(
        "lines {n} region {region_mib} MiB stride {stride} rss_delta {} KiB events {}",
        after - before,
        sys.sim.events_processed()
    );
}
