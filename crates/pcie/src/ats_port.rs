//! ATS inside a simulation: the accelerator's ATS switch ([`AtsPort`],
//! on the device side of a PCIe link's VC0) and the host IOMMU answering
//! it ([`SmmuPort`], on the host side), exchanging real Translation
//! Request and Translation Completion TLPs over whatever link joins their
//! `io` ports — in a CCIX system the shared [`crate::ccix_link`], where a
//! translation waits for the lanes behind the CCIX messages of the same
//! run (CCIX §III-D: on an ATC miss the System Cache "requests the
//! translation from the host using the PCIe ATS feature via VC0").
//!
//! ```text
//!  job (va, at) ─► ATC lookup (lookup_ns) ─hit─────────────────────────────────────────► done
//!                      └miss─► miss handling (miss_ns) ─► MRd-format TLP ─► link ─► SmmuPort:
//!                              TLB │ walk ─► CplD (8 B: translated address, S bit) ─► link ─► ATC fill ─► done
//! ```
//!
//! The switch serves its jobs in order, one miss at a time, as
//! [`crate::ats::AtsSwitch`] does without a link. A workload submits the
//! jobs before the run ([`AtsPort::submit`]); each finished translation
//! stops the run ([`Ctx::stop`]) so that the workload can release the
//! accesses waiting for it ([`AtsPort::take_done`]) and resume.
//!
//! **The completion's translation** is encoded as PCIe's Translation
//! Completion data entry (PCIe 6.0 §10.2.3): the translated address in
//! bits 63:12, R (bit 0) and W (bit 1) set, and the S bit (bit 11) for a
//! translation larger than 4 KiB, whose size is then given by the
//! lowest-order 0 bit of the address from bit 12 up (0 at bit 12: 8 KiB,
//! ones at 12 and 0 at 13: 16 KiB, and so on).

use std::collections::VecDeque;

use ccsim_kernel::prelude::*;

use crate::ats::{ATS_SWITCH, TRANSLATION_BYTES};
use crate::msg::{Msg, Tlp};
use crate::smmu::{PageSize, Smmu, Translation, TranslationCache, SMMU};
use crate::tlp::TlpKind;
use crate::util::ns_to_ps;

/// The port both components talk on.
const IO: usize = 0;

/// The R and W bits of a translation completion entry.
const READ_WRITE: u64 = 0b11;
/// The S (size) bit.
const SIZE_BIT: u64 = 1 << 11;

/// Encodes `t` as a Translation Completion data entry (see the module
/// docs).
pub fn encode_translation(t: &Translation) -> u64 {
    let bytes = t.size.bytes();
    if bytes == 4096 {
        return t.pa | READ_WRITE;
    }
    // Ones from bit 12 up to the bit below the size's top bit - 1.
    let k = bytes.trailing_zeros() as u64;
    let ones = (1u64 << (k - 1)) - (1u64 << 12);
    t.pa | ones | SIZE_BIT | READ_WRITE
}

/// Decodes a Translation Completion data entry for `va`.
pub fn decode_translation(va: u64, entry: u64) -> Result<Translation, String> {
    let bytes = if entry & SIZE_BIT == 0 {
        4096
    } else {
        1u64 << (13 + ((entry >> 12).trailing_ones() as u64))
    };
    let size = PageSize::ALL
        .iter()
        .map(|&(_, s)| s)
        .find(|s| s.bytes() == bytes)
        .ok_or_else(|| format!("a translation of {bytes} B is not a page size of this SMMU"))?;
    let mask = !(bytes - 1);
    Ok(Translation {
        va: va & mask,
        pa: entry & mask,
        size,
    })
}

/// One translation the switch is asked for.
#[derive(Debug, Clone, Copy)]
pub struct AtsJob {
    /// The workload's id, handed back when it is done.
    pub id: u64,
    /// The virtual address.
    pub va: u64,
    /// When the request reaches the switch.
    pub at: Tick,
    /// Empty the ATC first (the host's ATS Invalidate of every page).
    pub invalidate_first: bool,
    /// Put this translation in the ATC at no cost first (a warm ATC).
    pub prefill: Option<Translation>,
}

/// A finished translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtsDone {
    /// The job's id.
    pub id: u64,
    /// The translation.
    pub translation: Translation,
    /// When the physical address is known.
    pub ready: Tick,
    /// Whether the ATC held it.
    pub atc_hit: bool,
    /// Request TLP handed to the link to its completion's arrival (0 on a
    /// hit).
    pub ats_round_trip: Tick,
}

/// Wake tokens of the switch.
const START: u64 = 0;
const SEND: u64 = 1;
const DONE: u64 = 2;

/// The device's ATS switch as a component (spec `ats_switch`).
#[derive(Debug)]
pub struct AtsPort {
    /// The ATC.
    pub atc: TranslationCache,
    lookup: Tick,
    miss: Tick,
    jobs: VecDeque<AtsJob>,
    /// The job under way (one at a time) and when its request left.
    current: Option<(AtsJob, Tick)>,
    free: Tick,
    /// Finished, waiting for their ready time.
    finishing: VecDeque<AtsDone>,
    done: Vec<AtsDone>,
    tag: u16,
}

impl AtsPort {
    /// A switch with the `ats_switch` parameters `p` (its
    /// `vc0_one_way_ns` and link are the link's business here).
    pub fn new(p: &Params) -> AtsPort {
        AtsPort {
            atc: TranslationCache::new(p.uint("atc_entries") as usize),
            lookup: ns_to_ps(p.float("lookup_ns")),
            miss: ns_to_ps(p.float("miss_ns")),
            jobs: VecDeque::new(),
            current: None,
            free: 0,
            finishing: VecDeque::new(),
            done: Vec::new(),
            tag: 0,
        }
    }

    /// Queues `job` (jobs are served in the order submitted, none before
    /// its `at`). Submit before the run, in time order.
    pub fn submit(&mut self, job: AtsJob) {
        self.jobs.push_back(job);
    }

    /// The translations finished since the last call.
    pub fn take_done(&mut self) -> Vec<AtsDone> {
        std::mem::take(&mut self.done)
    }

    /// Whether jobs are left.
    pub fn busy(&self) -> bool {
        !self.jobs.is_empty() || self.current.is_some() || !self.finishing.is_empty()
    }

    fn schedule_next(&mut self, ctx: &mut Ctx<'_, Msg>) {
        if self.current.is_none() {
            if let Some(j) = self.jobs.front() {
                ctx.wake_at(j.at.max(self.free).max(ctx.now()), START);
            }
        }
    }

    fn finish(&mut self, d: AtsDone, ctx: &mut Ctx<'_, Msg>) {
        ctx.wake_at(d.ready.max(ctx.now()), DONE);
        self.finishing.push_back(d);
    }

    fn start(&mut self, ctx: &mut Ctx<'_, Msg>) {
        if self.current.is_some() {
            return;
        }
        let Some(job) = self.jobs.pop_front() else {
            return;
        };
        if job.invalidate_first {
            self.atc.clear();
        }
        if let Some(t) = job.prefill {
            self.atc.insert(t, 0);
        }
        let looked = ctx.now() + self.lookup;
        if let Some((t, usable)) = self.atc.lookup(job.va) {
            self.free = looked;
            self.finish(
                AtsDone {
                    id: job.id,
                    translation: t,
                    ready: looked.max(usable),
                    atc_hit: true,
                    ats_round_trip: 0,
                },
                ctx,
            );
            self.schedule_next(ctx);
            return;
        }
        let sent = looked + self.miss;
        self.current = Some((job, sent));
        ctx.wake_at(sent, SEND);
    }
}

impl Component<Msg> for AtsPort {
    fn spec(&self) -> &'static ComponentSpec {
        &ATS_SWITCH
    }
    fn init(&mut self, ctx: &mut Ctx<'_, Msg>) {
        self.schedule_next(ctx);
    }
    fn on_message(&mut self, _port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let Msg::Tlp(t) = msg else {
            panic!("ats_switch: {msg:?} is not a TLP (a wiring mistake)");
        };
        if t.kind != TlpKind::CplD || t.tag != self.tag {
            // Not the translation it waits for (another VC0 user's).
            return;
        }
        let (job, sent) = self.current.take().expect("a translation under way");
        let entry = u64::from_le_bytes(t.data[..8].try_into().expect("8 bytes"));
        let translation =
            decode_translation(job.va, entry).expect("the SMMU encodes a page size it has");
        let now = ctx.now();
        self.atc.insert(translation, now);
        self.free = now;
        self.finish(
            AtsDone {
                id: job.id,
                translation,
                ready: now,
                atc_hit: false,
                ats_round_trip: now - sent,
            },
            ctx,
        );
        self.schedule_next(ctx);
    }
    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Msg>) {
        match token {
            START => self.start(ctx),
            SEND => {
                let (job, _) = self.current.expect("a miss under way");
                self.tag = self.tag.wrapping_add(1);
                // A Translation Request has the format of a memory read
                // (4 DW header for a 64-bit address).
                let req = Tlp::read(job.va, TRANSLATION_BYTES, self.tag);
                ctx.send(IO, Msg::Tlp(Box::new(req)), 0, 0);
            }
            _ => {
                let now = ctx.now();
                while self.finishing.front().is_some_and(|d| d.ready <= now) {
                    let d = self.finishing.pop_front().expect("a finished one");
                    self.done.push(d);
                }
                // The workload releases what waited for it.
                ctx.stop();
            }
        }
    }
}

/// The host IOMMU as a component (spec `smmu`): answers each Translation
/// Request on its `io` port with a Translation Completion when its TLB or
/// walk has the translation.
#[derive(Debug)]
pub struct SmmuPort {
    /// The SMMU (TLB, walker, tables).
    pub smmu: Smmu,
    /// A request it could not translate (the run stops on it).
    pub fault: Option<String>,
}

impl SmmuPort {
    /// Answers with `smmu`.
    pub fn new(smmu: Smmu) -> SmmuPort {
        SmmuPort { smmu, fault: None }
    }
}

impl Component<Msg> for SmmuPort {
    fn spec(&self) -> &'static ComponentSpec {
        &SMMU
    }
    fn on_message(&mut self, _port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let Msg::Tlp(t) = msg else {
            panic!("smmu: {msg:?} is not a TLP (a wiring mistake)");
        };
        if t.kind != TlpKind::MemRead {
            return;
        }
        match self.smmu.translate(t.addr, ctx.now()) {
            Ok(a) => {
                let entry = encode_translation(&a.translation);
                let cpl =
                    Tlp::completion(t.tag, 0, TRANSLATION_BYTES, entry.to_le_bytes().to_vec());
                ctx.schedule_local(a.done, 0, Msg::Tlp(Box::new(cpl)));
            }
            Err(e) => {
                self.fault = Some(format!("smmu: translation request for {:#x}: {e}", t.addr));
                ctx.stop();
            }
        }
    }
    fn on_local(&mut self, _token: u64, cpl: Msg, ctx: &mut Ctx<'_, Msg>) {
        ctx.send(IO, cpl, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translations_survive_the_completion_encoding() {
        for (name, size) in PageSize::ALL {
            let t = Translation {
                va: 0x7F40_0000_0000 & !(size.bytes() - 1),
                pa: 0x8_C000_0000 & !(size.bytes() - 1),
                size,
            };
            let e = encode_translation(&t);
            assert_eq!(e & SIZE_BIT != 0, size != PageSize::K4, "{name}");
            assert_eq!(decode_translation(t.va + 5, e).unwrap(), t, "{name}");
        }
        // 2 MiB: ones at bits 12..19, the 0 at bit 20 (PCIe 6.0 Table 10-2).
        let t = Translation {
            va: 0,
            pa: 0x4000_0000,
            size: PageSize::M2,
        };
        assert_eq!(
            encode_translation(&t),
            0x4000_0000 | 0xF_F000 | 0x800 | 0b11
        );
    }
}
