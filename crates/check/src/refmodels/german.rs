//! German's cache coherence protocol, in the variant of Cubicle's
//! `examples/murphi/german_baukus.m` (after Baukus, Lakhnech and Stahl),
//! re-implemented in Rust from the Murphi original's semantics.
//!
//! One home and `n` clients. Each client has a cache line (Invalid, Shared or
//! Exclusive) and three one-place channels: `chan1` carries requests to the
//! home (`ReqS`, `ReqE`), `chan2` carries the home's grants and
//! invalidations (`GntS`, `GntE`, `Inv`), `chan3` carries `InvAck`. The home
//! keeps the set of clients to invalidate (`invset`), the set of clients with
//! a copy (`shrset`), whether an exclusive copy was granted (`exgntd`), and
//! the request being served (`curcmd` from `curclient`).
//!
//! Semantics kept from the original, since they change the state count:
//! - there are `n` initial states, one per value of `curclient` (the
//!   startstate is a `ruleset h : PROC`);
//! - every rule is a `ruleset i : PROC`, so each has `n` instances;
//! - all variables are assigned in the startstate (no undefined values);
//! - `PROC` is a scalarset, but the counts are without symmetry reduction
//!   (rumur `--symmetry-reduction off`), so client identities are kept.
//!
//! Encoding: the whole state is one `u64`. Per client, 7 bits at `7 * i`:
//! cache (2), chan1 (2), chan2 (2), chan3 (1); then the `invset` mask (6 bits
//! at 42), the `shrset` mask (6 bits at 48), `exgntd` (bit 54), `curcmd`
//! (2 bits at 55), `curclient` (3 bits at 57) and `n` itself (3 bits at 60,
//! only so that `Debug` can print the state). Each channel stores only the
//! message kinds the original ever assigns to it, so `n` is at most 6.

use std::fmt;

use crate::model::{ChartStep, Invariant, Model};

/// Largest number of clients the packed encoding holds.
pub const MAX_CLIENTS: usize = 6;

const CLIENT_BITS: u32 = 7;
const INVSET_SHIFT: u32 = 42;
const SHRSET_SHIFT: u32 = 48;
const EXGNTD_BIT: u32 = 54;
const CURCMD_SHIFT: u32 = 55;
const CURCLIENT_SHIFT: u32 = 57;
const N_SHIFT: u32 = 60;

// Field offsets inside a client's 7 bits.
const CACHE: u32 = 0;
const CHAN1: u32 = 2;
const CHAN2: u32 = 4;
const CHAN3: u32 = 6;

/// Cache line states (`STATE` in the original).
pub const INVALID: u64 = 0;
/// Shared copy.
pub const SHARED: u64 = 1;
/// Exclusive copy.
pub const EXCLUSIVE: u64 = 2;

// chan1 and curcmd values.
const EMPTY: u64 = 0;
const REQS: u64 = 1;
const REQE: u64 = 2;
// chan2 values.
const INV: u64 = 1;
const GNTS: u64 = 2;
const GNTE: u64 = 3;
// chan3 value.
const INVACK: u64 = 1;

/// A state of German's protocol, packed into one `u64` (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct GermanState(u64);

impl GermanState {
    #[inline]
    fn field(self, i: usize, off: u32, width: u32) -> u64 {
        (self.0 >> (i as u32 * CLIENT_BITS + off)) & ((1 << width) - 1)
    }
    #[inline]
    fn set_field(&mut self, i: usize, off: u32, width: u32, v: u64) {
        let shift = i as u32 * CLIENT_BITS + off;
        let mask = ((1u64 << width) - 1) << shift;
        self.0 = (self.0 & !mask) | (v << shift);
    }
    /// Number of clients.
    pub fn n(self) -> usize {
        ((self.0 >> N_SHIFT) & 7) as usize
    }
    /// Client `i`'s cache state ([`INVALID`], [`SHARED`] or [`EXCLUSIVE`]).
    #[inline]
    pub fn cache(self, i: usize) -> u64 {
        self.field(i, CACHE, 2)
    }
    #[inline]
    fn chan1(self, i: usize) -> u64 {
        self.field(i, CHAN1, 2)
    }
    #[inline]
    fn chan2(self, i: usize) -> u64 {
        self.field(i, CHAN2, 2)
    }
    #[inline]
    fn chan3(self, i: usize) -> u64 {
        self.field(i, CHAN3, 1)
    }
    #[inline]
    fn invset(self, i: usize) -> bool {
        (self.0 >> (INVSET_SHIFT + i as u32)) & 1 == 1
    }
    #[inline]
    fn shrset(self, i: usize) -> bool {
        (self.0 >> (SHRSET_SHIFT + i as u32)) & 1 == 1
    }
    #[inline]
    fn shrset_mask(self) -> u64 {
        (self.0 >> SHRSET_SHIFT) & 0x3f
    }
    #[inline]
    fn exgntd(self) -> bool {
        (self.0 >> EXGNTD_BIT) & 1 == 1
    }
    #[inline]
    fn curcmd(self) -> u64 {
        (self.0 >> CURCMD_SHIFT) & 3
    }
    #[inline]
    fn curclient(self) -> usize {
        ((self.0 >> CURCLIENT_SHIFT) & 7) as usize
    }
    #[inline]
    fn set_bit(&mut self, bit: u32, v: bool) {
        self.0 = (self.0 & !(1 << bit)) | ((v as u64) << bit);
    }
    #[inline]
    fn set_curcmd(&mut self, v: u64) {
        self.0 = (self.0 & !(3 << CURCMD_SHIFT)) | (v << CURCMD_SHIFT);
    }
    #[inline]
    fn set_curclient(&mut self, i: usize) {
        self.0 = (self.0 & !(7 << CURCLIENT_SHIFT)) | ((i as u64) << CURCLIENT_SHIFT);
    }
    /// `for j : PROC do Invset[j] := Shrset[j] end`
    #[inline]
    fn copy_shrset_to_invset(&mut self) {
        let shr = self.shrset_mask();
        self.0 = (self.0 & !(0x3f << INVSET_SHIFT)) | (shr << INVSET_SHIFT);
    }
}

impl fmt::Debug for GermanState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = *self;
        let n = s.n();
        let list = |g: &dyn Fn(usize) -> &'static str| (0..n).map(g).collect::<Vec<_>>().join(",");
        let cache = list(&|i| ["I", "S", "E", "?"][s.cache(i) as usize]);
        let chan1 = list(&|i| ["Empty", "ReqS", "ReqE", "?"][s.chan1(i) as usize]);
        let chan2 = list(&|i| ["Empty", "Inv", "GntS", "GntE"][s.chan2(i) as usize]);
        let chan3 = list(&|i| ["Empty", "InvAck"][s.chan3(i) as usize]);
        let inv = list(&|i| if s.invset(i) { "T" } else { "F" });
        let shr = list(&|i| if s.shrset(i) { "T" } else { "F" });
        write!(
            f,
            "Cache=[{cache}] Chan1=[{chan1}] Chan2=[{chan2}] Chan3=[{chan3}] Invset=[{inv}] \
             Shrset=[{shr}] Exgntd={} Curcmd={} CurClient={}",
            if s.exgntd() { "T" } else { "F" },
            ["Empty", "ReqS", "ReqE", "?"][s.curcmd() as usize],
            s.curclient()
        )
    }
}

/// The rules of the original, in its order (names as in the `.m` file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GermanRule {
    /// `send_req_shared`
    SendReqShared,
    /// `send_req_exclusive`
    SendReqExclusive,
    /// `recv_req_shqred` (sic)
    RecvReqShared,
    /// `recv_req_exclusive`
    RecvReqExclusive,
    /// `send_inv`
    SendInv,
    /// `send_invack`
    SendInvAck,
    /// `recv_invack`
    RecvInvAck,
    /// `send_gnt_shared`
    SendGntShared,
    /// `send_gnt_exclusive`
    SendGntExclusive,
    /// `Recv_Gnt_Shared`
    RecvGntShared,
    /// `Recv_Gnt_Exclusive`
    RecvGntExclusive,
}

impl GermanRule {
    /// All rules, in the original's order.
    pub const ALL: [GermanRule; 11] = [
        GermanRule::SendReqShared,
        GermanRule::SendReqExclusive,
        GermanRule::RecvReqShared,
        GermanRule::RecvReqExclusive,
        GermanRule::SendInv,
        GermanRule::SendInvAck,
        GermanRule::RecvInvAck,
        GermanRule::SendGntShared,
        GermanRule::SendGntExclusive,
        GermanRule::RecvGntShared,
        GermanRule::RecvGntExclusive,
    ];

    /// The rule's name in the Murphi original.
    pub fn murphi_name(self) -> &'static str {
        match self {
            GermanRule::SendReqShared => "send_req_shared",
            GermanRule::SendReqExclusive => "send_req_exclusive",
            GermanRule::RecvReqShared => "recv_req_shqred",
            GermanRule::RecvReqExclusive => "recv_req_exclusive",
            GermanRule::SendInv => "send_inv",
            GermanRule::SendInvAck => "send_invack",
            GermanRule::RecvInvAck => "recv_invack",
            GermanRule::SendGntShared => "send_gnt_shared",
            GermanRule::SendGntExclusive => "send_gnt_exclusive",
            GermanRule::RecvGntShared => "Recv_Gnt_Shared",
            GermanRule::RecvGntExclusive => "Recv_Gnt_Exclusive",
        }
    }
}

/// A rule instance: the rule and its `ruleset i : PROC` parameter.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct GermanAction {
    /// The rule.
    pub rule: GermanRule,
    /// The client parameter `i`.
    pub i: u8,
}

impl fmt::Debug for GermanAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.rule.murphi_name(), self.i)
    }
}

/// German's protocol with `n` clients (see the module docs).
#[derive(Clone, Debug)]
pub struct German {
    n: usize,
    buggy: bool,
}

impl German {
    /// The protocol with `n` clients, `1 <= n <= MAX_CLIENTS`.
    ///
    /// # Panics
    /// If `n` is out of that range.
    pub fn new(n: usize) -> Self {
        assert!(
            (1..=MAX_CLIENTS).contains(&n),
            "German: n = {n} clients, must be 1..={MAX_CLIENTS}"
        );
        German { n, buggy: false }
    }

    /// A deliberately broken variant (a test fixture for counterexamples):
    /// `send_gnt_exclusive` no longer waits until no client holds a copy
    /// (its `forall j : PROC do Shrset[j] = false end` conjunct is dropped),
    /// so `CntrlProp` fails once one client is Shared and another gets
    /// Exclusive.
    pub fn buggy(n: usize) -> Self {
        German {
            buggy: true,
            ..German::new(n)
        }
    }

    /// Number of clients.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Whether the rule instance's guard holds in `s`.
    #[inline]
    pub fn guard(&self, s: GermanState, a: GermanAction) -> bool {
        let i = a.i as usize;
        match a.rule {
            GermanRule::SendReqShared => s.chan1(i) == EMPTY && s.cache(i) == INVALID,
            GermanRule::SendReqExclusive => {
                s.chan1(i) == EMPTY && (s.cache(i) == INVALID || s.cache(i) == SHARED)
            }
            GermanRule::RecvReqShared => s.curcmd() == EMPTY && s.chan1(i) == REQS,
            GermanRule::RecvReqExclusive => s.curcmd() == EMPTY && s.chan1(i) == REQE,
            GermanRule::SendInv => {
                s.chan2(i) == EMPTY
                    && s.invset(i)
                    && (s.curcmd() == REQE || (s.curcmd() == REQS && s.exgntd()))
            }
            GermanRule::SendInvAck => s.chan2(i) == INV && s.chan3(i) == EMPTY,
            GermanRule::RecvInvAck => s.chan3(i) == INVACK && s.curcmd() != EMPTY,
            GermanRule::SendGntShared => {
                s.curcmd() == REQS && s.curclient() == i && s.chan2(i) == EMPTY && !s.exgntd()
            }
            GermanRule::SendGntExclusive => {
                s.curcmd() == REQE
                    && s.curclient() == i
                    && s.chan2(i) == EMPTY
                    && !s.exgntd()
                    && (self.buggy || s.shrset_mask() == 0)
            }
            GermanRule::RecvGntShared => s.chan2(i) == GNTS,
            GermanRule::RecvGntExclusive => s.chan2(i) == GNTE,
        }
    }

    /// The rule instance's effect on `s` (its guard is not checked).
    #[inline]
    pub fn apply(&self, mut s: GermanState, a: GermanAction) -> GermanState {
        let i = a.i as usize;
        match a.rule {
            GermanRule::SendReqShared => s.set_field(i, CHAN1, 2, REQS),
            GermanRule::SendReqExclusive => s.set_field(i, CHAN1, 2, REQE),
            GermanRule::RecvReqShared | GermanRule::RecvReqExclusive => {
                let cmd = if a.rule == GermanRule::RecvReqShared {
                    REQS
                } else {
                    REQE
                };
                s.set_curcmd(cmd);
                s.set_curclient(i);
                s.set_field(i, CHAN1, 2, EMPTY);
                s.copy_shrset_to_invset();
            }
            GermanRule::SendInv => {
                s.set_field(i, CHAN2, 2, INV);
                s.set_bit(INVSET_SHIFT + i as u32, false);
            }
            GermanRule::SendInvAck => {
                s.set_field(i, CHAN2, 2, EMPTY);
                s.set_field(i, CHAN3, 1, INVACK);
                s.set_field(i, CACHE, 2, INVALID);
            }
            GermanRule::RecvInvAck => {
                s.set_field(i, CHAN3, 1, EMPTY);
                s.set_bit(SHRSET_SHIFT + i as u32, false);
                s.set_bit(EXGNTD_BIT, false);
            }
            GermanRule::SendGntShared => {
                s.set_field(i, CHAN2, 2, GNTS);
                s.set_bit(SHRSET_SHIFT + i as u32, true);
                s.set_curcmd(EMPTY);
            }
            GermanRule::SendGntExclusive => {
                s.set_field(i, CHAN2, 2, GNTE);
                s.set_bit(SHRSET_SHIFT + i as u32, true);
                s.set_bit(EXGNTD_BIT, true);
                s.set_curcmd(EMPTY);
            }
            GermanRule::RecvGntShared => {
                s.set_field(i, CACHE, 2, SHARED);
                s.set_field(i, CHAN2, 2, EMPTY);
            }
            GermanRule::RecvGntExclusive => {
                s.set_field(i, CACHE, 2, EXCLUSIVE);
                s.set_field(i, CHAN2, 2, EMPTY);
            }
        }
        s
    }

    fn cntrl_prop(&self, s: &GermanState) -> Result<(), String> {
        for i in 0..self.n {
            if s.cache(i) != EXCLUSIVE {
                continue;
            }
            for j in 0..self.n {
                if i != j && s.cache(j) != INVALID {
                    let name = ["Invalid", "Shared", "Exclusive", "?"][s.cache(j) as usize];
                    return Err(format!(
                        "client {i} is Exclusive while client {j} is {name}"
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Model for German {
    type State = GermanState;
    type Action = GermanAction;

    fn init_states(&self) -> Vec<GermanState> {
        // ruleset h : PROC do startstate: everything Empty/Invalid/false,
        // Curcmd := Empty, CurClient := h.
        (0..self.n)
            .map(|h| {
                let mut s = GermanState((self.n as u64) << N_SHIFT);
                s.set_curclient(h);
                s
            })
            .collect()
    }

    fn actions(&self, s: &GermanState, out: &mut Vec<GermanAction>) {
        for rule in GermanRule::ALL {
            for i in 0..self.n as u8 {
                let a = GermanAction { rule, i };
                if self.guard(*s, a) {
                    out.push(a);
                }
            }
        }
    }

    #[inline]
    fn next_state(&self, s: &GermanState, a: &GermanAction) -> Option<GermanState> {
        if self.guard(*s, *a) {
            Some(self.apply(*s, *a))
        } else {
            None
        }
    }

    fn invariants(&self) -> Vec<Invariant<Self>> {
        vec![Invariant {
            name: "CntrlProp",
            check: |m, s| m.cntrl_prop(s),
        }]
    }

    fn chart_step(&self, _s: &GermanState, a: &GermanAction) -> ChartStep {
        let c = format!("c{}", a.i);
        let home = "home".to_string();
        let (from, to, label) = match a.rule {
            GermanRule::SendReqShared => (c, home, "ReqS".to_string()),
            GermanRule::SendReqExclusive => (c, home, "ReqE".to_string()),
            GermanRule::RecvReqShared => (home.clone(), home, format!("serve ReqS of {c}")),
            GermanRule::RecvReqExclusive => (home.clone(), home, format!("serve ReqE of {c}")),
            GermanRule::SendInv => (home, c, "Inv".to_string()),
            GermanRule::SendInvAck => (c, home, "InvAck (now Invalid)".to_string()),
            GermanRule::RecvInvAck => (home.clone(), home, format!("recv InvAck of {c}")),
            GermanRule::SendGntShared => (home, c, "GntS".to_string()),
            GermanRule::SendGntExclusive => (home, c, "GntE".to_string()),
            GermanRule::RecvGntShared => (c.clone(), c, "recv GntS: Shared".to_string()),
            GermanRule::RecvGntExclusive => (c.clone(), c, "recv GntE: Exclusive".to_string()),
        };
        ChartStep { from, to, label }
    }

    fn agents(&self) -> Vec<String> {
        std::iter::once("home".to_string())
            .chain((0..self.n).map(|i| format!("c{i}")))
            .collect()
    }
}
