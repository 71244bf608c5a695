//! One cache line of real data: the buffer type every coherent agent and
//! data message uses, the pattern a line holds before anyone writes it, and
//! a pool of payload buffers so that data messages do not allocate.

/// Bytes in a cache line (ThunderX-1 LLC, CCKit §4).
pub const LINE_BYTES: usize = 128;

/// One cache line of real data.
pub type Line = [u8; LINE_BYTES];

/// What a line holds before anyone writes it: a deterministic pattern of its
/// index, so a misrouted line shows.
///
/// The line is 16 little-endian words; word `j` is `z ^ (z >> 31)` with
/// `z = line * K1 + (j + 1) * K2` (wrapping). A word at a time, because an
/// unwritten line is read on every DC data response: this is on the hot
/// path.
// Out of line: inlined into the DC's handler it compiled to a scalar loop
// several times slower than this function on its own.
#[inline]
pub fn initial_line(line: u64) -> Line {
    let mut l = [0u8; LINE_BYTES];
    initial_line_into(line, &mut l);
    l
}

/// Writes [`initial_line`]`(line)` into `dst` (a payload buffer, say,
/// without a copy through the stack).
#[inline(never)]
pub fn initial_line_into(line: u64, dst: &mut Line) {
    let base = line.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for (j, word) in dst.chunks_exact_mut(8).enumerate() {
        let z = base.wrapping_add((j as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
        word.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
}

/// Most spare line buffers kept for reuse per thread (128 KiB): more than
/// the data messages a system has in flight at once.
const SPARE_LINES_MAX: usize = 1024;

thread_local! {
    /// Buffers of data messages that were consumed, reused by
    /// [`boxed_line`]: a data message then costs no allocation. A cache of
    /// memory only; nothing simulated depends on it. (Boxes, not lines:
    /// the point is to keep the allocations themselves.)
    #[allow(clippy::vec_box)]
    static SPARE_LINES: std::cell::RefCell<Vec<Box<Line>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `data` in a heap buffer for a message's payload ([`CohMsg::data`](crate::CohMsg::data)),
/// reusing a buffer returned by [`recycle_line`] when there is one.
#[inline]
pub fn boxed_line(data: Line) -> Box<Line> {
    match SPARE_LINES.with(|s| s.borrow_mut().pop()) {
        Some(mut b) => {
            *b = data;
            b
        }
        None => Box::new(data),
    }
}

/// A payload buffer like [`boxed_line`]'s, filled in place by `fill`
/// (which writes every byte): a line made where it goes, not copied there.
#[inline]
pub fn boxed_line_with(fill: impl FnOnce(&mut Line)) -> Box<Line> {
    let mut b = SPARE_LINES
        .with(|s| s.borrow_mut().pop())
        .unwrap_or_else(|| Box::new([0; LINE_BYTES]));
    fill(&mut b);
    b
}

/// Returns a consumed payload's buffer for [`boxed_line`] to reuse (dropping
/// it instead is correct, only slower). Receivers that are done with a data
/// message's line call this.
#[inline]
pub fn recycle_line(b: Box<Line>) {
    SPARE_LINES.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < SPARE_LINES_MAX {
            s.push(b);
        }
    });
}

/// A line's bytes as the invariants compare and print them (the first
/// eight bytes in hex).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LineText<'a>(pub &'a [u8]);

impl std::fmt::Display for LineText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in self.0.iter().take(8) {
            write!(f, "{b:02x}")?;
        }
        write!(f, "..")
    }
}

/// A line index as messages name it (`0x3`), formatted only when shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HexLine(pub u64);

impl std::fmt::Display for HexLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_line_is_the_documented_pattern() {
        for line in (0..2000u64).chain([u64::MAX, 1 << 40, 0xDEAD_BEEF]) {
            let mut want = [0u8; LINE_BYTES];
            for (i, b) in want.iter_mut().enumerate() {
                let (j, k) = (i as u64 / 8, i % 8);
                let z = line
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .wrapping_add((j + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
                *b = (z ^ (z >> 31)).to_le_bytes()[k];
            }
            assert_eq!(initial_line(line), want, "line {line}");
            assert_ne!(initial_line(line), initial_line(line.wrapping_add(1)));
        }
    }
}
