//! `prefetch_read` (CCKit §5.5, Fig. 8) on the shipped Enzian platform:
//! every load's bytes are checked inside the run; here the prefetcher's
//! gain while its units suffice, its loss when they do not, and bad input.

use ccsim_experiments::run_point;
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

fn gibps(prefetcher: &str, clients: f64) -> f64 {
    let enzian = Platform::load("enzian").unwrap();
    let p = Params::new()
        .with("prefetcher", ParamValue::Str(prefetcher.into()), "test")
        .with(
            "lines_per_client",
            ParamValue::Int(2048),
            "test: 256 KiB per client",
        );
    run_point("prefetch_read", &enzian, "clients", clients, &p, 1, false)
        .unwrap_or_else(|e| panic!("{prefetcher} {clients}: {e}"))
        .metrics["gibps"]
}

#[test]
fn the_prefetcher_helps_up_to_four_clients_and_thrashes_at_eight() {
    for c in [1.0, 2.0, 4.0] {
        let (off, on) = (gibps("off", c), gibps("on", c));
        // A unit hit saves the DRAM's share of Table 2's 591 ns.
        assert!(
            on > 1.2 * off && on < 1.6 * off,
            "{c} clients: {off} -> {on}"
        );
    }
    // Without the prefetcher the clients scale (8 misses each in flight).
    assert!(gibps("off", 4.0) > 3.5 * gibps("off", 1.0));
    // Eight clients need 16 units for their current and next blocks.
    assert!(gibps("on", 8.0) < gibps("off", 8.0));
}

#[test]
fn bad_client_counts_are_errors_naming_them() {
    let enzian = Platform::load("enzian").unwrap();
    let p = Params::new();
    for (x, want) in [(0.0, "clients"), (1.5, "clients"), (64.0, "at most 48")] {
        let e = run_point("prefetch_read", &enzian, "clients", x, &p, 1, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{x}: {e}");
    }
}
