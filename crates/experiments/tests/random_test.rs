//! A protocol that enters as data only (protocols/msi-dma.toml +
//! platforms/msi-dma.toml, no Rust of its own) runs in a timing simulation
//! under the random tester with online checks: no violation, every
//! operation done, and the reads and the final memory equal those of a
//! sequential reference that replays the writes in the order they took
//! effect.

use ccsim_coherence::agents::{LogEntry, TesterParams};
use ccsim_experiments::random_test::compare_with_reference;
use ccsim_kernel::prelude::*;
use ccsim_platform::{BuildOptions, Platform};

fn opts(seed: u64, ops: u64, lines: u64) -> BuildOptions {
    BuildOptions {
        seed,
        trace: TraceMode::Hash,
        checks: true,
        tester: Some(TesterParams {
            ops,
            lines,
            think: 0,
        }),
    }
}

/// Runs the random tester and checks everything; returns (ops done, rows
/// checked, trace hash).
fn run_and_check(p: &Platform, seed: u64, ops: u64, lines: u64) -> (u64, u64, String) {
    let mut s = p.build("random", opts(seed, ops, lines)).unwrap();
    s.sim.run();
    let c = s.checker.borrow();
    assert!(c.violations.is_empty(), "{:?}", c.violations);
    let n = s.protocol.agents.len();
    let mut done = 0;
    for a in 0..n {
        let ag = s.agent(a);
        assert!(
            ag.finished(),
            "{} did not finish",
            s.protocol.agents[a].name
        );
        assert!(ag.open_lines().is_empty(), "{:?}", ag.open_lines());
        done += ag.ops_done();
    }
    // The reads and the final memory image against the sequential
    // reference (the writes replayed in the order they took effect).
    drop(c);
    let (reads, mismatches) = compare_with_reference(&s, lines);
    assert!(reads > 0);
    assert_eq!(mismatches, 0);
    let c = s.checker.borrow();
    (done, c.checked, s.sim.trace_hash().unwrap())
}

#[test]
fn msi_dma_runs_under_the_random_tester_with_zero_violations() {
    let p = Platform::load("msi-dma").unwrap();
    let ops = 2_000;
    let (done, checked, _) = run_and_check(&p, 1, ops, 4);
    // Two caches and the DMA engine each complete every operation.
    assert_eq!(done, 3 * ops);
    assert!(checked > 3 * ops, "{checked}");
}

#[test]
fn many_seeds_and_contended_lines() {
    let p = Platform::load("msi-dma").unwrap();
    for seed in 0..8 {
        for lines in [1, 2, 16] {
            run_and_check(&p, seed, 300, lines);
        }
    }
}

#[test]
fn same_seed_same_trace() {
    let p = Platform::load("msi-dma").unwrap();
    let a = run_and_check(&p, 7, 500, 3);
    let b = run_and_check(&p, 7, 500, 3);
    assert_eq!(a, b);
    let c = run_and_check(&p, 8, 500, 3);
    assert_ne!(a.2, c.2);
}

#[test]
fn the_tester_exercises_the_protocol() {
    let p = Platform::load("msi-dma").unwrap();
    let mut s = p.build("random", opts(3, 2_000, 2)).unwrap();
    s.sim.run();
    let st = s.sim.stats();
    let get = |k: &str| match st.0.get(k) {
        Some(StatValue::Counter(n)) => *n,
        other => panic!("{k}: {other:?}"),
    };
    // Contention on two lines: the directory stalls requests, forwards
    // and invalidations happen, cache-to-cache data moves.
    assert!(
        get("system.dir.stalls") > 100,
        "{}",
        get("system.dir.stalls")
    );
    assert_eq!(get("system.cache0.ops"), 2_000);
    assert_eq!(get("system.dma.ops"), 2_000);
    assert!(get("system.xbar.forwarded") > 10_000);
    let log = &s.checker.borrow().log;
    let writers: std::collections::BTreeSet<u16> = log
        .iter()
        .filter_map(|e| match e {
            LogEntry::Write { agent, .. } => Some(*agent),
            _ => None,
        })
        .collect();
    // Both caches, the directory (DMA writes land in memory) write.
    assert_eq!(writers.into_iter().collect::<Vec<_>>(), vec![0, 1, 2]);
}

/// A mutated copy of the shipped spec, and a platform that runs it.
fn mutated(from: &str, to: &str) -> Platform {
    // One directory per call: tests run in parallel.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("ccsim-systems-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let spec = std::fs::read_to_string(root.join("protocols/msi-dma.toml")).unwrap();
    assert!(spec.contains(from));
    let spec_path = dir.join("mutant.toml");
    std::fs::write(&spec_path, spec.replacen(from, to, 1)).unwrap();
    let plat = std::fs::read_to_string(root.join("platforms/msi-dma.toml"))
        .unwrap()
        .replace(
            "protocol = \"msi-dma\"",
            &format!("protocol = {:?}", spec_path.to_str().unwrap()),
        );
    let plat_path = dir.join("msi-dma-mutant.toml");
    std::fs::write(&plat_path, plat).unwrap();
    Platform::load(plat_path.to_str().unwrap()).unwrap()
}

fn first_violation(p: &Platform) -> String {
    for seed in 0..20 {
        let mut s = p.build("random", opts(seed, 500, 2)).unwrap();
        s.sim.run();
        let first = s.checker.borrow().violations.first().cloned();
        if let Some(v) = first {
            return v;
        }
    }
    panic!("no violation found in 20 seeds");
}

/// The first violation of the mutant `from` → `to` contains one of `want`.
fn caught(from: &str, to: &str, want: &[&str]) {
    let v = first_violation(&mutated(from, to));
    assert!(want.iter().any(|w| v.contains(w)), "{v}");
}

#[test]
fn the_online_checks_catch_a_sharer_that_ignores_an_invalidation() {
    // A sharer acknowledges an invalidation but keeps its copy.
    caught(
        "state = \"S\"\nevent = \"Inv\"\nnext = \"I\"",
        "state = \"S\"\nevent = \"Inv\"\nnext = \"S\"",
        &["single-writer-multiple-reader violated", "latest write"],
    );
}

#[test]
fn the_online_checks_catch_a_lost_write_back() {
    // The directory drops the owner's write-back data on a PutM.
    caught(
        "actions = [\"write_mem\", \"clear_owner\", \"send PutAck to req\"]",
        "actions = [\"clear_owner\", \"send PutAck to req\"]",
        &["latest write"],
    );
}

#[test]
fn the_sequential_reference_alone_catches_a_lost_write_back() {
    // Online checks off: only the replay of the log can see the damage.
    let p = mutated(
        "actions = [\"write_mem\", \"clear_owner\", \"send PutAck to req\"]",
        "actions = [\"clear_owner\", \"send PutAck to req\"]",
    );
    let caught = (0..20).any(|seed| {
        let mut o = opts(seed, 500, 2);
        o.checks = false;
        let mut s = p.build("random", o).unwrap();
        s.sim.run();
        assert!(s.checker.borrow().violations.is_empty());
        compare_with_reference(&s, 2).1 > 0
    });
    assert!(
        caught,
        "no seed's reads or final memory differed from the reference"
    );
}

/// The random tester on the Enzian agents (eci-dc on the LLC and the DC),
/// through the workload a user runs (`ccsim simulate enzian --system ...`).
mod enzian {
    use ccsim_experiments::{run_point, PointResult, RunError};
    use ccsim_kernel::prelude::*;
    use ccsim_platform::Platform;

    /// `ops` random core operations on `lines` lines of `system`.
    fn random_test(
        p: &Platform,
        system: &str,
        ops: f64,
        lines: i64,
        seed: u64,
    ) -> Result<PointResult, RunError> {
        let params = Params::new()
            .with("system", ParamValue::Str(system.into()), "test")
            .with("lines", ParamValue::Int(lines), "test");
        run_point("random_test", p, "ops", ops, &params, seed, false)
    }

    #[test]
    fn eci_dc_runs_100k_random_operations_with_zero_violations() {
        let p = Platform::load("enzian").unwrap();
        let r = random_test(&p, "dc_bram", 100_000.0, 8, 1).unwrap();
        // The core's 100,000 and the application's 10,000 sequences.
        assert!(r.metrics["ops"] >= 110_000.0, "{:?}", r.metrics);
        assert_eq!(r.metrics["violations"], 0.0);
        assert_eq!(r.metrics["reference_mismatches"], 0.0);
        assert!(r.metrics["reads"] > 30_000.0);
        assert!(r.metrics["rows_checked"] > 100_000.0);
    }

    #[test]
    fn the_same_seed_gives_the_same_run() {
        let p = Platform::load("enzian").unwrap();
        let run = |seed| {
            random_test(&p, "dc_ddr", 3_000.0, 4, seed)
                .unwrap()
                .trace_hash
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn it_catches_a_sharer_that_ignores_an_invalidation() {
        // The LLC acknowledges the DC's SINV (a clean-invalidate) but keeps
        // its Shared copy.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let spec = std::fs::read_to_string(root.join("protocols/eci-dc.toml")).unwrap();
        let (from, to) = (
            "state = \"S\"\nevent = \"SINV\"\nnext = \"I\"",
            "state = \"S\"\nevent = \"SINV\"\nnext = \"S\"",
        );
        assert!(spec.contains(from));
        let dir = std::env::temp_dir().join(format!("ccsim-eci-mutant-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec_path = dir.join("eci-dc-mutant.toml");
        std::fs::write(&spec_path, spec.replacen(from, to, 1)).unwrap();
        let text = ccsim_platform::shipped_text("platform", "enzian")
            .unwrap()
            .replace(
                "protocol = \"eci-dc\"",
                &format!("protocol = {:?}", spec_path.to_str().unwrap()),
            );
        let p = Platform::from_toml_str("mutant.toml", &text, &ccsim_platform::registry()).unwrap();
        // Within the default budget of one run.
        match random_test(&p, "dc_bram", 100_000.0, 8, 1) {
            Err(RunError::Violation { message }) => assert!(
                message.contains("coherence check failed")
                    || message.contains("sequential reference"),
                "{message}"
            ),
            other => panic!("the mutant was not caught: {:?}", other.map(|r| r.metrics)),
        }
    }

    #[test]
    fn both_homes_on_shared_links_run_100k_random_operations_with_zero_violations() {
        // eci-dc and eci-cc behind the muxes: all four agents at once.
        let p = Platform::load("enzian").unwrap();
        let r = random_test(&p, "shared", BUDGET, 4, 1).unwrap();
        // The LLC's core, the DC's application sequences (one per ten core
        // operations), the home's core and the CC's device.
        assert!(r.metrics["ops"] >= 3.1 * BUDGET, "{:?}", r.metrics);
        assert_eq!(r.metrics["violations"], 0.0);
        assert_eq!(r.metrics["reference_mismatches"], 0.0);
        // Both protocols crossed the muxes.
        for side in ["cpu_mux", "fpga_mux"] {
            for k in ["fpga_homed", "cpu_homed"] {
                let n = r.stats[&format!("system.{side}.{k}")];
                assert!(n > 10_000.0, "{side}.{k}: {n}");
            }
        }
    }

    /// The default budget: 10^5 operations of each agent that issues them.
    const BUDGET: f64 = 100_000.0;

    #[test]
    fn eci_cc_runs_100k_random_operations_per_agent_with_zero_violations() {
        let p = Platform::load("enzian").unwrap();
        let r = random_test(&p, "cpu_homed", BUDGET, 4, 1).unwrap();
        // The home's core and the CC's device each complete every one.
        assert_eq!(r.metrics["ops"], 2.0 * BUDGET, "{:?}", r.metrics);
        assert_eq!(r.metrics["violations"], 0.0);
        assert_eq!(r.metrics["reference_mismatches"], 0.0);
        assert!(r.metrics["reads"] > 0.4 * BUDGET, "{:?}", r.metrics);
        assert!(r.metrics["rows_checked"] > BUDGET);
        // The device's stores meet lines it holds writable and lines it
        // does not (refused by the table: LCL_NACK).
        for k in ["stores_refused", "stores_taken"] {
            assert!(r.stats[&format!("random_test.cc.{k}")] > 1000.0, "{k}");
        }
    }

    #[test]
    fn invocation_runs_100k_random_operations_with_zero_violations() {
        let p = Platform::load("enzian").unwrap();
        let r = random_test(&p, "invocation", BUDGET, 4, 1).unwrap();
        // The core's operations, and the device's answers and fetches.
        assert!(r.metrics["ops"] > BUDGET, "{:?}", r.metrics);
        assert_eq!(r.metrics["violations"], 0.0);
        assert_eq!(r.metrics["reference_mismatches"], 0.0);
        assert!(r.metrics["rows_checked"] > BUDGET);
        // Every kind of answer, the device's writes and its fetches of
        // another line happened.
        for k in ["grant_e", "grant_s", "nrdy", "writes", "fetches"] {
            assert!(
                r.stats[&format!("random_test.device.{k}")] > 500.0,
                "{k}: {:?}",
                r.stats
            );
        }
    }

    #[test]
    fn the_eci_cc_and_invocation_runs_replay_from_their_seed() {
        let p = Platform::load("enzian").unwrap();
        for system in ["cpu_homed", "invocation"] {
            let run = |seed| {
                random_test(&p, system, 3_000.0, 4, seed)
                    .unwrap()
                    .trace_hash
            };
            assert_eq!(run(5), run(5), "{system}");
            assert_ne!(run(5), run(6), "{system}");
        }
    }

    #[test]
    fn invocation_with_lines_on_one_dcu_deadlocks_and_the_tester_says_where() {
        // invocation-shared-dcu: `ccsim protocol check` finds the deadlock
        // exhaustively; the random tester finds it in a timing run.
        let p = Platform::load("enzian").unwrap();
        match random_test(&p, "invocation_shared_dcu", BUDGET, 4, 1) {
            Err(RunError::Violation { message }) => {
                // The watchdog's report: the held read keeps the DCU, the
                // device's clean-invalidate of the other line waits on it.
                assert!(message.starts_with("watchdog: op"), "{message}");
                assert!(message.contains("port=Pending"), "{message}");
                assert!(
                    message.contains("port=WClinv; pending messages: [LCL_CLINV]"),
                    "{message}"
                );
            }
            other => panic!("no deadlock: {:?}", other.map(|r| r.metrics)),
        }
        // The same device on separate DCUs (the `invocation` system) has
        // none: the DCU sharing is the cause.
        random_test(&p, "invocation", 2_000.0, 4, 1).unwrap();
    }

    /// The shipped enzian platform whose systems run a copy of
    /// `protocols/{spec}.toml` with `from` replaced by `to`.
    pub(super) fn mutant_platform(spec: &str, from: &str, to: &str) -> Platform {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let text = std::fs::read_to_string(root.join(format!("protocols/{spec}.toml"))).unwrap();
        assert!(text.contains(from), "{from}");
        let dir = std::env::temp_dir().join(format!("ccsim-{spec}-mutant-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{spec}-mutant.toml"));
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
        let platform = ccsim_platform::shipped_text("platform", "enzian")
            .unwrap()
            .replace(
                &format!("protocol = \"{spec}\""),
                &format!("protocol = {:?}", path.to_str().unwrap()),
            );
        Platform::from_toml_str("mutant.toml", &platform, &ccsim_platform::registry()).unwrap()
    }

    pub(super) fn caught_within_the_default_budget(p: &Platform, system: &str) -> String {
        match random_test(p, system, BUDGET, 4, 1) {
            Err(RunError::Violation { message }) => message,
            other => panic!("the mutant was not caught: {:?}", other.map(|r| r.metrics)),
        }
    }
}

/// Injected bugs (a row with a missing invalidation) in the eci-cc and
/// invocation tables, found by the random tester within its default budget.
mod enzian_mutants {
    use super::enzian::{caught_within_the_default_budget, mutant_platform};

    #[test]
    fn eci_cc_a_cc_that_keeps_its_copy_after_an_invalidation_is_caught() {
        // The CC acknowledges the home's SINV (HAKI) but stays Shared: a
        // later core store leaves it reading a stale copy.
        let p = mutant_platform(
            "eci-cc",
            "remote = \"S\"\nreceive = [\"SINV\"]\nactions = [[\"send HAKI\"]]\non_complete = []\nfinal_home = \"cc\"\nfinal_remote = \"I\"",
            "remote = \"S\"\nreceive = [\"SINV\"]\nactions = [[\"send HAKI\"]]\non_complete = []\nfinal_home = \"cc\"\nfinal_remote = \"S\"",
        );
        // Alone, and sharing the links with eci-dc (the `shared` system's
        // CC runs the same mutant table).
        for system in ["cpu_homed", "shared"] {
            let m = caught_within_the_default_budget(&p, system);
            assert!(
                m.contains("coherence check failed") || m.contains("sequential reference"),
                "{system}: {m}"
            );
        }
    }

    #[test]
    fn invocation_a_clean_invalidate_that_skips_the_sinv_is_caught() {
        // The DC takes the device's clean-invalidate of a line the CPU
        // holds Shared as done without invalidating it: the device's next
        // write leaves the CPU's copy stale.
        let p = mutant_platform(
            "invocation",
            "remote = \"S\"\nreceive = [\"LCL_CLINV\", \"HAKI\"]\nactions = [[\"send SINV\"], []]\non_complete = [\"send LCL_ACK\"]",
            "remote = \"S\"\nreceive = [\"LCL_CLINV\"]\nactions = [[\"send LCL_ACK\"]]\non_complete = []",
        );
        let m = caught_within_the_default_budget(&p, "invocation");
        assert!(
            m.contains("coherence check failed") || m.contains("sequential reference"),
            "{m}"
        );
    }
}

/// The random tester on CXL type-2 device memory with host/device bias
/// (`ccsim simulate cohet --system cxl_type2`): two host cores and the
/// device's cache contend for lines of the device's DDR5 memory, flipping
/// their bias both ways.
mod cohet_type2 {
    use ccsim_experiments::run_point;
    use ccsim_kernel::prelude::*;
    use ccsim_platform::Platform;

    #[test]
    fn cores_and_the_device_cache_share_device_memory_with_zero_violations() {
        let p = Platform::load("cohet").unwrap();
        let params = Params::new()
            .with("system", ParamValue::Str("cxl_type2".into()), "test")
            .with("lines", ParamValue::Int(2), "test");
        let r = run_point("random_test", &p, "ops", 5_000.0, &params, 1, false).unwrap();
        // core0, core1 and the device's cache.
        assert_eq!(r.metrics["ops"], 15_000.0, "{:?}", r.metrics);
        assert_eq!(r.metrics["violations"], 0.0);
        assert_eq!(r.metrics["reference_mismatches"], 0.0);
        assert!(r.metrics["reads"] > 1_000.0, "{:?}", r.metrics);
        // The bias flipped both ways: the device's DRAM served the host
        // (MemRd) and the device (DevRd in device bias).
        assert!(r.stats["system.dcoh.rows"] > 1_000.0, "{:?}", r.stats);
    }
}
