//! Simulated time: one tick is one picosecond, and clock domains convert
//! cycles to ticks.
//!
//! Picoseconds let a 322 MHz FPGA clock (3105.59 ps), a 2 GHz core (500 ps)
//! and a 16 GT/s PCIe lane share one integer timeline without drift: `u64`
//! picoseconds cover 213 days of simulated time.
//!
//! ```
//! use ccsim_kernel::time::{Clock, NS};
//! let fpga = Clock::from_mhz(400.0);
//! assert_eq!(fpga.period(), 2_500);
//! assert_eq!(fpga.cycles(4), 10 * NS);
//! assert_eq!(fpga.next_edge(2_501), 5_000);
//! ```

/// Simulated time in picoseconds.
pub type Tick = u64;

/// One picosecond.
pub const PS: Tick = 1;
/// One nanosecond.
pub const NS: Tick = 1_000;
/// One microsecond.
pub const US: Tick = 1_000_000;
/// One millisecond.
pub const MS: Tick = 1_000_000_000;
/// One second.
pub const SEC: Tick = 1_000_000_000_000;

/// Converts nanoseconds (possibly fractional) to ticks, rounding to the
/// nearest picosecond.
pub fn ns(value: f64) -> Tick {
    (value * NS as f64).round() as Tick
}

/// Converts ticks to nanoseconds.
pub fn to_ns(t: Tick) -> f64 {
    t as f64 / NS as f64
}

/// A clock domain: a period in ticks, with edges at multiples of the period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    period: Tick,
}

impl Clock {
    /// A clock of `mhz` megahertz; the period is rounded to whole picoseconds.
    pub fn from_mhz(mhz: f64) -> Self {
        assert!(mhz > 0.0, "clock frequency must be positive, got {mhz} MHz");
        Self::from_period((1e6 / mhz).round() as Tick)
    }
    /// A clock with the given period in ticks.
    pub fn from_period(period: Tick) -> Self {
        assert!(period > 0, "clock period must be positive");
        Clock { period }
    }
    /// The period in ticks.
    pub fn period(&self) -> Tick {
        self.period
    }
    /// The frequency in MHz.
    pub fn mhz(&self) -> f64 {
        1e6 / self.period as f64
    }
    /// The duration of `n` cycles.
    pub fn cycles(&self, n: u64) -> Tick {
        n * self.period
    }
    /// The first clock edge at or after `t`.
    pub fn next_edge(&self, t: Tick) -> Tick {
        t.div_ceil(self.period) * self.period
    }
    /// Whole cycles elapsed at `t` (rounded down).
    pub fn cycle_at(&self, t: Tick) -> u64 {
        t / self.period
    }
}
