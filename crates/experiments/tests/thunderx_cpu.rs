//! The `thunderx_cpu` instance of the Enzian platform (48 cores with L1s and
//! write buffers over the shared LLC, TADs, XOR scrambler) runs a shared
//! counter and a message hand-off across cores over the ECI DC, with the
//! online checks on.

use ccsim_coherence::initial_line;
use ccsim_eci::cpu::{AtomicOp, CpuOp};
use ccsim_eci::system::{CoherentParams, CoherentSystem, HomeMemory};
use ccsim_platform::Platform;

#[test]
fn thunderx_cpu_runs_several_cores_over_the_dc() {
    let enzian = Platform::load("enzian").unwrap();
    let get = |i: &str| enzian.component(i).unwrap().params.clone();
    let p = CoherentParams {
        cpu: get("thunderx_cpu"),
        link: get("eci"),
        dc: get("dc"),
        bram: get("dc_bram"),
        ..Default::default()
    };
    // Cores 0..8 each add 1 to a counter 10 times and write their own line,
    // fenced; core 8 reads every line afterwards (a DMB-ordered hand-off).
    let mut programs: Vec<Vec<CpuOp>> = (0..8u64)
        .map(|k| {
            let mut v: Vec<CpuOp> = (0..10)
                .map(|_| CpuOp::Atomic {
                    line: 1000,
                    word: 0,
                    op: AtomicOp::FetchAdd(1),
                })
                .collect();
            v.push(CpuOp::Store {
                line: 2000 + k,
                word: 0,
                value: k + 1,
            });
            v.push(CpuOp::Fence);
            v
        })
        .collect();
    programs.push(
        // mshrs = 8: the fence keeps the loads behind the wait.
        [CpuOp::Wait { ps: 50_000_000 }, CpuOp::Fence]
            .into_iter()
            .chain((0..8).map(|k| CpuOp::Load { line: 2000 + k }))
            .collect(),
    );
    let mut sys = CoherentSystem::build_cores(
        &p,
        HomeMemory::Bram,
        programs,
        vec![],
        1,
        ccsim_kernel::prelude::TraceMode::Hash,
    )
    .unwrap();
    assert_eq!(sys.cpu().cores(), 48);
    sys.run().unwrap();
    let cpu = sys.cpu();
    let w0 = |l: &[u8; 128]| u64::from_le_bytes(l[0..8].try_into().unwrap());
    let counter = cpu.line(1000).1.unwrap();
    assert_eq!(
        w0(&counter),
        w0(&initial_line(1000)).wrapping_add(80),
        "no increment lost"
    );
    let reads: Vec<_> = cpu
        .completed
        .iter()
        .filter(|c| c.core == 8 && c.op >= 2)
        .collect();
    assert_eq!(reads.len(), 8);
    for c in reads {
        assert!(c.issued >= 50_000_000, "the fence held the loads back");
        let k = c.op as u64 - 2;
        assert_eq!(w0(&c.data), k + 1, "core 8 sees core {k}'s store");
    }
    assert!(sys.checker.borrow().violations.is_empty());
}
