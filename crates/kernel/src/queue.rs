//! The event queue: a binary heap ordered by `(tick, priority, sequence)`.
//!
//! The sequence number is the insertion order, so two events at the same tick
//! and priority pop in the order they were scheduled. That makes every run
//! with the same inputs pop the same events in the same order, which is the
//! determinism contract of the kernel.
//!
//! The heap orders small keys and the events wait in a slab beside it: a
//! pop moves 24-byte keys down the tree, never the (possibly large) events.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::Tick;

/// Why events at the same tick are ordered the way they are. Lower runs first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Priority {
    /// Credit returns run first: a receive buffer freed at tick `t` may be
    /// reused by a sender at the same tick, as in hardware credit loops.
    /// Running them after deliveries would add an order-dependent extra cycle.
    Credit = 0,
    /// Message deliveries. Components that give responses precedence over
    /// requests (the DC's rule) do so in their own schedulers, not here.
    Deliver = 1,
    /// Self-scheduled wake-ups run after the deliveries of the same tick, so
    /// a clocked unit waking at an edge sees every message that arrived at it.
    Wake = 2,
    /// Observation (sampling, watchdogs, end-of-run hooks) runs last, on a
    /// settled state.
    Observe = 3,
}

/// Bits of the order word holding the insertion sequence; 2^56 events is
/// beyond any run length we care about.
const SEQ_BITS: u32 = 56;

/// The order word of an event of `priority` with sequence number `seq`.
#[inline]
pub fn order_word(priority: Priority, seq: u64) -> u64 {
    ((priority as u64) << SEQ_BITS) | seq
}

/// What the heap orders: the tick, then `priority << 56 | seq`, and where
/// the event itself waits. Entries are small and `Copy`, so sifting moves 24
/// bytes per level whatever the size of the event type (a message with a
/// payload would otherwise be copied at every level of every push and pop).
#[derive(Clone, Copy)]
struct Key {
    tick: Tick,
    order: u64,
    slot: u32,
}

impl Key {
    /// `(tick, order)` as one number, for a single comparison.
    #[inline]
    fn rank(&self) -> u128 {
        ((self.tick as u128) << 64) | self.order as u128
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.rank() == other.rank()
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    // Reversed so that std's max-heap pops the smallest key first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.rank().cmp(&self.rank())
    }
}

/// A priority queue of events of type `E`.
///
/// A binary heap of [`Key`]s; the events sit in a slab (`slots`) whose
/// free entries are recycled, so a run allocates only while its number of
/// pending events grows.
pub struct EventQueue<E> {
    heap: BinaryHeap<Key>,
    slots: Vec<Option<E>>,
    free: Vec<u32>,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            slots: Vec::with_capacity(1024),
            free: Vec::with_capacity(1024),
            next_seq: 0,
        }
    }
    /// Schedules `event` at `tick` with `priority`.
    #[inline]
    pub fn push(&mut self, tick: Tick, priority: Priority, event: E) {
        let seq = self.reserve();
        self.push_reserved(tick, priority, seq, event);
    }
    /// Takes the next insertion sequence number without scheduling anything.
    ///
    /// With [`EventQueue::push_reserved`] this lets a caller decide *later*
    /// whether an event is needed at all and, if it is, queue it exactly
    /// where a `push` made now would have put it: same tick, same priority,
    /// same place among the events of that tick. A reserved number that is
    /// never used leaves a gap, which changes no order.
    #[inline]
    pub fn reserve(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        debug_assert!(seq < 1 << SEQ_BITS);
        seq
    }
    /// Schedules `event` with a sequence number from [`EventQueue::reserve`].
    #[inline]
    pub fn push_reserved(&mut self, tick: Tick, priority: Priority, seq: u64, event: E) {
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(event);
                s
            }
            None => {
                self.slots.push(Some(event));
                (self.slots.len() - 1) as u32
            }
        };
        let key = Key {
            tick,
            order: order_word(priority, seq),
            slot,
        };
        self.heap.push(key);
    }
    /// Removes and returns the earliest event with its tick.
    #[inline]
    pub fn pop(&mut self) -> Option<(Tick, E)> {
        self.pop_ordered().map(|(t, _, e)| (t, e))
    }
    /// Like [`EventQueue::pop`], also returning the event's order word
    /// (`priority << 56 | seq`): `(tick, order)` is its place in the run.
    #[inline]
    pub fn pop_ordered(&mut self) -> Option<(Tick, u64, E)> {
        let top = self.heap.pop()?;
        let event = self.slots[top.slot as usize].take().expect("queued slot");
        self.free.push(top.slot);
        Some((top.tick, top.order, event))
    }
    /// The tick of the earliest event.
    #[inline]
    pub fn peek_tick(&self) -> Option<Tick> {
        self.heap.peek().map(|k| k.tick)
    }
    /// The place `(tick, order word)` of the earliest event.
    #[inline]
    pub fn peek_place(&self) -> Option<(Tick, u64)> {
        self.heap.peek().map(|k| (k.tick, k.order))
    }
    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_tick_then_priority_then_insertion() {
        let mut q = EventQueue::new();
        q.push(10, Priority::Wake, "wake@10");
        q.push(10, Priority::Deliver, "deliver@10 first");
        q.push(5, Priority::Observe, "observe@5");
        q.push(10, Priority::Deliver, "deliver@10 second");
        q.push(10, Priority::Credit, "credit@10");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, "observe@5"),
                (10, "credit@10"),
                (10, "deliver@10 first"),
                (10, "deliver@10 second"),
                (10, "wake@10"),
            ]
        );
    }

    #[test]
    fn matches_a_sorted_order_under_interleaved_pushes_and_pops() {
        // A deterministic mix of pushes and pops against a reference that
        // sorts by (tick, priority, insertion).
        let mut q = EventQueue::new();
        let mut reference: Vec<(Tick, u8, u64)> = Vec::new();
        let mut x: u64 = 1;
        let mut seq = 0;
        for step in 0..5000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if x >> 62 != 0 || reference.is_empty() {
                let tick = (x >> 20) % 50 + step / 10;
                let prio =
                    [Priority::Credit, Priority::Deliver, Priority::Wake][(x >> 8) as usize % 3];
                q.push(tick, prio, seq);
                reference.push((tick, prio as u8, seq));
                seq += 1;
            } else {
                reference.sort_unstable();
                let (t, _, s) = reference.remove(0);
                assert_eq!(q.pop(), Some((t, s)));
            }
            assert_eq!(q.len(), reference.len());
        }
        reference.sort_unstable();
        for (t, _, s) in reference {
            assert_eq!(q.pop(), Some((t, s)));
        }
        assert!(q.is_empty());
    }
}
