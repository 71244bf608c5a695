//! The event queue: a binary heap ordered by `(tick, priority, sequence)`.
//!
//! The sequence number is the insertion order, so two events at the same tick
//! and priority pop in the order they were scheduled. That makes every run
//! with the same inputs pop the same events in the same order, which is the
//! determinism contract of the kernel.

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

/// Bits of the key holding the insertion sequence; 2^56 events is beyond any
/// run length we care about.
const SEQ_BITS: u32 = 56;

struct Entry<E> {
    key: u128,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed so that std's max-heap pops the smallest key first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// A priority queue of events of type `E`.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
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
            next_seq: 0,
        }
    }
    /// Schedules `event` at `tick` with `priority`.
    #[inline]
    pub fn push(&mut self, tick: Tick, priority: Priority, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        debug_assert!(seq < 1 << SEQ_BITS);
        let key = ((tick as u128) << 64) | ((priority as u128) << SEQ_BITS) | seq as u128;
        self.heap.push(Entry { key, event });
    }
    /// Removes and returns the earliest event with its tick.
    #[inline]
    pub fn pop(&mut self) -> Option<(Tick, E)> {
        self.heap.pop().map(|e| ((e.key >> 64) as Tick, e.event))
    }
    /// The tick of the earliest event.
    pub fn peek_tick(&self) -> Option<Tick> {
        self.heap.peek().map(|e| (e.key >> 64) as Tick)
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
}
