//! The device side of PCIe Address Translation Services: the CCIX
//! accelerator's ATS switch with its Address Translation Cache (ATC), and
//! the request/completion round trip over PCIe VC0 to the host IOMMU
//! ([`crate::smmu::Smmu`]).
//!
//! CCIX §III-D: the System Cache "checks the ATC for the virtual-to-physical
//! mapping. If the SC does not find a valid translation in the ATC (i.e.,
//! ATC miss), it requests the translation from the host using the PCIe ATS
//! feature via VC0." The switch here serves the accelerator's requests in
//! order, one translation miss at a time:
//!
//! ```text
//!  request (va) ─► ATC lookup (lookup_ns) ─hit──────────────────────────────► PA
//!                       └miss─► miss handling (miss_ns) ─► Translation Request (MRd-type TLP, 4 DW)
//!                               ─► VC0 one way ─► SMMU: TLB (tlb_ns) │ walk (walk_read_ns × levels)
//!                               ◄─ VC0 one way ◄─ Translation Completion (CplD, 8 B) ◄┘
//!                               ─► ATC fill ─► PA
//! ```
//!
//! The round trip "captured at the ATS Switch" (CCIX §IV Exp. 2, ≈ 617 ns)
//! is the time from the request TLP leaving to the completion arriving:
//! both TLPs' serialization on the link ([`crate::tlp::LinkConfig`]), two
//! one-way traversals of VC0 and the SMMU's answer. `miss_ns` is the rest
//! of an ATC miss (the text's "the ATC itself appears to take (2453 − 617
//! − 700 ≈ 1136 ns) for its operation"), which the vendor's black box does
//! not break down.
//!
//! [`eq1_latency_ns`] is the paper's Eq. 1, an analytic cross-check that
//! workloads report beside the simulated latency (never to produce it).

use ccsim_kernel::prelude::*;

use crate::smmu::{Smmu, Translation, TranslationCache};
use crate::tlp::{LinkConfig, TlpKind};
use crate::util::ns_to_ps;

/// Bytes of one translation in a Translation Completion (PCIe 6.0
/// §10.2.3: a 64-bit translated address with its S, N, U, W, R bits).
pub const TRANSLATION_BYTES: u32 = 8;

/// The declaration of `ats_switch`.
pub static ATS_SWITCH: ComponentSpec = ComponentSpec {
    type_name: "ats_switch",
    description: "A CCIX accelerator's ATS switch: an Address Translation Cache (LRU, one entry per page of any size) in front of ATS translation requests over PCIe VC0 to the host IOMMU, serving requests in order, one miss at a time. In a run (ccix_ctg) it sends its Translation Requests on its io port over the system's ccix_vc_link (VC0); vc0_one_way_ns, generation and lanes then belong to that link and only the analytic paths (Eq. 1, ccix-vc-sharing) read them.",
    params: &[
        ParamSpec { name: "atc_entries", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "entries", range: ParamRange::between(1.0, 1_048_576.0), from: "assumed", description: "ATC entries (fully associative, LRU)." },
        ParamSpec { name: "lookup_ns", kind: ParamKind::Float, default: ParamDefault::Float(8.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "An ATC lookup, hit or miss." },
        ParamSpec { name: "miss_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: none", description: "The ATC's own handling of a miss, beyond the ATS round trip." },
        ParamSpec { name: "vc0_one_way_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: none", description: "One way between the ATS switch and the host IOMMU over PCIe VC0 (controller, link, root complex), beside the TLP's serialization." },
        ParamSpec { name: "generation", kind: ParamKind::Int, default: ParamDefault::Int(3), unit: "", range: ParamRange::between(1.0, 6.0), from: "assumed", description: "PCIe generation of the link carrying VC0 (TLP serialization)." },
        ParamSpec { name: "lanes", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "lanes", range: ParamRange::between(1.0, 32.0), from: "assumed", description: "Lanes of that link." },
    ],
    ports: &[PortSpec { name: "io", description: "PCIe VC0 towards the host IOMMU: Translation Requests out, Translation Completions in.", required: false }],
    stats: &[],
    check: None,
};

/// How one request's translation went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TranslationTiming {
    /// The translation used.
    pub translation: Translation,
    /// When the physical address is known (the request may go on).
    pub ready: Tick,
    /// Whether the ATC held it.
    pub atc_hit: bool,
    /// The ATS round trip at the switch (request out to completion in),
    /// 0 on an ATC hit.
    pub ats_round_trip: Tick,
    /// Whether the SMMU's TLB held it (on an ATC miss).
    pub smmu_tlb_hit: bool,
}

/// The ATS switch and the SMMU it asks.
#[derive(Debug, Clone)]
pub struct AtsSwitch {
    /// The ATC.
    pub atc: TranslationCache,
    /// The host IOMMU.
    pub smmu: Smmu,
    lookup: Tick,
    miss: Tick,
    one_way: Tick,
    request_wire: Tick,
    completion_wire: Tick,
    /// When the switch can take the next request (in order, one miss at a
    /// time).
    free: Tick,
}

impl AtsSwitch {
    /// A switch with the `ats_switch` parameters `p` in front of `smmu`.
    pub fn new(p: &Params, smmu: Smmu) -> Result<AtsSwitch, String> {
        let generation =
            crate::tlp::Generation::from_number(p.int("generation")).ok_or_else(|| {
                format!(
                    "generation = {}: not a PCIe generation",
                    p.int("generation")
                )
            })?;
        let link = LinkConfig::new(generation, p.uint("lanes") as u32);
        if let Some(problem) = link.problems().first() {
            return Err(problem.clone());
        }
        let wire = |kind, payload| link.serialization_ps(link.tlp_wire_bytes(kind, payload, true));
        Ok(AtsSwitch {
            atc: TranslationCache::new(p.uint("atc_entries") as usize),
            smmu,
            lookup: ns_to_ps(p.float("lookup_ns")),
            miss: ns_to_ps(p.float("miss_ns")),
            one_way: ns_to_ps(p.float("vc0_one_way_ns")),
            // A Translation Request is a memory-read-format TLP (4 DW
            // header, no data); its completion a CplD with one translation.
            request_wire: wire(TlpKind::MemRead, 0),
            completion_wire: wire(TlpKind::CplD, TRANSLATION_BYTES),
            free: 0,
        })
    }

    /// Translates `va` for a request arriving at `at`.
    pub fn translate(&mut self, va: u64, at: Tick) -> Result<TranslationTiming, String> {
        let start = at.max(self.free);
        let looked = start + self.lookup;
        if let Some((t, usable)) = self.atc.lookup(va) {
            let ready = looked.max(usable);
            self.free = looked;
            return Ok(TranslationTiming {
                translation: t,
                ready,
                atc_hit: true,
                ats_round_trip: 0,
                smmu_tlb_hit: false,
            });
        }
        let sent = looked + self.miss;
        let at_smmu = sent + self.request_wire + self.one_way;
        let answer = self.smmu.translate(va, at_smmu)?;
        let back = answer.done + self.completion_wire + self.one_way;
        self.atc.insert(answer.translation, back);
        self.free = back;
        Ok(TranslationTiming {
            translation: answer.translation,
            ready: back,
            atc_hit: false,
            ats_round_trip: back - sent,
            smmu_tlb_hit: answer.tlb_hit,
        })
    }

    /// Empties the ATC (an ATS Invalidate Request for every page, as the
    /// host sends when it unmaps; PCIe 6.0 §10.3), keeping its counts.
    pub fn invalidate_atc(&mut self) {
        self.atc.clear();
    }

    /// Puts `va`'s translation in the ATC at no cost (a warm ATC: "the
    /// translation of the address is already existing in the ATC", CCIX
    /// §IV Exp. 1); the SMMU's TLB is not touched.
    pub fn prefill(&mut self, va: u64) -> Result<(), String> {
        let tables = self.smmu.tables();
        let w = crate::smmu::walk(tables.memory(), tables.root(), va)?;
        self.atc.insert(Translation::of(va, &w), 0);
        Ok(())
    }
}

/// CCIX Eq. 1, the average latency of a CCIX transaction:
///
/// ```text
/// Latency = P_ATC-hit × Latency_ATC + (1 − P_ATC-hit) × Latency_ATS
///         + P_cache-hit × Latency_r/w-local + (1 − P_cache-hit) × Latency_r/w-remote
/// Latency_r/w-remote = Latency_CCIX + Latency_HA
/// ```
///
/// ```
/// // Every translation hits, every line misses: the remote access plus the lookup.
/// let l = ccsim_pcie::ats::eq1_latency_ns(1.0, 8.0, 1761.0, 0.0, 100.0, 300.0, 392.0);
/// assert_eq!(l, 8.0 + 692.0);
/// ```
pub fn eq1_latency_ns(
    p_atc_hit: f64,
    latency_atc: f64,
    latency_ats: f64,
    p_cache_hit: f64,
    latency_local: f64,
    latency_ccix: f64,
    latency_ha: f64,
) -> f64 {
    let remote = latency_ccix + latency_ha;
    p_atc_hit * latency_atc
        + (1.0 - p_atc_hit) * latency_ats
        + p_cache_hit * latency_local
        + (1.0 - p_cache_hit) * remote
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smmu::{PageSize, TranslationTables, GRANULE};

    const VA: u64 = 0x0000_5500_0000_0000;
    const PA: u64 = 0x0000_0009_0000_0000;

    fn switch(atc_entries: i64, prefetch: i64) -> AtsSwitch {
        let mut t = TranslationTables::new(0x1000_0000);
        for i in 0..8 {
            t.map(VA + i * GRANULE, PA + i * 3 * GRANULE, PageSize::K4)
                .unwrap();
        }
        t.map(VA + (1 << 30), PA + (1 << 30), PageSize::M2).unwrap();
        let sp = Params::new()
            .with("tlb_entries", ParamValue::Int(64), "test")
            .with("tlb_ns", ParamValue::Float(10.0), "test")
            .with("walk_read_ns", ParamValue::Float(100.0), "test")
            .with("prefetch_pages", ParamValue::Int(prefetch), "test");
        let ap = Params::new()
            .with("atc_entries", ParamValue::Int(atc_entries), "test")
            .with("lookup_ns", ParamValue::Float(8.0), "test")
            .with("miss_ns", ParamValue::Float(1000.0), "test")
            .with("vc0_one_way_ns", ParamValue::Float(50.0), "test")
            .with("generation", ParamValue::Int(3), "test")
            .with("lanes", ParamValue::Int(16), "test");
        AtsSwitch::new(&ap, Smmu::new(&sp, t)).unwrap()
    }

    #[test]
    fn a_miss_is_a_round_trip_and_the_atc_then_hits() {
        let mut s = switch(4, 0);
        let a = s.translate(VA + 0x40, 0).unwrap();
        assert!(!a.atc_hit && !a.smmu_tlb_hit);
        assert_eq!(a.translation.apply(VA + 0x40), PA + 0x40);
        // Round trip: two one-way trips, the walk (4 reads), the TLB lookup
        // and two TLPs' serialization at Gen3 x16 (24 B and 28 B on the
        // wire: a few ns each).
        let fixed = ns_to_ps(2.0 * 50.0 + 10.0 + 400.0);
        assert!(a.ats_round_trip > fixed && a.ats_round_trip < fixed + ns_to_ps(10.0));
        assert_eq!(a.ready, ns_to_ps(8.0 + 1000.0) + a.ats_round_trip);
        let b = s.translate(VA + 0x80, a.ready).unwrap();
        assert!(b.atc_hit);
        assert_eq!(b.ready, a.ready + ns_to_ps(8.0));
        assert_eq!((s.atc.hits, s.atc.misses), (1, 1));
    }

    #[test]
    fn atc_evicts_least_recently_used() {
        let mut s = switch(2, 0);
        let mut t = 0;
        for page in [0, 1, 0, 2] {
            t = s.translate(VA + page * GRANULE, t).unwrap().ready;
        }
        // Page 1 was the least recently used when page 2 came in.
        assert!(!s.translate(VA + GRANULE, t).unwrap().atc_hit);
        assert_eq!(s.atc.len(), 2);
        // A 2 MiB translation covers its whole page with one entry.
        let mut s = switch(1, 0);
        let a = s.translate(VA + (1 << 30), 0).unwrap();
        assert!(
            s.translate(VA + (1 << 30) + 0x1F_F000, a.ready)
                .unwrap()
                .atc_hit
        );
    }

    #[test]
    fn pre_translation_hides_the_second_pages_walk() {
        let mut with = switch(4, 1);
        let mut without = switch(4, 0);
        let cross = |s: &mut AtsSwitch| {
            let a = s.translate(VA, 0).unwrap();
            // The second page, some time later (sequential accesses).
            let b = s
                .translate(VA + GRANULE, a.ready + ns_to_ps(500.0))
                .unwrap();
            (a, b)
        };
        let (a1, b1) = cross(&mut with);
        let (a0, b0) = cross(&mut without);
        assert_eq!(
            a1.ats_round_trip, a0.ats_round_trip,
            "the first page walks either way"
        );
        assert!(b1.smmu_tlb_hit && !b0.smmu_tlb_hit);
        // The walk (4 descriptor reads) is gone from the second page's trip.
        assert_eq!(b0.ats_round_trip - b1.ats_round_trip, ns_to_ps(400.0));
        assert_eq!(b1.translation.apply(VA + GRANULE), PA + 3 * GRANULE);
    }

    #[test]
    fn prefill_makes_a_warm_atc() {
        let mut s = switch(4, 0);
        s.prefill(VA + 5 * GRANULE).unwrap();
        let a = s.translate(VA + 5 * GRANULE + 1, 0).unwrap();
        assert!(a.atc_hit);
        assert_eq!(
            a.translation.apply(VA + 5 * GRANULE + 1),
            PA + 15 * GRANULE + 1
        );
        assert_eq!(s.smmu.walks, 0);
        assert!(s.prefill(VA + 100 * GRANULE).is_err(), "unmapped");
    }

    #[test]
    fn eq1_weights_its_terms() {
        let l = eq1_latency_ns(0.0, 8.0, 1761.0, 0.0, 100.0, 300.0, 392.0);
        assert_eq!(l, 1761.0 + 692.0);
        let l = eq1_latency_ns(0.5, 8.0, 1008.0, 1.0, 100.0, 300.0, 392.0);
        assert_eq!(l, 4.0 + 504.0 + 100.0);
    }
}
