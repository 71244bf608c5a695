//! Prints every point of every shipped experiment (full sweep), one line per
//! point with its metrics, statistics and trace hash, so two builds can be
//! compared byte for byte:
//! `cargo run --release -p ccsim-experiments --example dump_points > points.txt`.
//!
//! * `--json`: one JSON object per line (`experiment`, `series`, `x`,
//!   `metrics`, `stats`, `trace_hash`, or `error`); this is the format of
//!   the committed golden file `tests/golden/points.jsonl`, which
//!   `tests/python/test_golden_points.py` compares with the installed
//!   package.
//! * `--quick`: the quick sweeps only.
//! * `--no-trace-stats`: leave out `sim.events` and the trace hash (the
//!   figures that legitimately change when a model schedules fewer events).
//! * `--only <experiment>`: the points of one experiment.

use ccsim_platform::{list_experiments, Experiment};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let (no_event_stats, json, quick) = (flag("--no-trace-stats"), flag("--json"), flag("--quick"));
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
        let mut runs: std::collections::HashMap<String, Result<_, String>> =
            std::collections::HashMap::new();
        let xs = if quick { &e.quick } else { &e.sweep };
        for s in &e.series {
            let platform = e.platform(&s.platform).expect("loaded with the experiment");
            for &x in xs {
                // Series that differ only in their metric share one run
                // (the simulation is deterministic, so the output is the
                // same as running each).
                let key = format!("{}|{}|{:?}|{x}", s.platform, s.workload, s.params);
                let r = match runs.get(&key) {
                    Some(r) => r.clone(),
                    None => {
                        let r = ccsim_experiments::run_point(
                            &s.workload,
                            platform,
                            &e.x.name,
                            x,
                            &s.params,
                            0,
                            false,
                        )
                        .map_err(|err| err.to_string());
                        runs.insert(key, r.clone());
                        r
                    }
                };
                let r = r.map(|mut p| {
                    if no_event_stats {
                        p.stats.remove("sim.events");
                        p.trace_hash.clear();
                    }
                    p
                });
                if json {
                    let mut o = serde_json::json!({"experiment": name, "series": s.name, "x": x});
                    match r {
                        Ok(p) => {
                            o["metrics"] = serde_json::json!(p.metrics);
                            o["stats"] = serde_json::json!(p.stats);
                            o["trace_hash"] = serde_json::json!(p.trace_hash);
                        }
                        Err(err) => o["error"] = serde_json::json!(err),
                    }
                    println!("{o}");
                    continue;
                }
                match r {
                    Ok(p) => println!(
                        "{name} {} x={x} metrics={:?} stats={:?} hash={}",
                        s.name, p.metrics, p.stats, p.trace_hash
                    ),
                    Err(err) => println!("{name} {} x={x} error={err:?}", s.name),
                }
            }
        }
    }
}
