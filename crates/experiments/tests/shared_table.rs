//! `shared_table` (CCKit §5.4, Fig. 7) on the shipped Enzian platform, on a
//! small table: the counters (checked inside every run against both
//! threads' increments), the uncontended scan rate, the order of the two
//! homes under contention, and bad input.

use ccsim_experiments::run_point;
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

fn small(config: &str, rows: i64) -> Params {
    Params::new()
        .with("config", ParamValue::Str(config.into()), "test")
        .with("rows", ParamValue::Int(rows), "test: a small table")
        .with("passes", ParamValue::Int(1), "test")
        .with("iterations", ParamValue::Int(3), "test")
}

fn mrps(config: &str, fraction: f64) -> (f64, f64, f64) {
    let r = point(config, fraction);
    (
        r.metrics["mrps"],
        r.metrics["mrps_std"],
        r.stats["table.contender_increments"],
    )
}

#[test]
fn every_counter_holds_both_threads_increments_under_full_contention() {
    // The run fails if any row's counter differs from initial + scanner +
    // contender increments; here the contending thread increments every row.
    for config in ["dc_bram", "llc_ddr"] {
        let (m, _, inc) = mrps(config, 1.0);
        assert!(
            inc > 2048.0,
            "{config}: the contending thread made only {inc} increments"
        );
        assert!(m > 0.0);
    }
}

#[test]
fn uncontended_scan_runs_at_the_llc_hit_rate_on_both_homes() {
    // Warmed LLC, no contention: one atomic per llc.hit_ns (10 ns) plus the
    // issue cycle, about 100 Mrps, whatever the home.
    for config in ["dc_bram", "llc_ddr"] {
        let (m, std, inc) = mrps(config, 0.0);
        assert_eq!(inc, 0.0);
        assert!((m - 100.0).abs() < 5.0, "{config}: {m} Mrps");
        assert!(std < 1e-9, "{config}: no contention, no phase: std {std}");
    }
}

#[test]
fn contention_slows_the_scanner_and_more_so_through_the_dc() {
    let (fpga_q, _, _) = mrps("dc_bram", 0.25);
    let (fpga_all, _, _) = mrps("dc_bram", 1.0);
    let (cpu_q, _, _) = mrps("llc_ddr", 0.25);
    let (cpu_all, _, _) = mrps("llc_ddr", 1.0);
    // Monotone in the contended fraction.
    assert!(fpga_all < fpga_q && fpga_q < 100.0, "{fpga_q} {fpga_all}");
    assert!(cpu_all < cpu_q && cpu_q < 100.0, "{cpu_q} {cpu_all}");
    // Each contended row is a miss through the home: the DC's longer line
    // migration (Table 2: 454 vs 268 ns) puts CPU-FPGA below CPU-CPU.
    assert!(fpga_q < cpu_q && fpga_all < cpu_all);
    // Fully contended, a row costs about one miss through its home.
    assert!(
        1e3 / fpga_all > 454.0 && 1e3 / cpu_all > 268.0,
        "{fpga_all} {cpu_all}"
    );
}

#[test]
fn a_fraction_outside_zero_to_one_is_an_error_naming_it() {
    let enzian = Platform::load("enzian").unwrap();
    let e = run_point(
        "shared_table",
        &enzian,
        "contended_fraction",
        1.5,
        &small("dc_bram", 64),
        1,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("contended_fraction = 1.5: must lie in [0, 1]"),
        "{e}"
    );
    let e = run_point(
        "shared_table",
        &enzian,
        "rows",
        1.0,
        &small("dc_bram", 64),
        1,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("contended_fraction"), "{e}");
}

fn point(config: &str, fraction: f64) -> ccsim_experiments::PointResult {
    let enzian = Platform::load("enzian").unwrap();
    run_point(
        "shared_table",
        &enzian,
        "contended_fraction",
        fraction,
        &small(config, 2048),
        7,
        false,
    )
    .unwrap_or_else(|e| panic!("{config} at {fraction}: {e}"))
}

#[test]
fn each_contended_row_costs_the_scanner_one_migration_at_its_homes_miss_latency() {
    // The gap between the curves, measured where the paper puts it ("the
    // latency that CCKit adds to migrating a cache line across the
    // interconnect"): the contending thread laps the serial scanner, so
    // every row of its prefix has migrated to the home by the time the
    // scanner comes back, and that increment pays one miss through the
    // home (CCKit Table 2: 454 ns over ECI to DC+BRAM, 268 ns over CCPI)
    // plus any wait for the row's unlock; every other row is an LLC hit.
    for (config, table2_ns) in [("dc_bram", 454.0), ("llc_ddr", 268.0)] {
        let quarter = point(config, 0.25);
        let pct = quarter.stats["table.migrated_pct"];
        assert!(
            (pct - 25.0).abs() < 0.5,
            "{config}: {pct}% of rows migrated"
        );
        let kept = quarter.stats["table.kept_row_ns"];
        assert!((kept - 10.0).abs() < 0.5, "{config}: kept rows {kept} ns");
        let all = point(config, 1.0);
        assert!(all.stats["table.migrated_pct"] > 99.0, "{config}");
        let migration = all.stats["table.migration_ns"];
        assert!(
            migration > 0.98 * table2_ns && migration < 1.25 * table2_ns,
            "{config}: a migration costs {migration} ns (Table 2: {table2_ns})"
        );
        // One line in flight: a fully contended row costs its migration.
        let per_row_ns = 1e3 / all.metrics["mrps"];
        assert!(
            (per_row_ns / migration - 1.0).abs() < 0.05,
            "{config}: {per_row_ns} ns per row vs {migration} ns per migration"
        );
    }
}
