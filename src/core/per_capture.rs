//! Lists kept per GPU while a CUDA graph of it is being captured: the storage a capture must
//! not free (`core::storage::capture_keep`) and the host counters its replays advance
//! (`device::graph::replay_counter`). Begun and ended by `device::graph::capture`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Per capturing GPU ordinal, the items added during its capture.
pub(crate) struct PerCapture<T> {
    /// Captures in progress (any GPU): callers only lock when one is.
    active: AtomicUsize,
    lists: Mutex<Vec<(usize, Vec<T>)>>,
}

impl<T> PerCapture<T> {
    pub(crate) const fn new() -> Self {
        PerCapture {
            active: AtomicUsize::new(0),
            lists: Mutex::new(Vec::new()),
        }
    }

    fn lists(&self) -> std::sync::MutexGuard<'_, Vec<(usize, Vec<T>)>> {
        // A panic while the lock was held leaves whole lists: nothing to repair.
        self.lists.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts GPU `ordinal`'s list.
    pub(crate) fn begin(&self, ordinal: usize) {
        self.lists().push((ordinal, Vec::new()));
        self.active.fetch_add(1, Ordering::SeqCst);
    }

    /// Ends GPU `ordinal`'s list and returns it (empty when none was begun).
    pub(crate) fn end(&self, ordinal: usize) -> Vec<T> {
        let mut lists = self.lists();
        let Some(i) = lists.iter().position(|(o, _)| *o == ordinal) else {
            return Vec::new();
        };
        self.active.fetch_sub(1, Ordering::SeqCst);
        lists.swap_remove(i).1
    }

    /// True while some GPU's capture is in progress (one atomic load, no lock).
    #[inline]
    pub(crate) fn any_active(&self) -> bool {
        self.active.load(Ordering::SeqCst) != 0
    }

    /// The first item of GPU `ordinal`'s list, when that GPU is capturing and has one.
    pub(crate) fn first(&self, ordinal: usize) -> Option<T>
    where
        T: Clone,
    {
        let lists = self.lists();
        let (_, list) = lists.iter().find(|(o, _)| *o == ordinal)?;
        list.first().cloned()
    }

    /// Adds `item` to GPU `ordinal`'s list, or gives it back when that GPU is not capturing.
    pub(crate) fn push(&self, ordinal: usize, item: T) -> Option<T> {
        if !self.any_active() {
            return Some(item);
        }
        match self.lists().iter_mut().find(|(o, _)| *o == ordinal) {
            Some((_, list)) => {
                list.push(item);
                None
            }
            None => Some(item),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PerCapture;

    /// Items reach the list of their GPU's capture only, and come back when it is not
    /// capturing; a list ends once.
    #[test]
    fn lists_follow_their_capture() {
        let r = PerCapture::<u32>::new();
        assert_eq!(r.push(0, 1), Some(1));
        assert!(!r.any_active());
        r.begin(0);
        assert!(r.any_active());
        assert_eq!(r.first(0), None);
        assert_eq!(r.push(0, 2), None);
        assert_eq!(r.push(1, 3), Some(3));
        assert_eq!(r.first(1), None);
        r.begin(1);
        assert_eq!(r.push(1, 4), None);
        assert_eq!(r.push(0, 6), None);
        assert_eq!((r.first(0), r.first(1)), (Some(2), Some(4)));
        assert_eq!(r.end(0), vec![2, 6]);
        assert_eq!(r.first(0), None);
        assert!(r.any_active());
        assert_eq!(r.end(0), Vec::<u32>::new());
        assert_eq!(r.end(1), vec![4]);
        assert!(!r.any_active());
        assert_eq!(r.push(1, 5), Some(5));
    }
}
