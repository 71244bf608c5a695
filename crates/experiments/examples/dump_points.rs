//! Prints every point of every shipped experiment (full sweep), one line per
//! point with its metrics, statistics and trace hash, so two builds can be
//! compared byte for byte:
//! `cargo run --release -p ccsim-experiments --example dump_points > points.txt`.
//! Pass `--no-trace-stats` to leave out `sim.events` and the trace hash (the
//! figures that legitimately change when a model schedules fewer events).
//! Pass `--only <experiment>` to print the points of one experiment.

use ccsim_config::Platform;
use ccsim_config::{list_experiments, Experiment};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let no_event_stats = args.iter().any(|a| a == "--no-trace-stats");
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1));
    let decls = ccsim_experiments::workload_decls();
    for name in list_experiments() {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let e = Experiment::load(name, &decls).unwrap_or_else(|err| panic!("{name}: {err}"));
        for s in &e.series {
            let platform = Platform::load(&s.platform).expect("platform");
            for &x in &e.sweep {
                let r = ccsim_experiments::run_point(
                    &s.workload,
                    &platform,
                    &e.x.name,
                    x,
                    &s.params,
                    0,
                    false,
                );
                match r {
                    Ok(mut p) => {
                        if no_event_stats {
                            p.stats.remove("sim.events");
                            p.trace_hash.clear();
                        }
                        println!(
                            "{name} {} x={x} metrics={:?} stats={:?} hash={}",
                            s.name, p.metrics, p.stats, p.trace_hash
                        )
                    }
                    Err(err) => println!("{name} {} x={x} error={err:?}", s.name),
                }
            }
        }
    }
}
