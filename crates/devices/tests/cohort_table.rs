//! The Cohort SoC's directory runs the verified P-Mesh table
//! (`cohort::pmesh_table`): one walk's messages and end states; the rows a
//! short SHA run takes, pinned and checked against the SoC's own counters;
//! and mutants of `protocols/pmesh.toml` that change or stop the SoC.

mod cohort_common;
use std::sync::Arc;

use ccsim_devices::accel::Accelerator;
use ccsim_devices::cohort::cache::Geometry;
use ccsim_devices::cohort::maple::Maple;
use ccsim_devices::cohort::pmesh_table::{PmeshTable, Walker};
use ccsim_devices::cohort::queue::{
    cohort_register, cohort_unregister, fifo_init, pop, publish_read, publish_write, push,
};
use ccsim_devices::cohort::{Access, Caches, Soc};
use cohort_common::timing;

const IN_VA: u64 = 0x10_0000_0000;
const OUT_VA: u64 = 0x20_0000_0000;

/// The row of the shipped spec the mutants change: a load of a line
/// another tile owns is forwarded to the owner.
const LOAD_FWD_ROW: &str = r#"{ state = "O", event = "LOAD_REQ", guard = "not_from_owner", next = "OS_A", actions = ["send LOAD_FWD to owner", "owner_to_sharers"] },"#;

/// The shipped spec with [`LOAD_FWD_ROW`] replaced by `row`.
fn mutant(row: &str) -> Arc<PmeshTable> {
    let text = ccsim_protocol::builtin_text("pmesh").expect("shipped");
    assert!(text.contains(LOAD_FWD_ROW), "the row is in the spec");
    let spec = ccsim_protocol::Spec::parse(&text.replace(LOAD_FWD_ROW, row), "mutant")
        .expect("the mutant parses");
    Arc::new(PmeshTable::new(&spec).expect("the mutant compiles"))
}

/// A short Cohort SHA-256 run (512 words, batch 8, queues of 64 and 32
/// elements) on small caches, so that L1.5 write-backs and L2 recalls
/// happen too; the directory runs `table` if given.
fn sha_run(table: Option<Arc<PmeshTable>>) -> Soc {
    let maple = Maple::new(0, Accelerator::sha256(1e6), 10, 8);
    let mut soc = Soc::new(timing(), 2, 8, vec![Accelerator::sha256(1e6)], 4, maple);
    let g = |bytes, ways, line| Geometry { bytes, ways, line };
    soc.world
        .set_caches(Caches {
            l1d: g(256, 2, 16),
            l15: g(512, 2, 16),
            l2: g(2048, 2, 64),
            slices: 2,
        })
        .unwrap();
    if let Some(t) = table {
        soc.world.set_pmesh_table(t);
    }
    let (n, batch) = (512u64, 8u64);
    let mut input = fifo_init(&mut soc, IN_VA, 64, batch, false, &[]);
    let mut output = fifo_init(&mut soc, OUT_VA, 32, batch / 2, false, &[]);
    cohort_register(&mut soc, 0, 0, &input, &output, 0, 32);
    for i in 0..n {
        push(
            &mut soc,
            0,
            &mut input,
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        );
        if input.pushed % batch == 0 {
            publish_write(&mut soc, 0, &mut input);
            while output.popped < input.pushed / 2 {
                pop(&mut soc, 0, &mut output);
            }
        }
    }
    publish_read(&mut soc, 0, &mut output);
    soc.fence(0);
    cohort_unregister(&mut soc, 0, 0);
    soc.run_to_end();
    soc
}

fn taken(w: &Walker, row: &str) -> u64 {
    w.taken()
        .iter()
        .find(|(r, _)| r == row)
        .map_or(0, |(_, k)| *k)
}

#[test]
fn a_load_of_a_modified_line_walks_the_forward_and_ends_shared() {
    let mut w = Walker::new(PmeshTable::builtin());
    let t = PmeshTable::builtin();
    let mut line = w.idle_line();
    // Tile 0 stores: I + STORE_REQ → O, DATA_ACK_M.
    let first = w.walk(0, t.store, &mut line);
    assert_eq!(first.count(t.msg.store_req), 1);
    assert_eq!(
        (line.l2, line.dir.owner, line.l15[0]),
        (t.l2_o, Some(0), t.l15_m)
    );
    // Tile 1 loads: LOAD_FWD to tile 0, which answers with the line.
    let walk = w.walk(1, t.load, &mut line);
    let sent: Vec<_> = (0..t.messages() as u16)
        .filter(|&m| walk.count(m) != 0)
        .map(|m| t.msg_name(m))
        .collect();
    assert_eq!(
        sent,
        ["LOAD_REQ", "LOAD_FWD", "LOAD_FWDACK_DATA", "DATA_ACK_S"]
    );
    assert_eq!((walk.forwarded, walk.lost), (0b1, 0));
    assert_eq!(
        (line.l2, line.dir.owner, line.dir.sharers),
        (t.l2_s, None, 0b11)
    );
    assert_eq!((line.l15[0], line.l15[1]), (t.l15_s, t.l15_s));
    // Tile 2 stores: INV_FWD to both sharers, each loses the line.
    let walk = w.walk(2, t.store, &mut line);
    assert_eq!(walk.count(t.msg.inv_fwd), 2);
    assert_eq!(walk.lost, 0b11);
    assert_eq!(
        (line.l2, line.dir.owner, line.dir.sharers),
        (t.l2_o, Some(2), 0)
    );
    assert_eq!(taken(&w, "l2 SM_A INV_FWDACK more_acks"), 1);
    assert_eq!(taken(&w, "l2 SM_A INV_FWDACK last_ack"), 1);
}

#[test]
fn a_short_sha_run_takes_these_table_rows() {
    let soc = sha_run(None);
    let w = soc.world.pmesh();
    let c = soc.world.counts;
    // The SoC's counters are the table's rows.
    assert_eq!(c.load_fwds, taken(w, "l2 O LOAD_REQ not_from_owner"));
    assert_eq!(c.store_fwds, taken(w, "l2 O STORE_REQ not_from_owner"));
    assert_eq!(c.store_invs, taken(w, "l2 S STORE_REQ other_sharers"));
    assert_eq!(c.l15_writebacks, taken(w, "l15 M evict"));
    let hits: u64 = ["S load", "E load", "M load", "E store", "M store"]
        .iter()
        .map(|r| taken(w, &format!("l15 {r}")))
        .sum();
    assert_eq!(c.hits, hits);
    // Every row taken, pinned (a change to the SoC's traffic or to the
    // table shows here).
    let got: Vec<String> = w.taken().iter().map(|(r, k)| format!("{r}: {k}")).collect();
    let want: Vec<String> = PINNED.iter().map(|s| s.to_string()).collect();
    assert_eq!(got, want, "{got:#?}");
}

/// The rows [`a_short_sha_run_takes_these_table_rows`] takes.
const PINNED: &[&str] = &[
    "l15 I load: 396",
    "l15 I store: 827",
    "l15 S load: 1",
    "l15 S store: 190",
    "l15 S evict: 74",
    "l15 S INV_FWD: 254",
    "l15 E load: 5",
    "l15 E store: 8",
    "l15 E evict: 23",
    "l15 E LOAD_FWD: 2",
    "l15 E STORE_FWD: 28",
    "l15 M load: 63",
    "l15 M store: 511",
    "l15 M evict: 239",
    "l15 M LOAD_FWD: 254",
    "l15 M STORE_FWD: 254",
    "l15 IS_D DATA_ACK_S: 343",
    "l15 IS_D DATA_ACK_E: 53",
    "l15 IM_D DATA_ACK_M: 827",
    "l15 SM_D DATA_ACK_M: 190",
    "l15 MI_A NODATA_ACK: 239",
    "l2 I LOAD_REQ: 41",
    "l2 I STORE_REQ: 50",
    "l2 S LOAD_REQ: 87",
    "l2 S STORE_REQ other_sharers: 250",
    "l2 O LOAD_REQ from_owner: 12",
    "l2 O LOAD_REQ not_from_owner: 256",
    "l2 O STORE_REQ from_owner: 448",
    "l2 O STORE_REQ not_from_owner: 269",
    "l2 O WB_REQ from_owner: 239",
    "l2 OS_A LOAD_FWDACK: 2",
    "l2 OS_A LOAD_FWDACK_DATA: 254",
    "l2 OM_A STORE_FWDACK: 17",
    "l2 OM_A STORE_FWDACK_DATA: 252",
    "l2 SM_A INV_FWDACK last_ack: 250",
];

#[test]
fn a_table_whose_owner_answers_no_load_changes_the_soc() {
    let shipped = sha_run(None);
    // The L2 answers a load of an owned line itself (from stale memory):
    // no LOAD_FWD, the owner is demoted without knowing it.
    let soc = sha_run(Some(mutant(
        r#"{ state = "O", event = "LOAD_REQ", guard = "not_from_owner", next = "S", actions = ["send DATA_ACK_S to req", "owner_to_sharers", "add_sharer"] },"#,
    )));
    assert!(shipped.world.counts.load_fwds > 0);
    assert_eq!(soc.world.counts.load_fwds, 0);
    // The mutant's row is the one taken instead.
    assert!(taken(soc.world.pmesh(), "l2 O LOAD_REQ not_from_owner") > 0);
    assert_eq!(taken(soc.world.pmesh(), "l2 OS_A LOAD_FWDACK_DATA"), 0);
    assert_ne!(soc.world.cores[0].now, shipped.world.cores[0].now);
}

#[test]
#[should_panic(expected = "no L2 transition in O on LOAD_REQ from tile")]
fn a_table_without_the_load_forward_stops_the_soc() {
    sha_run(Some(mutant("")));
}

/// The unit's prefetch is a non-caching LOAD_NOSHARE_REQ: it downgrades
/// the core that owns the line and leaves it S's only sharer (as
/// OpenPiton's L2 does). The core's next store is the table's `S +
/// STORE_REQ [no_other_sharers]`: an INV_FWD to the core itself, then the
/// line Modified. Once a gap (the walk stopped in SM_A), now table rows.
#[test]
fn a_store_by_the_one_sharer_the_unit_left_runs_the_self_invalidation_rows() {
    let maple = Maple::new(0, Accelerator::sha256(1e6), 10, 8);
    let mut soc = Soc::new(timing(), 2, 8, vec![], 4, maple);
    let unit = 2;
    let pa = 0x4000;
    let w = &mut soc.world;
    let t = w.coherent(0, pa, Access::Write, 0);
    let t = w.load_noshare(unit, pa, t);
    assert_eq!((w.state_of(0, pa), w.state_of(unit, pa)), ("S", "I"));
    assert_eq!(w.counts.load_fwds, 1);
    let invs = w.counts.store_invs;
    let end = w.coherent(0, pa, Access::Write, t);
    assert_eq!(w.state_of(0, pa), "EM");
    assert_eq!(w.counts.store_invs, invs + 1);
    assert_eq!(end - t, timing().store_inv);
    let p = w.pmesh();
    for (row, n) in [
        ("l15 I load_noshare", 1),
        ("l2 O LOAD_NOSHARE_REQ not_from_owner", 1),
        ("l15 M LOAD_FWD", 1),
        ("l2 ON_A LOAD_FWDACK_DATA", 1),
        ("l15 IN_D DATA_ACK_S", 1),
        ("l15 S store", 1),
        ("l2 S STORE_REQ no_other_sharers", 1),
        ("l15 SM_D INV_FWD", 1),
        ("l2 SM_A INV_FWDACK last_ack", 1),
        // The first store too (from I).
        ("l15 IM_D DATA_ACK_M", 2),
    ] {
        assert_eq!(taken(p, row), n, "{row}");
    }
}

/// The unit's result store is a non-caching SWAPWB_REQ: the L2 takes the
/// line from the core that owns it (STORE_FWD), writes it and keeps it;
/// no tile holds it after, the unit included.
#[test]
fn the_units_store_takes_the_line_to_the_l2_through_table_rows() {
    let maple = Maple::new(0, Accelerator::sha256(1e6), 10, 8);
    let mut soc = Soc::new(timing(), 2, 8, vec![], 4, maple);
    let unit = 2;
    let pa = 0x4000;
    let w = &mut soc.world;
    let t = w.coherent(0, pa, Access::Write, 0);
    let end = w.store_noshare(unit, pa, t);
    assert_eq!(end - t, timing().store_fwd);
    assert_eq!((w.state_of(0, pa), w.state_of(unit, pa)), ("I", "I"));
    assert!(!w.holds(0, pa));
    // From I the L2 answers itself.
    let again = w.store_noshare(unit, pa, end);
    assert_eq!(again - end, timing().store_miss);
    let p = w.pmesh();
    for (row, n) in [
        ("l15 I store_noshare", 2),
        ("l2 O SWAPWB_REQ not_from_owner", 1),
        ("l15 M STORE_FWD", 1),
        ("l2 WO_A STORE_FWDACK_DATA", 1),
        ("l2 I SWAPWB_REQ", 1),
        ("l15 IW_D NODATA_ACK", 2),
    ] {
        assert_eq!(taken(p, row), n, "{row}");
    }
}
