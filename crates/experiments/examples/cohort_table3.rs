//! Prints the Cohort benchmark's latencies and Table 3's ratios at the
//! given queue sizes (the calibration aid for `platforms/openpiton.toml`):
//! `cargo run --release -p ccsim-experiments --example cohort_table3 -- 1024 [key=value ...]`
//! where a key is `backoff`, `mmio`, `setup` or `l15` (the L1.5 line's
//! bytes: 16 as OpenPiton, 64 for whole lines) overriding the platform's,
//! or `check=every_call` (the queue library's index checks; default cached,
//! as the workload's), `fences=around` (a fence after each index store too,
//! as the Cohort project's C library) or `padded=true` (each read index on
//! a line of its own). Besides the ratios it prints each queue's line
//! migrations per element (the pointer and data ping-pong) and what the
//! waiting core retires per waiting cycle in each mode, and the parts of
//! a pointer update per word (the engine's and the core's counters), and
//! each baseline's retired instructions over Cohort batch=64's (what an
//! IPC speedup divides the latency speedup by).

use ccsim_devices::cohort::queue::{IndexCheck, PublishFences};
use ccsim_experiments::cohort::{run_cohort_fenced, run_dma, run_mmio, SocParams};

fn main() {
    let platform = ccsim_platform::Platform::load("openpiton").expect("platform");
    let mut p = SocParams::from_platform(&platform).expect("params");
    eprintln!("{:?}", p.timing);
    let mut sizes = Vec::new();
    // The workload's defaults: the Cohort authors' C library.
    let mut check = IndexCheck::EveryPop;
    let mut fences = PublishFences::Around;
    let mut padded = true;
    let mut calibrate = false;
    for a in std::env::args().skip(1) {
        match a.split_once('=') {
            Some(("backoff", v)) => p.backoff = v.parse().expect("number"),
            Some(("mmio", v)) => p.maple_mmio = v.parse().expect("number"),
            Some(("setup", v)) => p.dma_setup = v.parse().expect("number"),
            Some(("l15", v)) => p.l15_line = v.parse().expect("number"),
            Some(("mshrs", v)) => p.engine_mshrs = v.parse().expect("number"),
            Some(("check", "every_call")) => check = IndexCheck::EveryCall,
            Some(("check", "cached")) => check = IndexCheck::Cached,
            Some(("fences", "around")) => fences = PublishFences::Around,
            Some(("fences", "before")) => fences = PublishFences::Before,
            Some(("padded", "true")) => padded = true,
            Some(("padded", "false")) => padded = false,
            None if a == "calibrate" => calibrate = true,
            _ => sizes.push(a.parse::<u64>().expect("a queue size")),
        }
    }
    if calibrate {
        // The two SHA facts at 1024 elements (Table 3): vs MMIO 7.62x,
        // vs DMA 10.70x; each MAPLE cost bisected on its own (both
        // baselines' latencies grow with them, Cohort's does not).
        let c64 = run_cohort_fenced(&p, "sha256", 1024, 64, padded, check, fences).cycles as f64;
        let find = |lo: u64, hi: u64, f: &dyn Fn(u64) -> f64, goal: f64| {
            let (mut lo, mut hi) = (lo, hi);
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if f(mid) < goal {
                    lo = mid
                } else {
                    hi = mid
                }
            }
            if (f(hi) - goal).abs() < (f(lo) - goal).abs() {
                hi
            } else {
                lo
            }
        };
        let mmio = find(
            0,
            5000,
            &|m| {
                let mut q = p.clone();
                q.maple_mmio = m;
                run_mmio(&q, "sha256", 1024).cycles as f64 / c64
            },
            7.62,
        );
        let setup = find(
            0,
            100_000,
            &|d| {
                let mut q = p.clone();
                q.dma_setup = d;
                run_dma(&q, "sha256", 1024).cycles as f64 / c64
            },
            10.70,
        );
        println!("calibrated: mmio_cycles = {mmio}, dma_setup_cycles = {setup}");
        p.maple_mmio = mmio;
        p.dma_setup = setup;
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
            let c64 = run_cohort_fenced(&p, accel, n, 64.min(n), padded, check, fences);
            let cs = run_cohort_fenced(&p, accel, n, small, padded, check, fences);
            let m = run_mmio(&p, accel, n);
            let d = run_dma(&p, accel, n);
            let ipc =
                |o: &ccsim_experiments::cohort::Outcome| o.instructions as f64 / o.cycles as f64;
            println!(
                "{accel} n={n}: cohort64 {} small {} mmio {} dma {} | vs mmio {:.2} vs dma {:.2} batching {:.2} | ipc x mmio {:.2} x dma {:.2} | instructions / cohort64's: mmio {:.2} dma {:.2}",
                c64.cycles, cs.cycles, m.cycles, d.cycles,
                m.cycles as f64 / c64.cycles as f64, d.cycles as f64 / c64.cycles as f64, cs.cycles as f64 / c64.cycles as f64,
                ipc(&c64) / ipc(&m), ipc(&c64) / ipc(&d),
                m.instructions as f64 / c64.instructions as f64, d.instructions as f64 / c64.instructions as f64
            );
            let st = |k: &str| c64.stats.get(k).copied().unwrap_or(0.0);
            println!(
                "  batch 64: out-queue index loads {} misses {} | WCM publishes {} missed {} | read-index stores missed {} | ipc {:.3} mmio {:.3} dma {:.3} | retired {} (spin {}) mmio {} dma {}",
                st("core0.out_queue.index_loads"), st("core0.out_queue.index_misses"),
                st("engine0.publishes"), st("engine0.publish_misses"), st("engine0.read_index_misses"),
                ipc(&c64), ipc(&m), ipc(&d),
                c64.instructions, st("core0.spin_retired"), m.instructions, d.instructions
            );
            let per_el = |o: &ccsim_experiments::cohort::Outcome, k: &str| {
                o.stats.get(k).copied().unwrap_or(0.0) / n as f64
            };
            for (label, o) in [("batch 64", &c64), ("small batch", &cs)] {
                println!(
                    "  {label}: line migrations per element: in index {:.3} in data {:.3} out index {:.3} out data {:.3}",
                    per_el(o, "lines.in_queue.index_migrations"),
                    per_el(o, "lines.in_queue.data_migrations"),
                    per_el(o, "lines.out_queue.index_migrations"),
                    per_el(o, "lines.out_queue.data_migrations"),
                );
            }
            // What the pointer updates cost, part by part, per word.
            for (label, o) in [("batch 64", &c64), ("small batch", &cs)] {
                let s = |k: &str| o.stats.get(k).copied().unwrap_or(0.0) / n as f64;
                println!(
                    "  {label} pointer-update parts per word: core fence {:.1}, core in-index stores {:.1} ({:.3}/word), core out-index stores {:.1}, core waiting {:.1} | RCM backoff {:.1} re-read {:.1} read-index stores {:.1} | WCM data {:.1} pointer {:.1} | total {:.1} cycles/word",
                    s("core0.fence_cycles"), s("core0.in_queue.index_store_cycles"), s("core0.in_queue.index_stores"),
                    s("core0.out_queue.index_store_cycles"), s("core0.wait_cycles"),
                    s("engine0.backoff_cycles"), s("engine0.reread_cycles"), s("engine0.read_index_cycles"),
                    s("engine0.wcm_data_cycles"), s("engine0.wcm_pointer_cycles"), o.cycles as f64 / n as f64,
                );
            }
            let rate = |o: &ccsim_experiments::cohort::Outcome| {
                let s = |k: &str| o.stats.get(k).copied().unwrap_or(0.0);
                (
                    s("core0.wait_cycles") / o.cycles as f64,
                    s("core0.wait_retired") / s("core0.wait_cycles").max(1.0),
                )
            };
            let (cw, cr) = rate(&c64);
            let (mw, mr) = rate(&m);
            let (dw, dr) = rate(&d);
            println!(
                "  waiting: share of cycles / instructions retired per waiting cycle: cohort {cw:.2} / {cr:.3}, mmio {mw:.2} / {mr:.4}, dma {dw:.2} / {dr:.4}"
            );
        }
    }
}
