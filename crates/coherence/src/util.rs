//! Small helpers shared by the models: a time-ordered queue of deferred
//! sends and parameter reading with clear errors.

use std::collections::BTreeMap;

use ccsim_kernel::component::{ComponentSpec, ParamValue, Params, Peers};
use ccsim_kernel::sim::{Ctx, PortId};
use ccsim_kernel::time::Tick;

use crate::envelope::{onchip_bytes, Msg};

/// Messages to send at later ticks. Each push schedules one wake-up with the
/// line's token; each wake-up sends the earliest due message. Ties keep push
/// order, so a constant-latency pipeline stays FIFO.
#[derive(Debug, Default)]
pub struct DelayLine {
    token: u64,
    seq: u64,
    queue: BTreeMap<(Tick, u64), (PortId, Msg)>,
}

impl DelayLine {
    /// A delay line that wakes its owner with `token`.
    pub fn new(token: u64) -> Self {
        DelayLine {
            token,
            seq: 0,
            queue: BTreeMap::new(),
        }
    }
    /// Sends `msg` on `port` at tick `at`.
    pub fn push(&mut self, ctx: &mut Ctx<'_, Msg>, at: Tick, port: PortId, msg: Msg) {
        self.queue.insert((at, self.seq), (port, msg));
        self.seq += 1;
        ctx.wake_at(at, self.token);
    }
    /// Handles one wake-up with this line's token: sends the earliest message.
    pub fn fire(&mut self, ctx: &mut Ctx<'_, Msg>) {
        if let Some(((t, _), (port, msg))) = self.queue.pop_first() {
            debug_assert!(t <= ctx.now());
            let bytes = onchip_bytes(&msg);
            ctx.send(port, msg, bytes, 0);
        }
    }
    /// Whether this wake-up token belongs to the line.
    pub fn owns(&self, token: u64) -> bool {
        token == self.token
    }
    /// Messages not yet sent.
    pub fn len(&self) -> usize {
        self.queue.len()
    }
    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// `params` completed with the defaults of `spec` and checked against its
/// declaration: every parameter declared and of its kind, in its range, and
/// the spec's check hook (without peers). The config crate applies the same
/// rules when it loads a platform, so this cannot fail for a loaded
/// platform's parameters; it guards hand-built ones.
pub fn complete(spec: &ComponentSpec, params: &Params) -> Result<Params, String> {
    let mut p = params.clone();
    let missing = p.fill_defaults(spec);
    if !missing.is_empty() {
        return Err(format!(
            "{}: missing required parameter(s): {}",
            spec.type_name,
            missing.join(", ")
        ));
    }
    for (name, (value, _)) in p.iter() {
        let Some(decl) = spec.param(name) else {
            return Err(format!("{}: unknown parameter `{name}`", spec.type_name));
        };
        use ccsim_kernel::component::ParamKind as K;
        let ok = matches!(
            (decl.kind, value),
            (K::Int, ParamValue::Int(_))
                | (K::Float, ParamValue::Float(_) | ParamValue::Int(_))
                | (K::Bool, ParamValue::Bool(_))
                | (K::Str | K::Enum(_), ParamValue::Str(_))
        );
        if !ok {
            return Err(format!(
                "{}.{name}: expected {}, got {value}",
                spec.type_name, decl.kind
            ));
        }
    }
    spec.validate(&p, Peers::NONE)
        .map_err(|e| format!("{}.{e}", spec.type_name))?;
    Ok(p)
}

/// `x % n`, without a division when `n` is a power of two (cache sets, TADs,
/// links and DCUs usually are; the models do this on every access).
#[inline]
pub fn modulo(x: u64, n: u64) -> u64 {
    if n.is_power_of_two() {
        x & (n - 1)
    } else {
        x % n
    }
}

/// `(x / n, x % n)`, without a division when `n` is a power of two (DDR
/// channels, banks and lines per row usually are; the memory model does
/// this on every access, and a division costs tens of cycles).
#[inline]
pub fn div_mod(x: u64, n: u64) -> (u64, u64) {
    if n.is_power_of_two() {
        (x >> n.trailing_zeros(), x & (n - 1))
    } else {
        (x / n, x % n)
    }
}

/// Nanoseconds as whole picoseconds.
pub fn ns_to_ps(ns: f64) -> Tick {
    (ns * 1000.0).round() as Tick
}

/// Picoseconds to transfer `bytes` at `gbps` GB/s (0 = infinite), rounded up.
pub fn transfer_ps(bytes: u64, gbps: f64) -> Tick {
    if gbps <= 0.0 || bytes == 0 {
        return 0;
    }
    (bytes as f64 * 1000.0 / gbps).ceil() as Tick
}
