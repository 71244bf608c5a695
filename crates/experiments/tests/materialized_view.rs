//! `materialized_view` (CCKit §5.6, Fig. 9) on the shipped Enzian platform:
//! the run itself checks the view after every transaction; here the view
//! dumped by the run against a plain Rust group-by of the dumped rows (and
//! of the generator's rows), the text's claims, and bad input.

use std::collections::HashMap;

use ccsim_experiments::cckit_apps::materialized_view::tpch_orders;
use ccsim_experiments::{run_point, PointResult};
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

/// Small tables: TPC-H SF 0.001 (1,500 ORDERS rows).
fn small(p: Params) -> Params {
    p.with("scale_factor", ParamValue::Float(0.001), "test: 1,500 rows")
        .with("base_orders", ParamValue::Int(1000), "test")
}

fn run(updates: f64, p: &Params) -> PointResult {
    let enzian = Platform::load("enzian").unwrap();
    run_point(
        "materialized_view",
        &enzian,
        "updates",
        updates,
        p,
        1,
        false,
    )
    .unwrap_or_else(|e| panic!("{updates} updates: {e}"))
}

fn err(updates: f64, p: &Params) -> String {
    let enzian = Platform::load("enzian").unwrap();
    match run_point(
        "materialized_view",
        &enzian,
        "updates",
        updates,
        p,
        1,
        false,
    ) {
        Ok(_) => panic!("{updates} updates: expected an error"),
        Err(e) => e.to_string(),
    }
}

/// Pairs `[[a,b],...]` of one JSON array (the dump's format).
fn pairs(v: &serde_json::Value) -> Vec<(i64, i64)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_i64().unwrap(), p[1].as_i64().unwrap()))
        .collect()
}

/// The query, the straightforward way: a hash group-by, then sorted.
fn group_by(rows: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut sums: HashMap<i64, i64> = HashMap::new();
    for &(k, p) in rows {
        *sums.entry(k).or_default() += p;
    }
    let mut v: Vec<(i64, i64)> = sums.into_iter().collect();
    v.sort();
    v
}

#[test]
fn every_transactions_view_is_the_group_by_of_its_rows() {
    for maintenance in ["recompute", "incremental"] {
        let path = std::env::temp_dir().join(format!(
            "ccsim_mview_{maintenance}_{}.json",
            std::process::id()
        ));
        let p = small(Params::new())
            .with("maintenance", ParamValue::Str(maintenance.into()), "test")
            .with("transactions", ParamValue::Int(5), "test")
            .with("dump", ParamValue::Str(path.display().to_string()), "test");
        let r = run(13.0, &p);
        assert_eq!(r.stats["view.transactions"], 5.0);
        assert_eq!(r.stats["view.base_rows_final"], 1000.0 + 5.0 * 13.0);
        let dump: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        std::fs::remove_file(&path).ok();
        let txns = dump["transactions"].as_array().unwrap();
        assert_eq!(txns.len(), 5);
        let generated = tpch_orders(0.001, 1000 + 5 * 13);
        for (t, txn) in txns.iter().enumerate() {
            let rows = pairs(&txn["rows"]);
            assert_eq!(rows.len(), 1000 + 13 * (t + 1), "{maintenance} txn {t}");
            assert_eq!(rows[..], generated[..rows.len()], "{maintenance} txn {t}");
            assert_eq!(
                pairs(&txn["view"]),
                group_by(&rows),
                "{maintenance} txn {t}"
            );
        }
    }
}

#[test]
fn tpch_orders_are_real_rows() {
    let rows = tpch_orders(0.001, 1500);
    assert_eq!(rows.len(), 1500);
    // TPC-H: O_CUSTKEY in 1..=SF x 150,000, never a multiple of 3; prices positive.
    assert!(rows
        .iter()
        .all(|&(k, p)| (1..=150).contains(&k) && k % 3 != 0 && p > 0));
    assert_eq!(tpch_orders(0.001, 10), rows[..10]);
}

#[test]
fn recompute_time_grows_with_the_table_and_incremental_is_faster() {
    let base = |n: i64| {
        Params::new()
            .with("scale_factor", ParamValue::Float(0.01), "test")
            .with("base_orders", ParamValue::Int(n), "test")
            .with("transactions", ParamValue::Int(2), "test")
    };
    let t1 = run(8.0, &base(4000)).metrics["view_us"];
    let t2 = run(8.0, &base(8000)).metrics["view_us"];
    // The scan of the whole table dominates: about twice the time.
    assert!(t2 / t1 > 1.6 && t2 / t1 < 2.05, "{t1} -> {t2}");
    let inc = base(8000).with("maintenance", ParamValue::Str("incremental".into()), "test");
    let ti = run(8.0, &inc).metrics["view_us"];
    assert!(ti < 0.5 * t1, "incremental {ti} vs recompute {t1}");
    // The operator's throughput stays below the 19.2 GiB/s scan rate.
    let g = run(8.0, &base(8000)).metrics["gibps"];
    assert!(g > 10.0 && g < 19.2, "{g}");
}

#[test]
fn bad_inputs_are_errors_naming_them() {
    let p = small(Params::new());
    assert!(err(0.0, &p).contains("updates"));
    let too_many = small(Params::new()).with("base_orders", ParamValue::Int(1490), "test");
    let e = err(8.0, &too_many);
    assert!(e.contains("scale_factor 0.001 has 1500 ORDERS rows"), "{e}");
    let dump = small(Params::new()).with(
        "dump",
        ParamValue::Str("/nonexistent-dir/view.json".into()),
        "test",
    );
    assert!(err(1.0, &dump).contains("dump"));
}
