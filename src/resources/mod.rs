//! What an engine may spend, in one place: the answer to "may this engine spend more".
//!
//! Two kinds of bound, kept apart because they promise different things:
//!
//! - [`meter`]: deterministic work limits of one piece of analysis (steps, tokens, bytes,
//!   items, levels). Running out changes the result (`unanalyzed` or `unresolved` at the
//!   place), identically on every machine, so it may be cached.
//! - [`budget`]: a memory account shared by concurrent jobs (download bodies, the analyses in
//!   flight). Running out only makes a job wait; it never changes what the job computes.
//!
//! [`parallel_map`] is the plain parallel map every pipeline uses (the analysis has its own,
//! on large-stack threads, in `surface::guard`).
//!
//! Architecture invariant: nothing here is bounded by time, and nothing here imports another
//! velaris module.

pub mod budget;
pub mod meter;

use std::sync::atomic::{AtomicUsize, Ordering};

/// Map `f` over `items` on up to `jobs` threads, keeping the order.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    let workers = jobs.min(items.len()).max(1);
    let done: Vec<Vec<(usize, R)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= items.len() {
                            break out;
                        }
                        out.push((i, f(&items[i])));
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("worker panicked")).collect()
    });
    for (i, r) in done.into_iter().flatten() {
        slots[i] = Some(r);
    }
    slots.into_iter().map(|r| r.expect("every item mapped")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn parallel_map_keeps_the_order() {
        let items: Vec<u32> = (0..100).collect();
        assert_eq!(super::parallel_map(&items, 3, |x| x * 2), (0..100).map(|x| x * 2).collect::<Vec<_>>());
        assert!(super::parallel_map(&[] as &[u32], 3, |x| *x).is_empty());
    }
}
