//! Prints the Cohort benchmark's latencies and Table 3's ratios at the
//! given queue sizes (the calibration aid for `platforms/openpiton.toml`):
//! `cargo run --release -p ccsim-experiments --example cohort_table3 -- 1024 [key=value ...]`
//! where a key is `backoff`, `mmio` or `setup` (overriding the platform's).

use ccsim_experiments::cohort::{run_cohort, run_dma, run_mmio, SocParams};

fn main() {
    let platform = ccsim_platform::Platform::load("openpiton").expect("platform");
    let mut p = SocParams::from_platform(&platform).expect("params");
    eprintln!("{:?}", p.timing);
    let mut sizes = Vec::new();
    for a in std::env::args().skip(1) {
        match a.split_once('=') {
            Some(("backoff", v)) => p.backoff = v.parse().expect("number"),
            Some(("mmio", v)) => p.maple_mmio = v.parse().expect("number"),
            Some(("setup", v)) => p.dma_setup = v.parse().expect("number"),
            _ => sizes.push(a.parse::<u64>().expect("a queue size")),
        }
    }
    for &n in &sizes {
        let ch = ccsim_experiments::cohort::run_chain(&p, n, 64.min(n), true);
        let sw = ccsim_experiments::cohort::run_chain(&p, n, 64.min(n), false);
        println!(
            "chain n={n}: chained {} software {} | gain {:.2}",
            ch.cycles,
            sw.cycles,
            sw.cycles as f64 / ch.cycles as f64
        );
    }
    for accel in ["sha256", "aes128"] {
        let small = if accel == "sha256" { 8 } else { 2 };
        for &n in &sizes {
            let c64 = run_cohort(&p, accel, n, 64.min(n), false);
            let cs = run_cohort(&p, accel, n, small, false);
            let m = run_mmio(&p, accel, n);
            let d = run_dma(&p, accel, n);
            let ipc =
                |o: &ccsim_experiments::cohort::Outcome| o.instructions as f64 / o.cycles as f64;
            println!(
                "{accel} n={n}: cohort64 {} small {} mmio {} dma {} | vs mmio {:.2} vs dma {:.2} batching {:.2} | ipc x mmio {:.2} x dma {:.2}",
                c64.cycles, cs.cycles, m.cycles, d.cycles,
                m.cycles as f64 / c64.cycles as f64, d.cycles as f64 / c64.cycles as f64, cs.cycles as f64 / c64.cycles as f64,
                ipc(&c64) / ipc(&m), ipc(&c64) / ipc(&d)
            );
        }
    }
}
