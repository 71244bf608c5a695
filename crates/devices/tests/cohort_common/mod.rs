//! What the Cohort SoC tests share.

use ccsim_devices::cohort::Timing;

/// P-Mesh transaction costs in cycles, as the experiments crate measures
/// them on the verified `protocols/pmesh.toml` (the module doc's example).
pub fn timing() -> Timing {
    Timing {
        load_hit: 1,
        l15_hit: 1,
        load_miss: 34,
        load_fwd: 68,
        load_fwd_clean: 52,
        store_miss: 34,
        store_inv: 52,
        store_inv_extra: 2,
        store_fwd: 68,
        store_fwd_clean: 52,
        noc_one_way: 3,
    }
}
