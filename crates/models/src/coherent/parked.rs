//! Items parked until a wake-up that names them by slot.
//!
//! A component's own pipeline whose items are not messages (a core's
//! completions) cannot ride in the kernel event as a local message
//! (`Ctx::schedule_local` carries the system's message type), so each item
//! waits here and its wake-up carries the slot: stored once, found in one
//! step, with no ordering work (the kernel orders the wake-ups).

/// A slab of items, each taken back once by its slot.
pub(crate) struct Parked<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Parked<T> {
    pub(crate) fn new() -> Self {
        Parked {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
    /// Parks `item`; returns its slot.
    #[inline]
    pub(crate) fn park(&mut self, item: T) -> u64 {
        match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(item);
                s as u64
            }
            None => {
                self.slots.push(Some(item));
                (self.slots.len() - 1) as u64
            }
        }
    }
    /// Takes back the item parked in `slot`.
    #[inline]
    pub(crate) fn take(&mut self, slot: u64) -> T {
        let item = self.slots[slot as usize]
            .take()
            .expect("an item parked in this slot");
        self.free.push(slot as u32);
        item
    }
}

#[cfg(test)]
mod tests {
    use super::Parked;

    #[test]
    fn slots_are_reused_and_items_come_back() {
        let mut p = Parked::new();
        let a = p.park("a");
        let b = p.park("b");
        assert_eq!(p.take(a), "a");
        let c = p.park("c");
        assert_eq!(c, a, "a freed slot is reused");
        assert_eq!(p.take(b), "b");
        assert_eq!(p.take(c), "c");
        assert!(p.slots.iter().all(Option::is_none));
    }
}
