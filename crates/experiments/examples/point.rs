//! Runs one experiment point and prints its metrics and run time:
//! `cargo run --release -p ccsim-experiments --example point -- WORKLOAD PLATFORM X_NAME X [key=value ...]`.
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 4 {
        eprintln!("usage: point WORKLOAD PLATFORM X_NAME X [key=value ...]");
        std::process::exit(2);
    }
    let platform = Platform::load(&a[1]).expect("platform");
    let mut params = Params::new();
    for kv in &a[4..] {
        let (k, v) = kv.split_once('=').expect("key=value");
        let value = match v.parse::<i64>() {
            Ok(i) => ParamValue::Int(i),
            Err(_) => ParamValue::Str(v.to_string()),
        };
        params.set(k, value, "command line");
    }
    let t0 = std::time::Instant::now();
    let r = ccsim_experiments::run_point(
        &a[0],
        &platform,
        &a[2],
        a[3].parse().expect("x"),
        &params,
        1,
        false,
    );
    let wall = t0.elapsed().as_secs_f64();
    match r {
        Ok(r) => println!(
            "{:?} events={} wall={wall:.2}s",
            r.metrics,
            r.stats.get("sim.events").copied().unwrap_or(0.0)
        ),
        Err(e) => println!("error: {e}"),
    }
}
