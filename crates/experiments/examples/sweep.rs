//! Prints one workload's metrics over a sweep of message sizes:
//! `cargo run --release -p ccsim-experiments --example sweep -- cohet dma_read mode=bandwidth`.

use ccsim_kernel::component::{ParamValue, Params};
use ccsim_platform::Platform;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: sweep PLATFORM WORKLOAD [key=value ...]");
        std::process::exit(2);
    }
    let platform = match Platform::load(&args[0]) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut params = Params::new();
    for kv in &args[2..] {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let value = match v {
            "true" | "false" => ParamValue::Bool(v == "true"),
            _ => v
                .parse()
                .map(ParamValue::Int)
                .unwrap_or_else(|_| ParamValue::Str(v.to_string())),
        };
        params.set(k, value, "command line");
    }
    for x in [
        16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536, 262144,
    ] {
        let t = std::time::Instant::now();
        match ccsim_experiments::run_point(
            &args[1],
            &platform,
            "message_bytes",
            x as f64,
            &params,
            0,
            false,
        ) {
            Ok(r) => println!(
                "{x:>7} {:?} ({:.1} ms, {} events)",
                r.metrics,
                t.elapsed().as_secs_f64() * 1e3,
                r.stats.get("sim.events").copied().unwrap_or(0.0)
            ),
            Err(e) => println!("{x:>7} error: {e}"),
        }
    }
}
