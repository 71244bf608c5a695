//! One speed run of the coherent bench, for instruction counts:
//! `valgrind --tool=callgrind target/release/examples/coherent_prof READS CHECKS`
//! (CHECKS is 0 or 1). Same system as `coherent_bench` (64 MSHRs,
//! 131,072-line 16-way LLC, DDR, trace off, sequential reads); prints the
//! kernel events processed.

use ccsim_kernel::prelude::*;
use ccsim_models::coherent::cpu::CpuOp;
use ccsim_models::coherent::system::{CoherentParams, CoherentSystem, HomeMemory};
use ccsim_models::coherent::Tables;

fn main() {
    let mut args = std::env::args().skip(1);
    let reads: u64 = args.next().map_or(20_000, |a| a.parse().expect("READS"));
    let checks = args.next().is_some_and(|a| a == "1");
    let tables = Tables::eci_dc().expect("tables");
    let params = CoherentParams {
        cpu: Params::new()
            .with("mshrs", ParamValue::Int(64), "prof")
            .with("llc_lines", ParamValue::Int(131072), "prof")
            .with("llc_ways", ParamValue::Int(16), "prof"),
        dc: Params::new().with("checks", ParamValue::Bool(checks), "prof"),
        tables: Some(tables),
        ..Default::default()
    };
    let program = (0..reads).map(|line| CpuOp::Load { line }).collect();
    let mut sys = CoherentSystem::build_with(
        &params,
        HomeMemory::Ddr,
        program,
        Vec::new(),
        1,
        TraceMode::Off,
    )
    .expect("build");
    sys.run().expect("run");
    assert_eq!(sys.cpu().completed.len() as u64, reads);
    println!(
        "reads {reads} checks {checks} events {}",
        sys.sim.events_processed()
    );
}
